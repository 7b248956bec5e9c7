"""Hourly usage of one serving endpoint from its raw samples: tokens, requests, TTFT and inter-token latency.

Samples are cut into intervals as for GPUs (sorted by time, one per
timestamp; an interval no longer than ``max_gap_s`` is observed, a longer one
is a gap). A gap across which the server's counters carried on (same epoch,
none decreased, at most ``max_bridge_s`` long) is *bridged*: its increases
are counted in full like an observed interval's, and its time shows as
``bridged_s`` (the longest such gap in ``bridged_gap_s``); any other gap
(a restart inside it) counts nothing and shows as missing coverage. On every
observed or bridged interval each counter
(``prompt_tokens``, ``generation_tokens``, ``requests``, each TTFT bucket)
increases by its delta under the reset rule (an epoch change or a drop means
a restart from zero: the new reading is the increase), and only when both
samples carry it. The integer increase is split across hour boundaries by
linear interpolation, rounded so that the parts add up to it exactly
(:func:`telemetry.energy.hours.integer_split_by_hour`).

An hour's TTFT histogram is the bucket-wise sum of its intervals' parts. If
the bounds changed within the hour (a restart with a new configuration), the
parts are coarsened onto the bounds they share
(:func:`telemetry.histogram.histogram_merge` with ``coarsen=True``).
The inter-token latency (ITL) histogram follows the same rules. Each
histogram's sum (seconds, a float counter) increases under the same reset rule
(its histogram restarted, or the sum dropped: the new reading is the increase)
and is split across hours in proportion to time: an hour's mean TTFT is its
``ttft_sum_s`` over its TTFT count.

Pure arithmetic: nothing here imports Django.
"""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from telemetry.collector.wire import CounterBound, serving_bounds
from telemetry.energy.counters import counter_increase, gaps_bridged, increase_checked
from telemetry.energy.gpu import DEFAULT_MAX_BRIDGE_S, reached
from telemetry.energy.hours import (
    HOUR_S,
    hour_overlaps_s,
    hour_start_s_of,
    hours_validated,
    integer_split_by_hour,
    max_gap_checked,
)
from telemetry.energy.points import nullable_key, points_ordered
from telemetry.histogram import Histogram, histogram_increase, histogram_merge, histogram_restarted

DEFAULT_SERVING_MAX_GAP_S = 60.0  # servers are scraped every 5-15 s: a few missed scrapes are still bridged


@dataclass(frozen=True, slots=True)
class ServingPoint:
    """One raw serving sample. Counters are cumulative since the server started; ``None`` = not measured.

    ``ts_s``: Unix seconds. ``epoch``: names one life of the server (its start);
    a new epoch means every counter restarted. ``ttft_since_start``: the TTFT
    histogram since the server started, per bucket (build it from the
    exported cumulative buckets with :func:`telemetry.histogram.histogram_from_cumulative`).
    """

    ts_s: float
    epoch: str
    prompt_tokens: int | None = None
    generation_tokens: int | None = None
    requests: int | None = None
    ttft_since_start: Histogram | None = None
    cached_prompt_tokens: int | None = None  # of prompt_tokens, served from the prefix cache
    ttft_sum_s: float | None = None  # the TTFT histogram's sum since the server started
    itl_since_start: Histogram | None = None  # inter-token latency, like ttft_since_start
    itl_sum_s: float | None = None


def serving_point_key(point: ServingPoint) -> tuple[Any, ...]:
    """The total order used to sort samples and pick one of several sharing a timestamp."""
    ttft, itl = point.ttft_since_start, point.itl_since_start
    return (
        point.ts_s,
        point.epoch,
        *(nullable_key(value) for value in _counters(point)),
        nullable_key(None if ttft is None else (ttft.bounds_s, ttft.counts)),
        nullable_key(point.ttft_sum_s),
        nullable_key(None if itl is None else (itl.bounds_s, itl.counts)),
        nullable_key(point.itl_sum_s),
    )


