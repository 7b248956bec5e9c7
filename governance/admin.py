"""Admin for the audit trail and locked periods, read-only.

Locks are made and lifted through ``/api/v1/locked-periods/``, where each is audited.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from fleets.admin import ReadOnlyScopedAdmin, organization_path_register
from governance.models import AuditEntry, LockedPeriod

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
