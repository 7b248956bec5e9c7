"""Locked periods: a closed period's inputs stay as reported until an admin unlocks it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q

from accounting.inputs.audit import audit_record, snapshot
from accounting.inputs.models import LockedPeriod
from accounting.inputs.windows import Window, windows_overlap
from accounting.models import NodeHourLedger
from fleets.models import Organization


class PeriodLocked(Exception):
    """A change would alter inputs in force within a locked period; the message names the period."""


def _refusal(lock: LockedPeriod) -> PeriodLocked:
    reason = f" ({lock.reason})" if lock.reason else ""
    return PeriodLocked(
        f"the period {lock.start.isoformat()} to {lock.end.isoformat()} is locked{reason}: "
        "this change would alter inputs in force within it; an admin must unlock it first"
    )


def lock_check(*, organization_id: int, windows: Iterable[Window]) -> None:
    """Raise ``PeriodLocked`` if any of ``windows`` overlaps a locked period of the organization."""
    windows = list(windows)
    for lock in LockedPeriod.objects.filter(organization_id=organization_id):
        if any(windows_overlap(window, (lock.start, lock.end)) for window in windows):
            raise _refusal(lock)


def lock_check_lines(*, organization_id: int, node_ids: Iterable[int], windows: Iterable[Window] | None = None) -> None:
    """For inputs without a period (site PUE, GPU assets): refuse if a stored line of the nodes is locked
    (within ``windows``, the hours the input weighs on; default: every hour)."""
    ids, windows = list(node_ids), None if windows is None else list(windows)
    for lock in LockedPeriod.objects.filter(organization_id=organization_id):
        lines = NodeHourLedger.objects.filter(node_id__in=ids, hour_start__gte=lock.start, hour_start__lt=lock.end)
        if windows is not None:
            within = Q()
            for start, end in windows:
                within |= Q(hour_start__gte=start) & (Q() if end is None else Q(hour_start__lt=end))
            lines = lines.filter(within) if windows else lines.none()
        if lines.exists():
            raise _refusal(lock)


def period_lock(
    *, organization: Organization, start: datetime, end: datetime, reason: str, user: Any, now: datetime
) -> LockedPeriod:
    if end <= start:
        raise ValueError("end must be after start")
    with transaction.atomic():
        lock = LockedPeriod.objects.create(
            organization=organization, start=start, end=end, reason=reason, locked_by=user, locked_at=now
        )
        audit_record(
            organization_id=organization.pk, user=user, subject="locked_period", object_id=lock.pk,
            before=None, after=snapshot(lock), at=now,
        )  # fmt: skip
    return lock


def period_unlock(*, lock: LockedPeriod, user: Any, now: datetime) -> None:
    with transaction.atomic():
        before = snapshot(lock)
        lock_id = lock.pk
        lock.delete()
        audit_record(
            organization_id=lock.organization_id, user=user, subject="locked_period", object_id=lock_id,
            before=before, after=None, at=now,
        )  # fmt: skip