@dataclass(frozen=True, slots=True)
class EndpointHourUsage:
    """One endpoint's usage over the hour ``[hour_start_s, hour_start_s + 3600)``.

    Token and request counts are exact integers; ``ttft`` holds the hour's
    per-bucket TTFT counts (seconds), ``None`` where no interval in the hour
    carried the histogram. ``observed_s``: seconds of the hour inside observed
    intervals; ``bridged_s``: inside bridged gaps, the longest of which lasted
    ``bridged_gap_s`` (0.0: none). ``reset_count``: server restarts seen.
    """

    hour_start_s: int
    prompt_tokens: int
    generation_tokens: int
    requests: int
    ttft: Histogram | None
    observed_s: float
    reset_count: int
    bridged_s: float = 0.0
    bridged_gap_s: float = 0.0
    cached_prompt_tokens: int | None = None  # None: no interval of the hour carried the counter
    ttft_sum_s: float | None = None  # the hour's TTFTs summed; None: no interval carried the sum
    itl: Histogram | None = None  # inter-token latency, per bucket, like ttft
    itl_sum_s: float | None = None

    @property
    def missing_s(self) -> float:
        """Seconds of the hour neither observed nor bridged (unbridged gaps, or no samples at all)."""
        return HOUR_S - self.observed_s - self.bridged_s


def endpoint_usage_by_hour(
    points: Iterable[ServingPoint],
    *,
    hour_starts_s: Iterable[int],
    max_gap_s: float = DEFAULT_SERVING_MAX_GAP_S,
    max_bridge_s: float = DEFAULT_MAX_BRIDGE_S,
    bounds: Mapping[str, CounterBound] | None = None,
    epoch_bounds: Mapping[str, Mapping[str, CounterBound]] | None = None,
) -> tuple[EndpointHourUsage, ...]:
    """One endpoint's usage for each requested hour, in hour order (an hour without samples reads as unobserved).

    ``bounds``: per counter (the wire's names), the most it can count (default: an endpoint on one GPU,
    ``wire.serving_bounds``); ``epoch_bounds``: per epoch (a point's ``epoch``), its own, for the intervals
    that end in it (an increase is counted up in the epoch of the reading that ends it: after a restart, the
    new one's), ``bounds`` for an epoch it does not name. Raises
    :class:`~telemetry.energy.counters.CounterImpossible` where an interval (observed or bridged) reaching into
    a requested hour counts more: that hour is not summed.

    ``points``: the endpoint's samples as the window contract of
    :func:`telemetry.energy.hours.sample_window_s` asks, in any order, duplicates
    allowed; of several sharing a timestamp one is kept, chosen by :func:`serving_point_key`. The result is a function
    of the set of samples alone.
    """
    hours = hours_validated(hour_starts_s)
    ordered = points_ordered(points, key=serving_point_key)
    tallies = {hour: _ServingTally() for hour in hours}
    max_gap_s = max_gap_checked(max_gap_s)
    bounds = serving_bounds(1) if bounds is None else bounds
    epoch_bounds = {} if epoch_bounds is None else epoch_bounds
    for span in _serving_spans(ordered, max_gap_s=max_gap_s):
        _span_checked(span, tallies, epoch_bounds.get(span.epoch, bounds))
        _span_tallied(span, tallies)
    for before, after in gaps_bridged(
        ordered, max_gap_s=max_gap_s, max_bridge_s=max_bridge_s, continues=serving_counters_continue
    ):
        span = _serving_span(before, after)
        _span_checked(span, tallies, epoch_bounds.get(span.epoch, bounds))
        _span_tallied(span, tallies, bridged=True)
    return tuple(tallies[hour].usage(hour) for hour in hours)


_COUNTER_NAMES = ("prompt_tokens", "generation_tokens", "requests", "cached_prompt_tokens")  # as _counters()


def _span_checked(span: _ServingSpan, hours: Container[int], bounds: Mapping[str, CounterBound]) -> None:
    """Raise ``CounterImpossible`` if the span adds to a requested hour more than a counter's bound allows."""
    reach = reached(span.start_s, span.end_s, hours)
    if not reach:
        return
    increases = [*zip(_COUNTER_NAMES, span.counters, strict=True)]
    increases += [(f"{name}_bucket_counts", None if (h := getattr(span, name)) is None else sum(h.counts))
                  for name in ("ttft", "itl")]  # fmt: skip
    for name, increase in increases:
        if increase is not None:
            increase_checked(increase, span.start_s, span.end_s, bound=bounds[name], name=name, hours=reach)


