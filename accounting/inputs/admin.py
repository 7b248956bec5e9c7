"""Admin for the audit trail and locked periods (read-only), and the one hook by which the admin edits inputs.

Locks are made and lifted through ``/api/v1/locked-periods/``, where each is audited.

``AuditedInputAdmin``: the admin pages of prices, tariffs, PUE, market factors,
GPU assets and residual mixes save and delete through the same services as the
API (``input_save`` / ``input_delete``), so each change is audited (who, when,
before and after), re-opens the ledger hours it affects, and is refused in a
locked period: the page says why and nothing is changed.

Nodes and node tokens edited or deleted in the admin are audited as through the
API and the tokens page (``node`` / ``node_token``, ``accounting.inputs.nodes``):
the inventory's admin is replaced here by ``AuditedInventoryAdmin`` subclasses,
as ``accounting.admin`` does for the site's PUE.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import timezone

from accounting.inputs.nodes import inventory_row_delete_audited, inventory_row_save_audited
from accounting.inputs.services import InputChange
from common.api import InputInvalid
from fleets.admin import NodeAdmin, NodeCredentialAdmin, OrganizationScopedAdmin, organization_path_register
from fleets.models import Node, NodeCredential
from governance.locks import PeriodLocked
from governance.models import AuditEntry, LockedPeriod
from telemetry.admin import ReadOnlyScopedAdmin

organization_path_register(AuditEntry, "organization")
organization_path_register(LockedPeriod, "organization")


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyScopedAdmin):
    list_display = ["at", "username", "action", "subject", "object_id", "ledger_hours_reopened", "organization"]
    list_filter = ["subject", "action"]
    search_fields = ["username", "subject"]
    date_hierarchy = "at"

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the trail is kept whole


@admin.register(LockedPeriod)
class LockedPeriodAdmin(ReadOnlyScopedAdmin):
    list_display = ["organization", "start", "end", "reason", "locked_by", "locked_at"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # unlocked through the API, which audits it


def admin_refusing(request: HttpRequest, view: Callable[[], HttpResponse]) -> HttpResponse:
    """Run an admin view (atomic); a locked period or an invalid input rolls it back whole, shown as an error."""
    try:
        return view()
    except (PeriodLocked, InputInvalid) as error:
        messages.error(request, f"Not saved: {error}")
        return HttpResponseRedirect(request.get_full_path())


class AuditedInputAdmin(OrganizationScopedAdmin):
    """Saves and deletes through ``input_save`` / ``input_delete`` (services); a refusal is shown, not a 500."""

    def input_save(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        raise NotImplementedError

    def input_delete(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        raise NotImplementedError

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self._reopened(request, self.input_save(obj, user=request.user, now=timezone.now()))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self._reopened(request, self.input_delete(obj, user=request.user, now=timezone.now()))

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        with transaction.atomic():  # one by one, each audited and lock-checked; all or none
            for obj in queryset:
                self.delete_model(request, obj)

    def _reopened(self, request: HttpRequest, result: InputChange) -> None:
        if result.ledger_hours_reopened:
            messages.info(request, f"{result.ledger_hours_reopened} ledger hours re-opened for recomputation")

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return admin_refusing(request, lambda: super(AuditedInputAdmin, self).changeform_view(request, *args, **kwargs))

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return admin_refusing(request, lambda: super(AuditedInputAdmin, self).delete_view(request, *args, **kwargs))

    def changelist_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return admin_refusing(request, lambda: super(AuditedInputAdmin, self).changelist_view(request, *args, **kwargs))


class AuditedInventoryAdmin(OrganizationScopedAdmin):
    """Nodes and node tokens: each save and delete audited in its own transaction, with the admin's name."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        save = super().save_model
        inventory_row_save_audited(
            row=obj, save=lambda: save(request, obj, form, change), user=request.user, now=timezone.now()
        )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        inventory_row_delete_audited(row=obj, user=request.user, now=timezone.now())

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        with transaction.atomic():  # one by one, each audited; all or none
            for obj in queryset:
                self.delete_model(request, obj)


admin.site.unregister(Node)
admin.site.unregister(NodeCredential)


@admin.register(Node)
class AuditedNodeAdmin(AuditedInventoryAdmin, NodeAdmin):
    pass


@admin.register(NodeCredential)
class AuditedNodeCredentialAdmin(AuditedInventoryAdmin, NodeCredentialAdmin):
    pass
