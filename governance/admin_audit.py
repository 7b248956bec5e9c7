"""Rows saved and deleted in the Django admin without a service of their own, audited as through the API.

``AuditedAdmin`` (a scoped ``ModelAdmin``) saves and deletes each row in one
transaction with its audit entry: the admin's name, the row's fields before and
after, under the row's organization. A form saved unchanged leaves no entry.
Inputs with a ledger behind them save through their services instead
(``accounting.inputs.admin``); this is for the inventory's own rows (roles,
organizations, fleets).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Model
from django.http import HttpRequest
from django.utils import timezone

from fleets.admin import OneByOneDeletes, OrganizationScopedAdmin
from governance.audit import audit_record, snapshot


def admin_row_save_audited(
    *, row: Model, save: Callable[[], None], subject: str, fields: tuple[str, ...] | None,
    organization_of: Callable[[Any], int], user: Any, now: datetime,
) -> None:  # fmt: skip
    """``save`` writes ``row``; the change is audited in the same transaction (none when nothing changed)."""
    manager = type(row)._default_manager
    with transaction.atomic():
        before = snapshot(manager.filter(pk=row.pk).first() if row.pk else None, fields=fields)
        save()
        after = snapshot(manager.get(pk=row.pk), fields=fields)
        if before != after:
            audit_record(
                organization_id=organization_of(row), user=user, subject=subject, object_id=row.pk,
                before=before, after=after, at=now,
            )  # fmt: skip


def admin_row_delete_audited(
    *, row: Model, subject: str, fields: tuple[str, ...] | None, organization_of: Callable[[Any], int], user: Any,
    now: datetime,
) -> None:  # fmt: skip
    with transaction.atomic():
        organization_id, row_id, before = organization_of(row), row.pk, snapshot(row, fields=fields)
        row.delete()
        audit_record(
            organization_id=organization_id, user=user, subject=subject, object_id=row_id, before=before,
            after=None, at=now,
        )  # fmt: skip


class AuditedAdmin(OneByOneDeletes, OrganizationScopedAdmin):
    """Each save and delete audited as ``audit_subject`` (``audit_fields``; all the row's fields when ``None``)."""

    audit_subject = ""
    audit_fields: tuple[str, ...] | None = None

    def audit_organization(self, obj: Any) -> int:
        return int(obj.organization_id)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        save = super().save_model
        admin_row_save_audited(
            row=obj, save=lambda: save(request, obj, form, change), subject=self.audit_subject,
            fields=self.audit_fields, organization_of=self.audit_organization, user=request.user, now=timezone.now(),
        )  # fmt: skip

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        admin_row_delete_audited(
            row=obj, subject=self.audit_subject, fields=self.audit_fields, organization_of=self.audit_organization,
            user=request.user, now=timezone.now(),
        )  # fmt: skip
