"""What the grid tells the apps above it, without importing them.

``intensity_stored`` is sent after new or revised hourly values are committed,
with ``since`` (when the write began) and ``now``. The ledger connects a receiver
that re-opens the node-hours whose intensity changed and returns how many it
marked; ``ledger_hours_marked`` sums what the receivers return.
"""

from __future__ import annotations

from datetime import datetime

from django.dispatch import Signal

intensity_stored = Signal()


def ledger_hours_marked(*, since: datetime, now: datetime) -> int:
    """Send ``intensity_stored``; the node-hours the receivers re-opened (0 where none is connected)."""
    return sum(int(marked or 0) for _, marked in intensity_stored.send(sender=None, since=since, now=now))
