"""Putting raw samples in order: sorted by time, one per timestamp."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar


class Timed(Protocol):
    @property
    def ts_s(self) -> float: ...


Point = TypeVar("Point", bound=Timed)


def points_ordered(points: Iterable[Point], *, key: Callable[[Point], tuple[Any, ...]]) -> list[Point]:
    """The points sorted by time, keeping one per timestamp.

    ``key`` must start with ``ts_s`` and order every field, so that of points
    sharing a timestamp the one kept (the least by ``key``) does not depend on
    the order they came in: identical duplicates collapse, and differing ones
    resolve the same way on every run.
    """
    ordered = sorted(points, key=key)
    return [point for i, point in enumerate(ordered) if i == 0 or point.ts_s != ordered[i - 1].ts_s]


def nullable_key(value: Any) -> tuple[int, Any]:
    """A sort key for a field that may be ``None`` (not measured): measured values first."""
    return (1, 0) if value is None else (0, value)
