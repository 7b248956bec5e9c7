"""An organization's intensity CSV, stored whole or not at all: lock-checked, the ledger marked, audited.

One place for the REST upload (``grid.api``) and ``manage.py import_grid_csv``.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from fleets.models import Organization
from governance.audit import audit_record
from governance.locks import lock_check
from grid.csv_upload import parse_intensity_csv
from grid.intensity import HourlyIntensity
from grid.signals import ledger_hours_marked
from grid.stored_intensity import SOURCE_NAME_PATTERN, intensity_store

HOUR = timedelta(hours=1)


def intensity_upload_save(
    *, organization: Organization, body: bytes, source_name: str, user: Any, now: datetime | None = None
) -> tuple[int, int]:
    """Store the file as ``csv:<source_name>``; return (hours stored, ledger hours re-opened).

    Raises ``CsvError`` (line-numbered problems), ``PeriodLocked`` (an hour inside
    a locked period: 409) or ``ValueError`` (a bad source name), nothing stored.
    """
    if not re.fullmatch(SOURCE_NAME_PATTERN, source_name):
        raise ValueError(f"source name {source_name!r}: 1-64 letters, digits, '.', '_' or '-', starting alphanumeric")
    started = now or timezone.now()
    values = parse_intensity_csv(body, source_name=source_name)
    with transaction.atomic():
        Organization.objects.select_for_update().filter(pk=organization.pk).first()
        # An uploaded hour inside a locked period would change the figures reported for it.
        lock_check(organization_id=organization.pk, windows=[(v.hour_start, v.hour_start + HOUR) for v in values])
        stored = intensity_store(values=values, organization=organization)
        reopened = ledger_hours_marked(since=started, now=timezone.now())
        _upload_audit(user, organization, source_name, body, values, stored, reopened)
    return stored, reopened


def _upload_audit(
    user: Any,
    organization: Organization,
    source_name: str,
    body: bytes,
    values: list[HourlyIntensity],
    stored: int,
    reopened: int,
) -> None:
    """The upload in the audit trail: who, when, which file (SHA-256), zones and hours, what it stored."""
    hours = sorted(value.hour_start for value in values)
    after = {
        "source_name": source_name, "file_sha256": hashlib.sha256(body).hexdigest(), "rows": len(values),
        "stored": stored, "zones": sorted({value.zone for value in values}),
        "first_hour": hours[0].isoformat() if hours else None, "last_hour": hours[-1].isoformat() if hours else None,
    }  # fmt: skip
    audit_record(
        organization_id=organization.pk, user=user, subject="grid_intensity_upload", object_id=0,
        before=None, after=after, at=timezone.now(), ledger_hours_reopened=reopened,
    )  # fmt: skip
