"""Hourly usage of one GPU from its raw samples: energy, coverage, utilization.

The samples are cut into intervals between consecutive samples (sorted by
time, one per timestamp). An interval no longer than ``max_gap_s`` is
*observed*. A longer one is a gap; across it the NVML counter may still prove
the energy: when both ends carry it, in the same epoch, and it did not
decrease (and the gap is at most ``max_bridge_s``), the gap is *bridged*: its
whole increase is counted, spread over the gap in proportion to time, in
``energy_bridged_j`` and ``bridged_s`` (with the gap's length in
``bridged_gap_s``). Nothing else is known of a gap (utilization, temperature,
power integrated without a counter, a counter that restarted inside it): its
time is missing coverage (``GpuHourUsage.missing_s``). Every observed interval:

- its energy is the NVML counter's increase when both samples carry the
  counter, with the reset rule (an epoch change or a drop means the counter
  restarted from zero, so the new reading is the increase); otherwise, when
  both carry power, the trapezoid ``(p0 + p1) / 2 * dt``; otherwise unknown;
- its quantities (energy, busy time, the integrals behind the means) are
  spread evenly over its duration, so an interval that crosses an hour
  boundary is split between the hours in proportion to time (linear
  interpolation of the cumulative quantity).

Maxima (power, temperature, memory) are over the samples whose timestamp lies
in the hour. A restart is counted in the hour of the sample that shows it
(a gap's restart is not counted: the gap is missing, not observed).

Pure arithmetic: nothing here imports Django.
"""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from telemetry.collector.wire import ENERGY_BOUND, CounterBound
from telemetry.energy.counters import counter_continues, counter_increase, gaps_bridged, increase_checked
from telemetry.energy.hours import HOUR_S, hour_overlaps_s, hour_start_s_of, hours_validated, max_gap_checked
from telemetry.energy.points import nullable_key, points_ordered

_Reading = TypeVar("_Reading", int, float)

DEFAULT_GPU_MAX_GAP_S = 30.0  # 30 one-second samples missed in a row: no longer a sampling hiccup
# The longest gap a continuing counter bridges: a collector down for a day whose GPUs and
# driver stayed up. The rollup reads one sample beyond its window on each side up to this far.
DEFAULT_MAX_BRIDGE_S = 86_400.0


class EnergyMethod(StrEnum):
    """How an hour's energy was measured."""

    COUNTER = "counter"  # every energy-known second from the NVML counter (observed or bridged)
    INTEGRATED = "integrated"  # every energy-known second from integrated power
    MIXED = "mixed"  # some of each; GpuHourUsage.energy_counter_j says how much
    NONE = "none"  # no energy known in the hour


@dataclass(frozen=True, slots=True)
class GpuPoint:
    """One raw GPU sample. ``None`` means not measured, never zero.

    ``ts_s``: Unix seconds. ``epoch``: names one life of the energy counter
    (boot and driver load); a new epoch means the counter restarted.
    ``energy_j``: NVML's cumulative energy counter, joules.
    """

    ts_s: float
    epoch: str
    energy_j: float | None = None
    power_w: float | None = None
    util_pct: int | None = None
    mem_util_pct: int | None = None
    mem_used_bytes: int | None = None
    temp_c: int | None = None


def gpu_point_key(point: GpuPoint) -> tuple[Any, ...]:
    """The total order used to sort samples and pick one of several sharing a timestamp."""
    readings = (point.energy_j, point.power_w, point.util_pct, point.mem_util_pct, point.mem_used_bytes, point.temp_c)
    return (point.ts_s, point.epoch, *(nullable_key(value) for value in readings))


