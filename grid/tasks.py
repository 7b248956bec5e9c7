"""Grid-intensity tasks: the hourly fetch from live providers."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from grid.signals import ledger_hours_marked
from grid.stored_intensity import intensity_fetch_all


@shared_task(name="accounting.grid_fetch_task")
def grid_fetch_task() -> dict[str, object]:
    """Fetch the recent hours not yet stored from every configured provider.

    Idempotent: stored hours are not asked for again, and a pair backing off or
    held by another worker is skipped, so a re-delivered run only repeats what is missing.
    """
    started = timezone.now()
    result = intensity_fetch_all(now=started)
    result["ledger_hours_marked"] = ledger_hours_marked(since=started, now=timezone.now())
    return result
