"""The hourly advice refresh (beat: ``advice-refresh``): each organization on its own."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from advice.models import WorkloadClass
from advice.refreshes import advice_refresh_isolated


@shared_task(name="accounting.advice_refresh_task")
def advice_refresh_task(organization_id: int | None = None) -> dict[str, int]:
    """Refresh the advice of one organization, or of every organization with a workload class.

    One organization's failure is logged and kept for its page (``advice.refreshes``); every other organization
    is refreshed. Idempotent: an unchanged advice renews its row's ``computed_at``; only a change adds a row and
    notifies.
    """
    now = timezone.now()
    ids = (
        [organization_id]
        if organization_id is not None
        else sorted(set(WorkloadClass.objects.values_list("organization_id", flat=True)))
    )
    totals = {"organizations": len(ids), "classes": 0, "changed": 0, "notified": 0, "not_refreshed": 0}
    for org_id in ids:
        counts = advice_refresh_isolated(organization_id=org_id, now=now)
        if counts is None:  # failed (kept for its page) or already running
            totals["not_refreshed"] += 1
            continue
        for key, value in counts.items():
            totals[key] += value
    return totals
