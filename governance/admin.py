"""Admin for the audit trail and locked periods (read-only), and the audited admins of the inventory's own rows.

Locks are made and lifted through ``/api/v1/locked-periods/``, where each is
audited. Organizations, memberships (a person's role) and fleets are registered
here, as ``AuditedAdmin`` subclasses of the inventory's admins, and only here:
each save and delete through them is audited with the admin's name.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from fleets.admin import FleetAdmin, MembershipAdmin, OrganizationAdmin, ReadOnlyScopedAdmin, scoped_register
from fleets.models import Fleet, Membership, Organization
from governance.admin_audit import AuditedAdmin
from governance.models import AuditEntry, LockedPeriod


@scoped_register(AuditEntry)
class AuditEntryAdmin(ReadOnlyScopedAdmin):
    list_display = ["at", "username", "action", "subject", "object_id", "ledger_hours_reopened", "organization"]
    list_filter = ["subject", "action"]
    search_fields = ["username", "subject"]
    date_hierarchy = "at"

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the trail is kept whole


@scoped_register(LockedPeriod)
class LockedPeriodAdmin(ReadOnlyScopedAdmin):
    list_display = ["organization", "start", "end", "reason", "locked_by", "locked_at"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # unlocked through the API, which audits it


@admin.register(Organization)
class AuditedOrganizationAdmin(AuditedAdmin, OrganizationAdmin):
    audit_subject = "organization"
    audit_fields = ("name", "slug")

    def audit_organization(self, obj: Any) -> int:
        return int(obj.pk)


@admin.register(Membership)
class AuditedMembershipAdmin(AuditedAdmin, MembershipAdmin):
    """A role granted, changed (viewer to admin) or taken away: audited, before and after."""

    audit_subject = "membership"
    audit_fields = ("user", "organization", "role")


@admin.register(Fleet)
class AuditedFleetAdmin(AuditedAdmin, FleetAdmin):
    audit_subject = "fleet"
    audit_fields = ("organization", "name", "description")
