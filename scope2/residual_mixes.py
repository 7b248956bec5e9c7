"""Residual-mix factors an organization holds (e.g. from the AIB European Residual Mixes it licensed).

Wattledger ships no residual mix (``scope2/data/README.md``):
an organization loads the figures it holds, per zone and year, from a CSV file
(``zone,year,gco2e_per_kwh,source``) through ``POST /api/v1/residual-mixes/upload/``
or ``manage.py load_residual_mixes``, or enters them in the Django admin. Each
row is saved through ``residual_mix_save``: a zone and year already held is
replaced, a figure serving a locked period is refused (a year's figure serves its year and the later ones up
to the next year held, as the latest published year not after the report year is used), and every change is
audited (``subject="residual_mix"``). Residual mixes weigh on the Scope 2
report (computed when read), not on stored ledger lines: no hours re-open.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from rest_framework import serializers

from accounting.inputs.services import InputChange, validated
from accounting.inputs.uploads import UploadResult, csv_rows, rows_save
from fleets.models import Organization
from governance.audit import audit_record, snapshot
from governance.intervals import Window
from governance.locks import lock_check
from scope2.models import ResidualMixFactor

RESIDUAL_MIX_COLUMNS = {"zone", "year", "gco2e_per_kwh", "source"}


class ResidualMixCsvSerializer(serializers.Serializer):
    zone = serializers.RegexField(r"^[A-Za-z]{2}(-[A-Za-z0-9]+)*$", max_length=64, help_text="zone or country: DE")
    year = serializers.IntegerField(min_value=1990, max_value=2100)
    gco2e_per_kwh = serializers.DecimalField(max_digits=9, decimal_places=3, min_value=0)
    source = serializers.CharField(max_length=200, help_text="publication, version and table")  # type: ignore[assignment]


def _used_from(row: ResidualMixFactor, year: int) -> Window:
    """The report years a figure of ``year`` serves: the latest published year not after the report year is
    used (``scope2.selectors.residual_mix_for``), so from ``year`` up to the next year held for the zone."""
    later = (
        ResidualMixFactor.objects.filter(organization_id=row.organization_id, zone=row.zone, year__gt=year)
        .exclude(pk=row.pk)
        .order_by("year")
        .values_list("year", flat=True)
        .first()
    )
    return (datetime(year, 1, 1, tzinfo=UTC), None if later is None else datetime(later, 1, 1, tzinfo=UTC))


def residual_mix_save(*, row: ResidualMixFactor, user: Any, now: datetime) -> InputChange:
    """Save a residual-mix row whose fields are set; refused if its year (before or after) is locked."""
    with transaction.atomic():
        Organization.objects.select_for_update().filter(pk=row.organization_id).first()
        row.zone = row.zone.upper()
        if not row.pk:  # a zone and year already held: the new figure replaces it
            held = ResidualMixFactor.objects.filter(
                organization_id=row.organization_id, zone=row.zone, year=row.year
            ).first()  # fmt: skip
            if held is not None:
                held.gco2e_per_kwh, held.source, row = row.gco2e_per_kwh, row.source, held
        stored = ResidualMixFactor.objects.filter(pk=row.pk).first() if row.pk else None
        validated(row)
        years = [_used_from(row, row.year)] + ([_used_from(row, stored.year)] if stored is not None else [])
        lock_check(organization_id=row.organization_id, windows=years)
        row.save()
        audit_record(
            organization_id=row.organization_id, user=user, subject="residual_mix", object_id=row.pk,
            before=snapshot(stored), after=snapshot(row), at=now,
        )  # fmt: skip
    return InputChange(row, 0)


def residual_mix_delete(*, row: ResidualMixFactor, user: Any, now: datetime) -> InputChange:
    with transaction.atomic():
        lock_check(organization_id=row.organization_id, windows=[_used_from(row, row.year)])
        before, row_id = snapshot(row), row.pk
        row.delete()
        audit_record(
            organization_id=row.organization_id, user=user, subject="residual_mix", object_id=row_id,
            before=before, after=None, at=now,
        )  # fmt: skip
    return InputChange(row, 0)


def residual_mixes_load(*, organization: Organization, content: bytes, user: Any, now: datetime) -> UploadResult:
    """Load a CSV file of ``zone,year,gco2e_per_kwh,source``: every row saved, or none with the reasons."""

    def save(data: dict[str, Any]) -> InputChange:
        return residual_mix_save(row=ResidualMixFactor(organization=organization, **data), user=user, now=now)

    rows: Iterable[tuple[int, dict[str, str]]] = csv_rows(content, required=RESIDUAL_MIX_COLUMNS)
    return rows_save(iter(rows), serializer=ResidualMixCsvSerializer, save=save)
