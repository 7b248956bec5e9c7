"""The audit trail as it goes out with a report: the changes that bear on the reported period.

Every report export (the sustainability report, Scope 2 and its GHG table and
ESRS datapoints) carries an ``audit`` section: how many changes bear on the
period (``governance.period_relevance``), a SHA-256 of them, and the link to the
same entries at ``/api/v1/audit/``. The entries themselves (who, when, what
before and after) are listed for readers who may read the audit trail
(admins); for other readers they are ``null``, the count and digest still
saying that changes exist and which.

The digest is the SHA-256 of the entries as listed, as JSON with sorted keys and
no spaces (``json.dumps(entries, sort_keys=True, separators=(",", ":"))``), so
that an auditor can check a list against it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from rest_framework import serializers

from fleets.models import Organization
from fleets.permissions import Capability, may_change
from governance.audit import audit_entries_bearing_on
from governance.models import AuditEntry

AUDIT_COLUMNS = (
    "id", "at", "username", "action", "subject", "object_id", "ledger_hours_reopened", "before", "after",
)  # fmt: skip

AUDIT_NOTE = (
    "Changes to the inputs that bear on this period (their validity, delivery, year or hours overlap it, or they "
    "have no period), newest first, whenever they were made. entries: listed for admins, null for other readers. "
    "sha256: of the entries as JSON with sorted keys and no spaces."
)


AUDIT_SECTION = (
    "the audit trail of the inputs bearing on the period: count, SHA-256 and link always, the changes (who, when, "
    "what before and after) listed for admins"
)


class AuditEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = AUDIT_COLUMNS


class ReportAuditSerializer(serializers.Serializer):
    """The ``audit`` section of a report export (OpenAPI)."""

    entries_count = serializers.IntegerField(help_text="changes bearing on the period")
    sha256 = serializers.CharField(
        help_text='of the entries: json.dumps(entries, sort_keys=True, separators=(",", ":"))'
    )
    href = serializers.CharField(help_text="the same entries at /api/v1/audit/ (admins; ?format=csv for CSV)")
    entries = AuditEntrySerializer(many=True, allow_null=True, help_text="listed for admins, null otherwise")
    note = serializers.CharField()


def audit_digest(entries: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(entries, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def report_audit(*, user: Any, organization: Organization, start: datetime, end: datetime) -> dict[str, Any]:
    """The report's ``audit`` section (see the module docstring)."""
    entries = audit_entries_bearing_on(organization_id=organization.pk, start=start, end=end)
    listed = [dict(row) for row in AuditEntrySerializer(entries, many=True).data]
    query = {"organization": organization.slug, "period_start": start.isoformat(), "period_end": end.isoformat()}
    return {
        "entries_count": len(listed),
        "sha256": audit_digest(listed),
        "href": f"{reverse('audit')}?{urlencode(query)}",
        "entries": listed if may_change(user=user, organization=organization, capability=Capability.GOVERNANCE)
        else None,
        "note": AUDIT_NOTE,
    }  # fmt: skip


def audit_metric_rows(section: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The section as ``(metric, value)`` pairs for a CSV export: its figures, then ``audit:<id>:<field>`` for
    each listed entry (before and after as JSON)."""
    for name in ("entries_count", "sha256", "href"):
        yield f"audit:{name}", section[name]
    for entry in section["entries"] or []:
        for name in AUDIT_COLUMNS[1:]:
            value = entry[name]
            yield f"audit:{entry['id']}:{name}", json.dumps(value, sort_keys=True) if isinstance(value, dict) else value
