"""The reset rule for cumulative counters (NVML energy, tokens, requests)."""

from __future__ import annotations

from typing import TypeVar

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
