"""The advice refresh of each organization on its own: claimed under a lease, its failure kept and shown to
that organization, never stopping another's (``advice_refresh_isolated``)."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from advice.models import AdviceRefresh
from advice.services import advice_refresh
from common.leases import lease_from, leases_lapse

logger = logging.getLogger(__name__)

Status = AdviceRefresh.Status


def _claim(organization_id: int, now: datetime) -> bool:
    """Take the organization's refresh unless one is running under a live lease (a lapsed one is failed first)."""
    AdviceRefresh.objects.get_or_create(organization_id=organization_id)
    rows = AdviceRefresh.objects.filter(organization_id=organization_id)
    leases_lapse(rows=rows, field="status", queued="", running=Status.RUNNING, failed=Status.FAILED, now=now,
                 finished_at=now)  # fmt: skip
    return bool(
        rows.filter(~Q(status=Status.RUNNING)).update(
            status=Status.RUNNING, started_at=now, lease_until=lease_from(now)
        )
    )


def _renew(organization_id: int) -> None:
    AdviceRefresh.objects.filter(organization_id=organization_id, status=Status.RUNNING).update(
        lease_until=lease_from(timezone.now())
    )


def advice_refresh_isolated(*, organization_id: int, now: datetime) -> dict[str, int] | None:
    """Refresh one organization's advice; None if another refresh of it is running or this one failed (logged,
    and its reason kept for the organization's page). Never raises for the organization's data."""
    if not _claim(organization_id, now):
        return None
    try:
        counts = advice_refresh(organization_id=organization_id, now=now, renew=lambda: _renew(organization_id))
    except Exception as error:
        logger.exception("the advice refresh of organization %s failed", organization_id)
        reason = (
            f"the refresh of {now:%Y-%m-%d %H:%M} UTC failed ({type(error).__name__}); the operators have the "
            "details in the logs, and the next hourly refresh tries again"
        )
        _finish(organization_id, status=Status.FAILED, error=reason)
        return None
    _finish(organization_id, status=Status.DONE, error="")
    return counts


def _finish(organization_id: int, **values: object) -> None:
    AdviceRefresh.objects.filter(organization_id=organization_id, status=Status.RUNNING).update(
        finished_at=timezone.now(), lease_until=None, **values
    )