@dataclass(frozen=True, slots=True)
class GpuHourUsage:
    """One GPU's usage over the hour ``[hour_start_s, hour_start_s + 3600)``.

    ``energy_j`` (joules) = ``energy_counter_j`` + ``energy_integrated_j`` +
    ``energy_bridged_j`` (the counter's increase across gaps). ``observed_s``:
    seconds of the hour inside observed intervals; ``bridged_s``: inside gaps
    the counter bridged, the longest of which lasted ``bridged_gap_s``
    (0.0: none). ``energy_covered_s``: observed seconds with a known energy
    plus ``bridged_s``. ``busy_s``: seconds with
    utilization above the threshold. ``mean_power_w`` = energy over covered
    seconds. Means are time-weighted over the seconds where they were measured;
    ``None`` where nothing was. ``reset_count``: counter restarts seen.
    """

    hour_start_s: int
    energy_j: float
    energy_counter_j: float
    energy_integrated_j: float
    energy_method: EnergyMethod
    observed_s: float
    energy_covered_s: float
    busy_s: float
    mean_power_w: float | None
    max_power_w: float | None
    mean_util_pct: float | None
    mean_mem_util_pct: float | None
    mean_temp_c: float | None
    max_temp_c: int | None
    max_mem_used_bytes: int | None
    reset_count: int
    energy_bridged_j: float = 0.0
    bridged_s: float = 0.0
    bridged_gap_s: float = 0.0

    @property
    def missing_s(self) -> float:
        """Seconds of the hour neither observed nor bridged (unbridged gaps, or no samples at all)."""
        return HOUR_S - self.observed_s - self.bridged_s

    @property
    def counter_share(self) -> float | None:
        """The share (0..1) of the hour's energy from the NVML counter (bridged included); ``None`` without energy."""
        return (self.energy_counter_j + self.energy_bridged_j) / self.energy_j if self.energy_j > 0 else None


def gpu_usage_by_hour(
    points: Iterable[GpuPoint],
    *,
    hour_starts_s: Iterable[int],
    max_gap_s: float = DEFAULT_GPU_MAX_GAP_S,
    max_bridge_s: float = DEFAULT_MAX_BRIDGE_S,
    busy_above_util_pct: int = 0,
    energy_bound: CounterBound = ENERGY_BOUND,
) -> tuple[GpuHourUsage, ...]:
    """One GPU's usage for each requested hour, in hour order (an hour without samples reads as unobserved).

    Raises :class:`~telemetry.energy.counters.CounterImpossible` where the counter's increase over an
    interval (observed or bridged) that reaches into a requested hour is more than ``energy_bound``
    allows (a rise, or the reading after a restart): such an hour is not summed.

    ``points``: the GPU's samples as the window contract of
    :func:`telemetry.energy.hours.sample_window_s` asks, in any order, duplicates
    allowed; of several sharing a timestamp one is kept, chosen by :func:`gpu_point_key`. The result is a function of
    the set of samples alone. A sample is busy when ``util_pct > busy_above_util_pct``.
    """
    hours = hours_validated(hour_starts_s)
    ordered = points_ordered(points, key=gpu_point_key)
    tallies = {hour: _GpuTally() for hour in hours}
    max_gap_s = max_gap_checked(max_gap_s)
    for span in _gpu_spans(ordered, max_gap_s=max_gap_s, busy_above_util_pct=busy_above_util_pct):
        if span.from_counter and span.energy_j is not None and (reach := reached(span.start_s, span.end_s, tallies)):
            increase_checked(span.energy_j, span.start_s, span.end_s, bound=energy_bound, name="energy_j", hours=reach)
        _span_tallied(span, tallies)
    for before, after in gaps_bridged(
        ordered, max_gap_s=max_gap_s, max_bridge_s=max_bridge_s, continues=energy_counter_continues
    ):
        if reach := reached(before.ts_s, after.ts_s, tallies):
            assert before.energy_j is not None and after.energy_j is not None  # noqa: S101 - gaps_bridged checked them
            increase = after.energy_j - before.energy_j
            increase_checked(increase, before.ts_s, after.ts_s, bound=energy_bound, name="energy_j", hours=reach)
        _bridge_tallied(before, after, tallies)
    for point in ordered:
        if (tally := tallies.get(hour_start_s_of(point.ts_s))) is not None:
            tally.point_add(point)
    return tuple(tallies[hour].usage(hour) for hour in hours)


