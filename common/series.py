"""Series of (time, value) points made fewer to draw, without plotting anything: series that would lie one
over another as one line, several as their median and the band around it."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

Points = list[tuple[datetime, float | None]]


def median_band(group: Sequence[Sequence[tuple[datetime, float | None]]]) -> tuple[Points, Points, Points]:
    """The median, lowest and highest of several series at each of their times (``None`` where none has a value)."""
    values: dict[datetime, list[float]] = defaultdict(list)
    for points in group:
        for moment, value in points:
            values.setdefault(moment, [])
            if value is not None:
                values[moment].append(value)
    times = sorted(values)
    median = [(t, statistics.median(values[t]) if values[t] else None) for t in times]
    low = [(t, min(values[t]) if values[t] else None) for t in times]
    high = [(t, max(values[t]) if values[t] else None) for t in times]
    return median, low, high


def overlapping_series_merged(
    series: Mapping[str, Sequence[tuple[datetime, float | None]]],
    names: Callable[[list[str]], str],
    *,
    tolerance_share: float = 0.01,
) -> dict[str, list[tuple[datetime, float | None]]]:
    """Series that would draw one over another, as one line named by ``names(their names)`` (``8 x H100``).

    Two series overlap where they have points at the same times and their values differ by at most
    ``tolerance_share`` of the largest value of all (about the width of a line); the first one's points are drawn.
    """
    largest = max((abs(v) for points in series.values() for _, v in points if v is not None), default=0.0)
    tolerance = largest * tolerance_share
    groups: list[list[str]] = []
    for name, points in series.items():
        group = next((g for g in groups if _overlap(series[g[0]], points, tolerance)), None)
        if group is None:
            groups.append([name])
        else:
            group.append(name)
    return {(names(group) if len(group) > 1 else group[0]): list(series[group[0]]) for group in groups}


def _overlap(
    first: Sequence[tuple[datetime, float | None]], second: Sequence[tuple[datetime, float | None]], tolerance: float
) -> bool:
    if [t for t, _ in first] != [t for t, _ in second]:
        return False
    for (_, a), (_, b) in zip(first, second, strict=True):
        if (a is None) != (b is None) or (a is not None and b is not None and abs(a - b) > tolerance):
            return False
    return True
