"""Locked periods: a closed period's inputs stay as reported until an admin unlocks it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction

from common.api import ChangeRefused, InputInvalid
from common.periods import hour_instant_problem
from fleets.models import Organization
from governance.audit import audit_record, snapshot
from governance.intervals import Window, windows_overlap
from governance.models import LockedPeriod


class PeriodLocked(ChangeRefused):
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


def period_lock(
    *, organization: Organization, start: datetime, end: datetime, reason: str, user: Any, now: datetime
) -> LockedPeriod:
    for name, value in (("start", start), ("end", end)):
        if problem := hour_instant_problem(value):
            raise InputInvalid(f"{name} {problem}")
    if end <= start:
        raise InputInvalid("end must be after start")
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
