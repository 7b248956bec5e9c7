"""UTC hours as Unix seconds, and splitting an interval's increase across them.

An hour is named by its start, ``hour_start_s``: Unix seconds, a multiple of
:data:`HOUR_S` (Unix time has no leap seconds, so every UTC hour is 3600 s).
An hour is half-open, ``[hour_start_s, hour_start_s + HOUR_S)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from fractions import Fraction

HOUR_S = 3600

_HALF = Fraction(1, 2)


def hour_start_s_of(ts_s: float) -> int:
    """The start (Unix seconds) of the UTC hour that contains ``ts_s``."""
    return int(ts_s // HOUR_S) * HOUR_S  # float // is exact here; floor(ts_s / 3600) can round up


def hours_validated(hour_starts_s: Iterable[int]) -> tuple[int, ...]:
    """The requested hours, sorted and without repeats; raise if one is not an hour start."""
    hours = tuple(sorted(set(hour_starts_s)))
    for hour in hours:
        if isinstance(hour, bool) or not isinstance(hour, int) or hour % HOUR_S:
            raise ValueError(f"hour start {hour!r} is not a whole multiple of {HOUR_S} Unix seconds")
    return hours


def sample_window_s(hour_starts_s: Iterable[int], *, max_gap_s: float) -> tuple[float, float]:
    """The closed range ``[first, last]`` (Unix seconds) of samples a rollup of these hours needs.

    It is ``[first_hour_start_s - max_gap_s, last_hour_start_s + HOUR_S + max_gap_s]``:
    an interval that touches a requested hour and is bridged (no longer than
    ``max_gap_s``) has both its samples inside it.

    The window contract of the hourly rollups (``gpu_usage_by_hour``,
    ``endpoint_usage_by_hour``): their ``points`` hold every sample of the GPU or
    endpoint in this range, and the nearest sample on each side beyond it no
    more than ``max_bridge_s`` away (the other end of a gap that may be
    bridged); farther samples change nothing.
    """
    hours = hours_validated(hour_starts_s)
    if not hours:
        raise ValueError("no hours requested")
    return hours[0] - max_gap_checked(max_gap_s), hours[-1] + HOUR_S + max_gap_s


def hour_overlaps_s(start_s: float, end_s: float) -> Iterator[tuple[int, float]]:
    """Yield ``(hour_start_s, overlap_s)`` for each hour that ``[start_s, end_s]`` overlaps (none if empty)."""
    hour = hour_start_s_of(start_s)
    while hour < end_s:
        yield hour, min(end_s, hour + HOUR_S) - max(start_s, hour)
        hour += HOUR_S


def integer_split_by_hour(delta: int, start_s: float, end_s: float) -> Iterator[tuple[int, int]]:
    """Split an interval's integer increase across hours; the parts add up to ``delta`` exactly.

    The counter is interpolated linearly in time at each hour boundary inside
    ``[start_s, end_s]`` and rounded half up, in exact rational arithmetic; an
    hour gets the difference of the rounded values at its two ends. Parts are
    never negative for ``delta >= 0`` and depend on nothing but the arguments.
    """
    if end_s <= start_s:
        raise ValueError(f"interval [{start_s!r}, {end_s!r}] is empty")
    overlaps = list(hour_overlaps_s(start_s, end_s))
    if len(overlaps) == 1:  # the common case: no boundary inside, no rounding
        yield overlaps[0][0], delta
        return
    start, span = Fraction(start_s), Fraction(end_s) - Fraction(start_s)
    reached_before = 0
    for hour, _ in overlaps:
        boundary = min(Fraction(hour + HOUR_S), Fraction(end_s))
        reached = math.floor(delta * (boundary - start) / span + _HALF)
        yield hour, reached - reached_before
        reached_before = reached


def max_gap_checked(max_gap_s: float) -> float:
    """``max_gap_s`` itself; raise unless it is a finite number of seconds above zero."""
    if not (math.isfinite(max_gap_s) and max_gap_s > 0):
        raise ValueError(f"max_gap_s must be a finite number of seconds above 0, got {max_gap_s!r}")
    return max_gap_s