def _counters(point: ServingPoint) -> tuple[int | None, int | None, int | None, int | None]:
    return (point.prompt_tokens, point.generation_tokens, point.requests, point.cached_prompt_tokens)


def serving_counters_continue(before: ServingPoint, after: ServingPoint) -> bool:
    """Whether the server's counters prove what it served across the gap between two samples:
    the same epoch, at least one counter read at both ends, none of them (nor a histogram) decreased."""
    if before.epoch != after.epoch or _ttft_restarted(before, after) or _itl_restarted(before, after):
        return False
    pairs = [(old, new) for old, new in zip(_counters(before), _counters(after), strict=True) if None not in (old, new)]
    return bool(pairs) and not _dropped(pairs)


# --- intervals ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ServingSpan:
    """An interval between two consecutive samples (observed, or a bridged gap), with each counter's increase
    and the epoch of the sample that ends it."""

    start_s: float
    end_s: float
    epoch: str
    counters: tuple[int | None, ...]  # in the order of _counters()
    ttft: Histogram | None
    restarted: bool
    ttft_sum_s: float | None = None
    itl: Histogram | None = None
    itl_sum_s: float | None = None


def _serving_spans(points: list[ServingPoint], *, max_gap_s: float) -> Iterator[_ServingSpan]:
    for before, after in itertools.pairwise(points):
        if after.ts_s - before.ts_s <= max_gap_s:
            yield _serving_span(before, after)


def _serving_span(before: ServingPoint, after: ServingPoint) -> _ServingSpan:
    pairs = list(zip(_counters(before), _counters(after), strict=True))
    # The counters and histograms are one server process's, all since its start: a restart shown by any of them
    # (a new epoch, a counter that dropped, a histogram that restarted) restarted every one, so each counts its
    # new reading whole, even one that happens to read higher than before the restart.
    restarted = before.epoch != after.epoch or _dropped(pairs)
    restarted = restarted or _ttft_restarted(before, after) or _itl_restarted(before, after)
    return _ServingSpan(
        start_s=before.ts_s,
        end_s=after.ts_s,
        epoch=after.epoch,
        counters=tuple(_increase(old, new, restarted) for old, new in pairs),
        ttft=_histogram_increase(before.ttft_since_start, after.ttft_since_start, restarted),
        restarted=restarted,
        ttft_sum_s=_sum_increase(before.ttft_sum_s, after.ttft_sum_s, restarted),
        itl=_histogram_increase(before.itl_since_start, after.itl_since_start, restarted),
        itl_sum_s=_sum_increase(before.itl_sum_s, after.itl_sum_s, restarted),
    )


def _increase(old: int | None, new: int | None, restarted: bool) -> int | None:
    return None if old is None or new is None else counter_increase(old, new, epoch_changed=restarted)


def _dropped(pairs: list[tuple[int | None, int | None]]) -> bool:
    return any(old is not None and new is not None and new < old for old, new in pairs)


def _histogram_increase(old: Histogram | None, new: Histogram | None, restarted: bool) -> Histogram | None:
    return None if old is None or new is None else histogram_increase(old, new, epoch_changed=restarted)


def _sum_increase(old: float | None, new: float | None, restarted: bool) -> float | None:
    """A histogram's sum's increase: the new reading after a restart of its histogram or a drop."""
    if old is None or new is None:
        return None
    return new if restarted or new < old else new - old


def _ttft_restarted(before: ServingPoint, after: ServingPoint) -> bool:
    old, new = before.ttft_since_start, after.ttft_since_start
    return old is not None and new is not None and histogram_restarted(old, new, epoch_changed=False)


def _itl_restarted(before: ServingPoint, after: ServingPoint) -> bool:
    old, new = before.itl_since_start, after.itl_since_start
    return old is not None and new is not None and histogram_restarted(old, new, epoch_changed=False)


