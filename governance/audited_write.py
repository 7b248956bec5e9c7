"""The audit and lock hook for writes made by other packages' views (the instrument register).

``audited_write`` runs the write in one transaction with its audit entry; with
``period``, a row whose period (before or after) overlaps a locked period is
refused with 409 and nothing is changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from common.api import Conflict
from governance.audit import audit_record, snapshot
from governance.intervals import Window
from governance.locks import PeriodLocked, lock_check

M = TypeVar("M", bound=Model)


def audited_write(
    *,
    organization_id: int,
    user: Any,
    subject: str,
    before: M | None,
    write: Callable[[], M],
    period: Callable[[M], Window] | None = None,
) -> M:
    try:
        with transaction.atomic():
            before_json = snapshot(type(before)._default_manager.get(pk=before.pk)) if before is not None else None
            if period is not None and before is not None:
                lock_check(organization_id=organization_id, windows=[period(before)])
            obj = write()
            obj = type(obj)._default_manager.get(pk=obj.pk)
            if period is not None:
                lock_check(organization_id=organization_id, windows=[period(obj)])
            audit_record(
                organization_id=organization_id, user=user, subject=subject, object_id=obj.pk,
                before=before_json, after=snapshot(obj), at=timezone.now(),
            )  # fmt: skip
    except PeriodLocked as error:
        raise Conflict(str(error)) from error
    return obj
