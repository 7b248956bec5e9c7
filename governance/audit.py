"""The audit trail: every input change kept as who, when, which row, and its fields before and after."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import DecimalField, Model, QuerySet
from django.forms.models import model_to_dict

from governance.models import AuditEntry
from governance.period_relevance import bears_on

SKIPPED_FIELDS = frozenset({"evidence_file"})  # bytes: the file's name and SHA-256 are kept instead


def _as_stored(obj: Model, name: str, value: Any) -> Any:
    """A decimal as its column keeps it ("3.00" given to a 6-place field reads "3.000000"), so that a row
    not yet re-read compares and shows as the stored one."""
    field = obj._meta.get_field(name)
    if isinstance(value, Decimal) and isinstance(field, DecimalField) and field.decimal_places is not None:
        return value.quantize(Decimal(1).scaleb(-field.decimal_places))
    return value


def snapshot(obj: Model | None, *, fields: Iterable[str] | None = None) -> dict[str, Any] | None:
    """The row's own fields as JSON values (decimals and instants as strings), or ``None`` for no row."""
    if obj is None:
        return None
    values = model_to_dict(obj, fields=list(fields) if fields is not None else None)
    values = {name: _as_stored(obj, name, value) for name, value in values.items() if name not in SKIPPED_FIELDS}
    values["id"] = obj.pk
    return json.loads(json.dumps(values, cls=DjangoJSONEncoder))


def audit_record(
    *,
    organization_id: int,
    user: Any,
    subject: str,
    object_id: int,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    at: datetime,
    ledger_hours_reopened: int = 0,
) -> AuditEntry:
    authenticated = getattr(user, "is_authenticated", False)
    return AuditEntry.objects.create(
        organization_id=organization_id,
        user=user if authenticated else None,
        username=user.get_username() if authenticated else "",
        at=at,
        action=_action(before=before, after=after),
        subject=subject,
        object_id=object_id,
        before=before,
        after=after,
        ledger_hours_reopened=ledger_hours_reopened,
    )


def _action(*, before: dict[str, Any] | None, after: dict[str, Any] | None) -> AuditEntry.Action:
    """What a change did, read from its snapshots: none after is a delete, none before a create."""
    if after is None:
        return AuditEntry.Action.DELETE
    return AuditEntry.Action.CREATE if before is None else AuditEntry.Action.UPDATE


def audit_entries(
    *, organization_id: int, start: datetime | None = None, end: datetime | None = None
) -> QuerySet[AuditEntry]:
    entries = AuditEntry.objects.filter(organization_id=organization_id)
    if start is not None:
        entries = entries.filter(at__gte=start)
    if end is not None:
        entries = entries.filter(at__lt=end)
    return entries


def entries_bearing_on(entries: Iterable[AuditEntry], *, start: datetime, end: datetime) -> list[AuditEntry]:
    """The changes among ``entries`` that bear on the figures of ``[start, end)`` (``bearing.bears_on``), in
    their order. Filtered here, not in SQL: the periods live in each entry's JSON, and an organization's trail
    is small (a row per change a person made)."""
    period = (start, end)
    return [entry for entry in entries if bears_on(subject=entry.subject, before=entry.before, after=entry.after,
                                                   period=period)]  # fmt: skip


def audit_entries_bearing_on(*, organization_id: int, start: datetime, end: datetime) -> list[AuditEntry]:
    """The organization's changes bearing on ``[start, end)``, newest first."""
    return entries_bearing_on(audit_entries(organization_id=organization_id), start=start, end=end)