# --- intervals ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _GpuSpan:
    """An observed interval between two consecutive samples; values are interval means."""

    start_s: float
    end_s: float
    energy_j: float | None
    from_counter: bool
    restarted: bool
    busy_fraction: float | None
    util_pct: float | None
    mem_util_pct: float | None
    temp_c: float | None


def energy_counter_continues(before: GpuPoint, after: GpuPoint) -> bool:
    """Whether the NVML counter proves the energy of the gap between two samples."""
    return counter_continues(before.energy_j, after.energy_j, epoch_changed=before.epoch != after.epoch)


def reached(start_s: float, end_s: float, hours: Container[int]) -> list[int]:
    """Those of ``hours`` that the interval ``[start_s, end_s]`` adds to."""
    return [hour for hour, _ in hour_overlaps_s(start_s, end_s) if hour in hours]


def _bridge_tallied(before: GpuPoint, after: GpuPoint, tallies: dict[int, _GpuTally]) -> None:
    """Add a bridged gap's counter increase to its hours, in proportion to time (as an observed interval's)."""
    assert before.energy_j is not None and after.energy_j is not None  # noqa: S101 - gaps_bridged checked them
    gap_s = after.ts_s - before.ts_s
    for hour, overlap_s in hour_overlaps_s(before.ts_s, after.ts_s):
        if (tally := tallies.get(hour)) is not None:
            tally.bridged.add((after.energy_j - before.energy_j) / gap_s, overlap_s)
            tally.bridged_gap_s = max(tally.bridged_gap_s, float(gap_s))


def _gpu_spans(points: list[GpuPoint], *, max_gap_s: float, busy_above_util_pct: int) -> Iterator[_GpuSpan]:
    for before, after in itertools.pairwise(points):
        if after.ts_s - before.ts_s <= max_gap_s:
            yield _gpu_span(before, after, busy_above_util_pct)


def _gpu_span(before: GpuPoint, after: GpuPoint, busy_above_util_pct: int) -> _GpuSpan:
    epoch_changed = before.epoch != after.epoch
    energy_j, from_counter = _span_energy_j(before, after, epoch_changed)
    return _GpuSpan(
        start_s=before.ts_s,
        end_s=after.ts_s,
        energy_j=energy_j,
        from_counter=from_counter,
        restarted=epoch_changed or _counter_dropped(before, after),
        busy_fraction=_pair_mean(_busy(before, busy_above_util_pct), _busy(after, busy_above_util_pct)),
        util_pct=_pair_mean(before.util_pct, after.util_pct),
        mem_util_pct=_pair_mean(before.mem_util_pct, after.mem_util_pct),
        temp_c=_pair_mean(before.temp_c, after.temp_c),
    )


def _span_energy_j(before: GpuPoint, after: GpuPoint, epoch_changed: bool) -> tuple[float | None, bool]:
    """The interval's energy in joules, and whether it came from the counter."""
    if before.energy_j is not None and after.energy_j is not None:
        return counter_increase(before.energy_j, after.energy_j, epoch_changed=epoch_changed), True
    if before.power_w is not None and after.power_w is not None:
        return (before.power_w + after.power_w) / 2 * (after.ts_s - before.ts_s), False
    return None, False


def _counter_dropped(before: GpuPoint, after: GpuPoint) -> bool:
    return before.energy_j is not None and after.energy_j is not None and after.energy_j < before.energy_j


def _busy(point: GpuPoint, busy_above_util_pct: int) -> float | None:
    return None if point.util_pct is None else float(point.util_pct > busy_above_util_pct)


def _pair_mean(first: float | None, second: float | None) -> float | None:
    """The trapezoid mean of a reading over an interval; unknown unless both ends are known."""
    return None if first is None or second is None else (first + second) / 2


def _span_tallied(span: _GpuSpan, tallies: dict[int, _GpuTally]) -> None:
    for hour, overlap_s in hour_overlaps_s(span.start_s, span.end_s):
        if (tally := tallies.get(hour)) is not None:
            tally.span_add(span, overlap_s)
    if span.restarted and (tally := tallies.get(hour_start_s_of(span.end_s))) is not None:
        tally.reset_count += 1


# --- per-hour sums --------------------------------------------------------------


