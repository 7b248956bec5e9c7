"""Leases of long tasks a user follows (uploads, scenario runs, the advice refresh).

A run holds a lease (``lease_until``) that its worker renews with each progress
write. A worker that dies stops renewing: once the lease has lapsed the run is
marked failed with the reason, and may be run again at once. A queued run holds
a longer lease (``QUEUE_WAIT``): the time a worker may take to pick it up.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import QuerySet

# How long a running task may go without a progress write before it counts as dead. Each renews it
# far more often (every second or every few thousand rows), so a slow step never reaches it.
LEASE = timedelta(minutes=2)
# How long a queued task may wait for a worker before it counts as lost (the broker lost it, or no worker runs).
QUEUE_WAIT = timedelta(minutes=15)


def lease_from(now: datetime) -> datetime:
    """The lease a running task holds from ``now``."""
    return now + LEASE


def lapse_reason(*, running: bool, lease_until: datetime) -> str:
    if running:
        return f"the worker stopped: no progress since {lease_until - LEASE:%Y-%m-%d %H:%M:%S} UTC"
    return f"no worker took it up: queued since {lease_until - QUEUE_WAIT:%Y-%m-%d %H:%M:%S} UTC"


def leases_lapse(
    *, rows: QuerySet[Any], field: str, queued: str, running: str, failed: str, now: datetime, **finish: Any
) -> int:
    """Mark failed the rows of ``rows`` queued or running whose lease has lapsed; return how many.

    Each row is failed by a conditional ``UPDATE`` on its own lease, so a worker renewing it meanwhile wins.
    ``finish`` are further fields set on a failed row (``finished_at``).
    """
    lapsed = rows.filter(**{f"{field}__in": [queued, running]}, lease_until__lt=now)
    failed_count = 0
    for pk, state, lease_until in lapsed.values_list("pk", field, "lease_until"):
        reason = lapse_reason(running=state == running, lease_until=lease_until)
        failed_count += rows.filter(pk=pk, **{field: state}, lease_until=lease_until).update(
            **{field: failed}, error=reason, **finish
        )
    return failed_count
