"""Latency figures from merged histograms: the mean from the histogram's sum, and goodput with its bounds.

Quantiles and their buckets are ``telemetry.histogram``'s (interpolated within
the bucket, as Prometheus's ``histogram_quantile``); this module adds what a
Prometheus histogram also gives and the comparison needs: the mean
(``*_sum`` / count) and the share of observations at or below a target
(goodput), which a histogram only knows to within the bucket holding the target.

Pure arithmetic: nothing here imports Django. Times in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from telemetry.histogram import Histogram


@dataclass(frozen=True)
class TimeSum:
    """A histogram's ``*_sum`` (seconds) added over the hours that had it, and their observations.

    Hours whose server gave no sum are left out of both, so the mean is over the
    observations the sum covers.
    """

    sum_s: float = 0.0
    count: int = 0

    def __add__(self, other: TimeSum) -> TimeSum:
        return TimeSum(self.sum_s + other.sum_s, self.count + other.count)

    @property
    def mean_s(self) -> float | None:
        return None if self.count == 0 else self.sum_s / self.count


@dataclass(frozen=True)
class ShareWithin:
    """The share (0-1) of observations at or below a target, from a histogram.

    ``certain``: observations in buckets whose upper bound is at or below the
    target (they surely met it); ``possible``: those plus the bucket holding the
    target (they may have); ``estimate``: interpolated linearly within that bucket
    (equal to ``certain`` on a bound, and above the highest finite bound, where the
    +Inf bucket has no upper end to interpolate to). ``bucket_low_s`` /
    ``bucket_high_s``: the bucket holding the target (``None`` high for +Inf;
    both ``None`` when the target is on a bound).
    """

    certain: float
    possible: float
    estimate: float
    bucket_low_s: float | None
    bucket_high_s: float | None


def share_within(histogram: Histogram, target_s: float) -> ShareWithin | None:
    """The share of the histogram's observations at or below ``target_s`` (> 0); ``None`` without observations.

    A bucket counts observations in ``(lower, upper]``, the first starting at 0.
    """
    if target_s <= 0:
        raise ValueError(f"a latency target must be positive, got {target_s!r}")
    total = histogram.total
    if total == 0:
        return None
    below, lower_s = 0, 0.0
    for upper_s, count in zip(histogram.bounds_s, histogram.counts, strict=False):
        if upper_s == target_s:
            share = (below + count) / total
            return ShareWithin(share, share, share, None, None)
        if upper_s > target_s:
            fraction = (target_s - lower_s) / (upper_s - lower_s) if upper_s > lower_s else 1.0
            return ShareWithin(
                certain=below / total,
                possible=(below + count) / total,
                estimate=(below + count * fraction) / total,
                bucket_low_s=lower_s,
                bucket_high_s=upper_s,
            )
        below, lower_s = below + count, upper_s
    certain = below / total  # the target lies in the +Inf bucket
    return ShareWithin(certain, 1.0, certain, lower_s, None)