@dataclass(slots=True)
class _TimeMean:
    """A time-weighted mean: the integral of a reading over the seconds it was known."""

    integral: float = 0.0
    seconds: float = 0.0

    def add(self, value: float | None, seconds: float) -> None:
        if value is not None:
            self.integral += value * seconds
            self.seconds += seconds

    def mean(self) -> float | None:
        return self.integral / self.seconds if self.seconds > 0 else None


@dataclass(slots=True)
class _GpuTally:
    observed_s: float = 0.0
    counter: _TimeMean = field(default_factory=_TimeMean)  # integral = joules
    integrated: _TimeMean = field(default_factory=_TimeMean)
    bridged: _TimeMean = field(default_factory=_TimeMean)  # integral = joules across bridged gaps
    bridged_gap_s: float = 0.0
    busy: _TimeMean = field(default_factory=_TimeMean)  # integral = busy seconds
    util: _TimeMean = field(default_factory=_TimeMean)
    mem_util: _TimeMean = field(default_factory=_TimeMean)
    temp: _TimeMean = field(default_factory=_TimeMean)
    reset_count: int = 0
    max_power_w: float | None = None
    max_temp_c: int | None = None
    max_mem_used_bytes: int | None = None

    def span_add(self, span: _GpuSpan, overlap_s: float) -> None:
        """Add the part of ``span`` that lies in this hour (``overlap_s`` of its seconds)."""
        self.observed_s += overlap_s
        if span.energy_j is not None:
            energy = self.counter if span.from_counter else self.integrated
            energy.add(span.energy_j / (span.end_s - span.start_s), overlap_s)
        self.busy.add(span.busy_fraction, overlap_s)
        self.util.add(span.util_pct, overlap_s)
        self.mem_util.add(span.mem_util_pct, overlap_s)
        self.temp.add(span.temp_c, overlap_s)

    def point_add(self, point: GpuPoint) -> None:
        self.max_power_w = _max(self.max_power_w, point.power_w)
        self.max_temp_c = _max(self.max_temp_c, point.temp_c)
        self.max_mem_used_bytes = _max(self.max_mem_used_bytes, point.mem_used_bytes)

    def usage(self, hour_start_s: int) -> GpuHourUsage:
        energy_j = self.counter.integral + self.integrated.integral + self.bridged.integral
        covered_s = self.counter.seconds + self.integrated.seconds + self.bridged.seconds
        return GpuHourUsage(
            hour_start_s=hour_start_s,
            energy_j=energy_j,
            energy_counter_j=self.counter.integral,
            energy_integrated_j=self.integrated.integral,
            energy_method=energy_method_of(
                counter_s=self.counter.seconds + self.bridged.seconds, integrated_s=self.integrated.seconds
            ),
            observed_s=self.observed_s,
            energy_covered_s=covered_s,
            busy_s=self.busy.integral,
            mean_power_w=energy_j / covered_s if covered_s > 0 else None,
            max_power_w=self.max_power_w,
            mean_util_pct=self.util.mean(),
            mean_mem_util_pct=self.mem_util.mean(),
            mean_temp_c=self.temp.mean(),
            max_temp_c=self.max_temp_c,
            max_mem_used_bytes=self.max_mem_used_bytes,
            reset_count=self.reset_count,
            energy_bridged_j=self.bridged.integral,
            bridged_s=self.bridged.seconds,
            bridged_gap_s=self.bridged_gap_s,
        )


def energy_method_of(*, counter_s: float, integrated_s: float) -> EnergyMethod:
    """The method of an hour whose energy came from ``counter_s`` seconds of counter and ``integrated_s`` of power."""
    if counter_s > 0 and integrated_s > 0:
        return EnergyMethod.MIXED
    if counter_s > 0:
        return EnergyMethod.COUNTER
    return EnergyMethod.INTEGRATED if integrated_s > 0 else EnergyMethod.NONE


def _max(current: _Reading | None, reading: _Reading | None) -> _Reading | None:
    """The larger of a running maximum and a reading, either of which may be ``None``."""
    if reading is None:
        return current
    return reading if current is None or reading > current else current
