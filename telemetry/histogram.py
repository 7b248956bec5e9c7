"""Latency histograms (TTFT) as per-bucket counts: increases, merges and quantiles.

Inference servers export a histogram as cumulative Prometheus buckets: one
count per finite upper bound ``le``, then ``+Inf``, each counting every
observation at or below its bound since the server started. Here a
:class:`Histogram` holds *per-bucket* counts over some period (an hour, an
interval), so histograms of different hours and endpoints add up bucket by
bucket and a percentile can be taken from the sum.

Merge rule: histograms merge only when their bounds are identical; otherwise
:func:`histogram_merge` raises :class:`HistogramBoundsError`, unless asked to
``coarsen``, in which case every histogram is first re-bucketed onto the bounds
they all share (:func:`histogram_coarsen`). Coarsening is exact (a shared bound
splits every histogram at the same place), it only loses resolution; nothing
is ever split by guesswork. ``+Inf`` is always shared.

Pure arithmetic: nothing here imports Django.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class HistogramBoundsError(ValueError):
    """Histograms with different bucket bounds cannot be combined as asked."""


@dataclass(frozen=True, slots=True)
class Histogram:
    """Observation counts per bucket over a period.

    ``bounds_s``: the finite upper bounds (inclusive, seconds for TTFT),
    strictly increasing; ``+Inf`` is implicit. ``counts``: one non-negative
    count per bucket, ``len(bounds_s) + 1`` of them, the ``+Inf`` bucket last;
    bucket ``i`` counts observations in ``(bounds_s[i-1], bounds_s[i]]``.
    """

    bounds_s: tuple[float, ...]
    counts: tuple[int, ...]

    def __post_init__(self) -> None:
        _bounds_check(tuple(self.bounds_s))
        if len(self.counts) != len(self.bounds_s) + 1:
            expected = len(self.bounds_s) + 1
            raise ValueError(f"{len(self.bounds_s)} bounds need {expected} counts, got {len(self.counts)}")
        if self.counts and min(self.counts) < 0:
            raise ValueError(f"bucket counts must not be negative: {self.counts!r}")

    @property
    def total(self) -> int:
        """How many observations the histogram holds."""
        return sum(self.counts)


@functools.lru_cache(maxsize=256)
def _bounds_check(bounds_s: tuple[float, ...]) -> None:
    """Raise unless ``bounds_s`` are finite and strictly increasing. A server keeps one layout for months and a
    page reads thousands of its hourly histograms: each distinct layout is checked once (an invalid one raises
    every time: a raising call is not cached)."""
    if any(not math.isfinite(b) for b in bounds_s):
        raise HistogramBoundsError(f"bounds must be finite (+Inf is implicit): {bounds_s!r}")
    if any(later <= earlier for earlier, later in itertools.pairwise(bounds_s)):
        raise HistogramBoundsError(f"bounds must be strictly increasing: {bounds_s!r}")


def histogram_empty(bounds_s: Sequence[float]) -> Histogram:
    """A histogram with these bounds and no observations."""
    return Histogram(tuple(bounds_s), (0,) * (len(bounds_s) + 1))


def histogram_from_cumulative(bounds_s: Sequence[float], cumulative_counts: Sequence[int]) -> Histogram:
    """Per-bucket counts from Prometheus cumulative bucket counts (one per bound, then ``+Inf``)."""
    counts = tuple(later - earlier for earlier, later in itertools.pairwise((0, *cumulative_counts)))
    if any(count < 0 for count in counts):
        raise ValueError(f"cumulative bucket counts must not decrease: {tuple(cumulative_counts)!r}")
    return Histogram(tuple(bounds_s), counts)


def bucket_counts_sum(width: int, stored: Iterable[Sequence[int | float] | None]) -> tuple[int, ...] | None:
    """The bucket-wise sum of stored per-bucket counts of one layout of ``width`` buckets (``+Inf`` included).

    Counts that are empty, missing or of another width count as no histogram (``None``: none fit). A count
    stored as a float is taken as an integer (each, before summing).
    """
    fitting = [counts for counts in stored if counts and len(counts) == width]
    if not width or not fitting:
        return None
    sums = tuple(map(sum, zip(*fitting, strict=True)))
    if not all(type(total) is int for total in sums):
        sums = tuple(sum(int(c) for c in column) for column in zip(*fitting, strict=True))
    return sums


def histogram_restarted(previous: Histogram, current: Histogram, *, epoch_changed: bool) -> bool:
    """Whether the histogram's counters restarted: new epoch, other bounds, or a bucket that dropped.

    New bounds need a server restart, so they count as one.
    """
    if epoch_changed or previous.bounds_s != current.bounds_s:
        return True
    return any(now < before for before, now in zip(previous.counts, current.counts, strict=True))


def histogram_increase(previous: Histogram, current: Histogram, *, epoch_changed: bool) -> Histogram:
    """The observations added between two readings of one histogram's cumulative counters.

    The counter reset rule, bucket by bucket: after a restart (see
    :func:`histogram_restarted`) the increase is the current reading itself.
    """
    if histogram_restarted(previous, current, epoch_changed=epoch_changed):
        return current
    counts = tuple(now - before for before, now in zip(previous.counts, current.counts, strict=True))
    return Histogram(current.bounds_s, counts)


def histogram_coarsen(histogram: Histogram, bounds_s: Sequence[float]) -> Histogram:
    """The same observations re-bucketed onto ``bounds_s``, which must be a subset of its bounds."""
    missing = sorted(set(bounds_s) - set(histogram.bounds_s))
    if missing:
        raise HistogramBoundsError(f"cannot coarsen onto bounds {missing!r} that the histogram lacks")
    keep, counts, running = set(bounds_s), [], 0
    for bound, count in zip(histogram.bounds_s, histogram.counts, strict=False):
        running += count
        if bound in keep:
            counts.append(running)
            running = 0
    counts.append(running + histogram.counts[-1])
    return Histogram(tuple(bounds_s), tuple(counts))


def histogram_merge(histograms: Iterable[Histogram], *, coarsen: bool = False) -> Histogram | None:
    """The bucket-wise sum of the histograms; ``None`` when there are none.

    Different bounds raise :class:`HistogramBoundsError`, or with ``coarsen``
    are re-bucketed onto the bounds they all share. The result does not depend
    on the order of the histograms.
    """
    items = list(histograms)
    if not items:
        return None
    bounds_s = _bounds_common(items, coarsen=coarsen)
    parts = [h if h.bounds_s == bounds_s else histogram_coarsen(h, bounds_s) for h in items]
    return Histogram(bounds_s, tuple(sum(column) for column in zip(*(p.counts for p in parts), strict=True)))


def _bounds_common(items: Sequence[Histogram], *, coarsen: bool) -> tuple[float, ...]:
    layouts = {h.bounds_s for h in items}
    if len(layouts) == 1:
        return items[0].bounds_s
    if not coarsen:
        raise HistogramBoundsError(f"cannot merge histograms with different bounds: {sorted(layouts)!r}")
    return tuple(sorted(set.intersection(*(set(bounds) for bounds in layouts))))


def histogram_quantile(q: float, histogram: Histogram) -> float | None:
    """The ``q``-quantile (0 <= q <= 1) of the observations, in the bounds' unit (seconds).

    Prometheus ``histogram_quantile`` semantics: find the bucket holding rank
    ``q * total`` and interpolate linearly inside it, the first bucket starting
    at 0; a rank in the ``+Inf`` bucket gives the highest finite bound. ``None``
    (Prometheus: NaN) when there are no observations or no finite bound. One
    refinement: ``q = 0`` gives the lower end of the first non-empty bucket,
    where Prometheus can return NaN.
    """
    found = _rank_bucket(q, histogram)
    if found is None:
        return None
    index, fraction = found
    return _bucket_interpolated(histogram.bounds_s, index, fraction)


def histogram_quantile_bucket(q: float, histogram: Histogram) -> tuple[float, float | None] | None:
    """The bounds (lower, upper) of the bucket the ``q``-quantile falls in: how precise it is.

    The interpolated quantile may be anywhere within them. ``upper`` is ``None``
    for the ``+Inf`` bucket (the quantile is then only known to be above ``lower``).
    ``None`` when :func:`histogram_quantile` is.
    """
    found = _rank_bucket(q, histogram)
    if found is None:
        return None
    index, bounds_s = found[0], histogram.bounds_s
    lower_s = bounds_s[index - 1] if index else 0.0
    return (lower_s, bounds_s[index] if index < len(bounds_s) else None)


def _rank_bucket(q: float, histogram: Histogram) -> tuple[int, float] | None:
    """The index of the bucket holding rank ``q * total`` and how far into its count the rank lies (0-1)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be within 0..1, got {q!r}")
    total = histogram.total
    if total == 0 or not histogram.bounds_s:
        return None
    rank, below = q * total, 0
    for index, count in enumerate(histogram.counts):
        if count and below + count >= rank:
            return index, (rank - below) / count
        below += count
    raise AssertionError("unreachable: the last non-empty bucket reaches every rank")  # pragma: no cover


def _bucket_interpolated(bounds_s: tuple[float, ...], index: int, fraction: float) -> float:
    if index == len(bounds_s):  # the +Inf bucket has no upper end to interpolate to
        return bounds_s[-1]
    upper_s = bounds_s[index]
    if index == 0 and upper_s <= 0:
        return upper_s
    lower_s = bounds_s[index - 1] if index else 0.0
    return lower_s + (upper_s - lower_s) * fraction
