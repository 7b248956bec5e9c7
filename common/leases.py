"""Leases of long tasks a user follows (uploads, scenario runs, the advice refresh).

A run holds a lease (``lease_until``) that its worker renews with each progress
write. A worker that dies stops renewing: once the lease has lapsed the run is
marked failed with the reason, and may be run again at once. A queued run holds
a longer lease (``queue_wait()``): the time a worker may take to pick it up.

Both lengths are settings (``TASK_LEASE_S``, ``TASK_QUEUE_WAIT_S``), read each
time a lease is granted or judged, so that a test may shorten them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet


def lease_length() -> timedelta:
    """How long a running task may go without a progress write before it counts as dead (``TASK_LEASE_S``,
    2 minutes by default). Each renews it far more often (every second or every few thousand rows), so a
    slow step never reaches it."""
    return timedelta(seconds=settings.TASK_LEASE_S)


def queue_wait() -> timedelta:
    """How long a queued task may wait for a worker before it counts as lost (the broker lost it, or no
    worker runs): ``TASK_QUEUE_WAIT_S``, 15 minutes by default."""
    return timedelta(seconds=settings.TASK_QUEUE_WAIT_S)


def lease_from(now: datetime) -> datetime:
    """The lease a running task holds from ``now``."""
    return now + lease_length()


def lapse_reason(*, running: bool, lease_until: datetime) -> str:
    if running:
        return f"the worker stopped: no progress since {lease_until - lease_length():%Y-%m-%d %H:%M:%S} UTC"
    return f"no worker took it up: queued since {lease_until - queue_wait():%Y-%m-%d %H:%M:%S} UTC"


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
