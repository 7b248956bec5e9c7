"""The reset rule for cumulative counters (NVML energy, tokens, requests)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from telemetry.collector.wire import CounterBound

Count = TypeVar("Count", int, float)


def counter_restarted(previous: Count, current: Count, *, epoch_changed: bool) -> bool:
    """Whether the counter restarted from zero between two readings: its epoch changed, or it dropped."""
    return epoch_changed or current < previous


def counter_increase(previous: Count, current: Count, *, epoch_changed: bool) -> Count:
    """The increase of a cumulative counter between two readings, in the counter's unit.

    A counter that restarted (see :func:`counter_restarted`) counted up from
    zero, so its increase is the new reading itself; otherwise it is the
    difference. Never negative for non-negative readings.
    """
    if counter_restarted(previous, current, epoch_changed=epoch_changed):
        return current
    return current - previous


class CounterImpossible(ValueError):
    """A counter's increase between two samples that no hardware can produce (beyond its
    :class:`~telemetry.collector.wire.CounterBound`): the hour it falls in is parked, not summed."""

    def __init__(self, message: str, *, hours: Iterable[int] = ()) -> None:
        super().__init__(message)
        self.hours = frozenset(hours)  # the requested hours (Unix seconds) the interval adds to

    def owned(self, what: str) -> CounterImpossible:
        """The same error naming its owner (``"GPU 12"``), as the rollup reports it."""
        return CounterImpossible(f"{what}: {self}", hours=self.hours)


def increase_checked(
    increase: float, start_s: float, end_s: float, *, bound: CounterBound, name: str, hours: Iterable[int] = ()
) -> None:
    """Raise :class:`CounterImpossible` if ``increase`` (the reset rule's, of counter ``name``) between two
    samples at ``start_s`` and ``end_s`` is more than ``bound`` allows; ``hours``: those it adds to."""
    seconds = end_s - start_s
    if not bound.allows(increase, seconds):
        at = datetime.fromtimestamp(start_s, tz=UTC).isoformat()
        raise CounterImpossible(
            f"{name} counts {increase:g} in {seconds:g} s from {at}: more than {bound.per_s:g} a second "
            f"({bound.limit}) allows: at most {bound.most(seconds):g}",
            hours=hours,
        )


class _Sample(Protocol):
    @property
    def ts_s(self) -> float: ...

    @property
    def epoch(self) -> str: ...


Sample = TypeVar("Sample", bound=_Sample)


def counter_continues(before: float | None, after: float | None, *, epoch_changed: bool) -> bool:
    """Whether a counter read at both ends of a gap proves its increase across it: same epoch, not decreased."""
    return before is not None and after is not None and not epoch_changed and after >= before


def gaps_bridged(
    ordered: Sequence[Sample],
    *,
    max_gap_s: float,
    max_bridge_s: float,
    continues: Callable[[Sample, Sample], bool],
) -> Iterator[tuple[Sample, Sample]]:
    """The gaps (consecutive samples more than ``max_gap_s`` and at most ``max_bridge_s`` apart) that
    cumulative counters bridge: ``continues(before, after)`` says the counters carried on across it.

    ``ordered``: samples sorted by time, one per timestamp.
    """
    for before, after in itertools.pairwise(ordered):
        if max_gap_s < after.ts_s - before.ts_s <= max_bridge_s and continues(before, after):
            yield before, after