def _histogram_split_by_hour(histogram: Histogram, start_s: float, end_s: float) -> Iterator[tuple[int, Histogram]]:
    """Each bucket's count split across hours like any counter; per hour, the parts add up to the whole."""
    columns = [list(integer_split_by_hour(count, start_s, end_s)) for count in histogram.counts]
    for row, (hour, _) in enumerate(columns[0]):
        yield hour, Histogram(histogram.bounds_s, tuple(column[row][1] for column in columns))


def _span_tallied(span: _ServingSpan, tallies: dict[int, _ServingTally], *, bridged: bool = False) -> None:
    for hour, overlap_s in hour_overlaps_s(span.start_s, span.end_s):
        if (tally := tallies.get(hour)) is None:
            continue
        if bridged:
            tally.bridged_s += overlap_s
            tally.bridged_gap_s = max(tally.bridged_gap_s, float(span.end_s - span.start_s))
        else:
            tally.observed_s += overlap_s
    for index, delta in enumerate(span.counters):
        if delta is not None:
            _counter_tallied(index, delta, span, tallies)
    for name in ("ttft", "itl"):
        if (histogram := getattr(span, name)) is not None:
            _histogram_tallied(name, histogram, span, tallies)
        if (increase := getattr(span, f"{name}_sum_s")) is not None:
            _sum_tallied(name, increase, span, tallies)
    if span.restarted and (tally := tallies.get(hour_start_s_of(span.end_s))) is not None:
        tally.reset_count += 1


def _counter_tallied(index: int, delta: int, span: _ServingSpan, tallies: dict[int, _ServingTally]) -> None:
    for hour, part in integer_split_by_hour(delta, span.start_s, span.end_s):
        if (tally := tallies.get(hour)) is not None:
            tally.counters[index] += part
            tally.counted.add(index)


def _histogram_tallied(name: str, histogram: Histogram, span: _ServingSpan, tallies: dict[int, _ServingTally]) -> None:
    for hour, part in _histogram_split_by_hour(histogram, span.start_s, span.end_s):
        if (tally := tallies.get(hour)) is not None:
            tally.parts[name].append(part)


def _sum_tallied(name: str, increase: float, span: _ServingSpan, tallies: dict[int, _ServingTally]) -> None:
    """A histogram's sum's increase, split across hours in proportion to time."""
    for hour, overlap_s in hour_overlaps_s(span.start_s, span.end_s):
        if (tally := tallies.get(hour)) is not None:
            tally.sums_s[name] = tally.sums_s.get(name, 0.0) + increase * overlap_s / (span.end_s - span.start_s)


# --- per-hour sums --------------------------------------------------------------


@dataclass(slots=True)
class _ServingTally:
    observed_s: float = 0.0
    bridged_s: float = 0.0
    bridged_gap_s: float = 0.0
    counters: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # in the order of _counters()
    counted: set[int] = field(default_factory=set)  # counters some interval of the hour carried
    parts: dict[str, list[Histogram]] = field(default_factory=lambda: {"ttft": [], "itl": []})
    sums_s: dict[str, float] = field(default_factory=dict)  # per histogram carrying its sum in the hour
    reset_count: int = 0

    def usage(self, hour_start_s: int) -> EndpointHourUsage:
        prompt_tokens, generation_tokens, requests, cached_prompt_tokens = self.counters
        return EndpointHourUsage(
            hour_start_s=hour_start_s,
            prompt_tokens=prompt_tokens,
            generation_tokens=generation_tokens,
            requests=requests,
            ttft=histogram_merge(self.parts["ttft"], coarsen=True),
            observed_s=self.observed_s,
            reset_count=self.reset_count,
            bridged_s=self.bridged_s,
            bridged_gap_s=self.bridged_gap_s,
            cached_prompt_tokens=cached_prompt_tokens if 3 in self.counted else None,
            ttft_sum_s=self.sums_s.get("ttft"),
            itl=histogram_merge(self.parts["itl"], coarsen=True),
            itl_sum_s=self.sums_s.get("itl"),
        )
