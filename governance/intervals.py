"""Half-open time windows ``[start, end)``; ``end=None`` runs on forever. Pure: no ORM.

A change to a row with a validity period affects the hours of its old period
and its new one when its values change, and only the hours that moved in or
out of force when just its dates change.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

Window = tuple[datetime, datetime | None]

_FOREVER = datetime(9999, 12, 31, tzinfo=UTC)


def _end(window: Window) -> datetime:
    return _FOREVER if window[1] is None else window[1]


def _normal(windows: Iterable[tuple[datetime, datetime]]) -> list[Window]:
    merged: list[tuple[datetime, datetime]] = []
    for start, end in sorted(w for w in windows if w[1] > w[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return [(start, None if end == _FOREVER else end) for start, end in merged]


def windows_union(*groups: Iterable[Window]) -> list[Window]:
    return _normal((w[0], _end(w)) for group in groups for w in group)


def windows_minus(windows: Iterable[Window], cuts: Iterable[Window]) -> list[Window]:
    """The parts of ``windows`` outside every window of ``cuts``."""
    pieces = [(w[0], _end(w)) for w in windows]
    for cut_start, cut_end in ((c[0], _end(c)) for c in cuts):
        pieces = [
            part
            for start, end in pieces
            for part in ((start, min(end, cut_start)), (max(start, cut_end), end))
            if part[1] > part[0]
        ]
    return _normal(pieces)


def windows_changed(*, before: Window | None, after: Window | None, values_changed: bool) -> list[Window]:
    """The hours whose input changes when a row's period goes from ``before`` to ``after``."""
    old, new = [before] if before else [], [after] if after else []
    if values_changed:
        return windows_union(old, new)
    return windows_union(windows_minus(old, new), windows_minus(new, old))


def windows_overlap(a: Window, b: Window) -> bool:
    return a[0] < _end(b) and b[0] < _end(a)
