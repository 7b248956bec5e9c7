"""The one hook by which the admin edits inputs.

``AuditedInputAdmin``: the admin pages of prices, tariffs, PUE, market factors,
GPU assets and residual mixes save and delete through the same services as the
API (``input_save`` / ``input_delete``), so each change is audited (who, when,
before and after), re-opens the ledger hours it affects, and is refused in a
locked period: the page says why and nothing is changed.

Nodes and node tokens edited or deleted in the admin are audited as through the
API and the tokens page (``node`` / ``node_token``, ``accounting.inputs.nodes``):
the inventory's node and token admins (``fleets.admin``) are registered here, as
``AuditedInventoryAdmin`` subclasses, and only here. A node moved (site, fleet,
tenure), re-dated or deleted is refused while a stored line it changes lies in a
locked period, as the site's own PUE is; the page says why and nothing is changed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import timezone

from accounting.inputs.nodes import inventory_row_delete_audited, inventory_row_save_audited
from accounting.inputs.services import InputChange
from common.api import InputInvalid
from fleets.admin import NodeAdmin, NodeCredentialAdmin, OneByOneDeletes, OrganizationScopedAdmin
from fleets.models import Node, NodeCredential
from governance.locks import PeriodLocked


def admin_refusing(request: HttpRequest, view: Callable[[], HttpResponse]) -> HttpResponse:
    """Run an admin view (atomic); a locked period or an invalid input rolls it back whole, shown as an error."""
    try:
        return view()
    except (PeriodLocked, InputInvalid) as error:
        messages.error(request, f"Not saved: {error}")
        return HttpResponseRedirect(request.get_full_path())


class AuditedInputAdmin(OneByOneDeletes, OrganizationScopedAdmin):
    """Saves and deletes through ``input_save`` / ``input_delete`` (services); a refusal is shown, not a 500."""

    def input_save(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        raise NotImplementedError

    def input_delete(self, obj: Any, *, user: Any, now: datetime) -> InputChange:
        raise NotImplementedError

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self._reopened(request, self.input_save(obj, user=request.user, now=timezone.now()))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self._reopened(request, self.input_delete(obj, user=request.user, now=timezone.now()))

    def _reopened(self, request: HttpRequest, result: InputChange) -> None:
        if result.ledger_hours_reopened:
            messages.info(request, f"{result.ledger_hours_reopened} ledger hours re-opened for recomputation")

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return admin_refusing(request, lambda: super(AuditedInputAdmin, self).changeform_view(request, *args, **kwargs))

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return admin_refusing(request, lambda: super(AuditedInputAdmin, self).delete_view(request, *args, **kwargs))

    def changelist_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return admin_refusing(request, lambda: super(AuditedInputAdmin, self).changelist_view(request, *args, **kwargs))


class AuditedInventoryAdmin(OneByOneDeletes, OrganizationScopedAdmin):
    """Nodes and node tokens: each save and delete audited in its own transaction, with the admin's name; a
    node's move in a locked period refused, shown as an error."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        save = super().save_model
        reopened = inventory_row_save_audited(
            row=obj, save=lambda: save(request, obj, form, change), user=request.user, now=timezone.now()
        )
        if reopened:
            messages.info(request, f"{reopened} ledger hours re-opened for recomputation")

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        inventory_row_delete_audited(row=obj, user=request.user, now=timezone.now())

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        view = super().changeform_view
        return admin_refusing(request, lambda: view(request, *args, **kwargs))

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        view = super().delete_view
        return admin_refusing(request, lambda: view(request, *args, **kwargs))

    def changelist_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        view = super().changelist_view
        return admin_refusing(request, lambda: view(request, *args, **kwargs))


@admin.register(Node)
class AuditedNodeAdmin(AuditedInventoryAdmin, NodeAdmin):
    pass


@admin.register(NodeCredential)
class AuditedNodeCredentialAdmin(AuditedInventoryAdmin, NodeCredentialAdmin):
    pass
