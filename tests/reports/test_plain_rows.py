"""The report's long per-hour lists are written as DRF's own serializer would write them, byte for byte."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from reports.display import quality_hour_output, sustainability_output
from reports.selectors.sustainability import QualityHour, sustainability_report
from reports.serializers import GridHourSerializer, QualityHourSerializer
from tests.helpers.reports import END, START

pytestmark = pytest.mark.django_db


def drf_serializer(plain: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The same serializer writing its rows with DRF's own ``Serializer.to_representation``, as before."""
    return type(f"Drf{plain.__name__}", (plain,), {"to_representation": serializers.Serializer.to_representation})


def rendered(serializer: type[serializers.Serializer], rows: list[dict]) -> bytes:
    return JSONRenderer().render(serializer(rows, many=True).data)


def test_grid_and_quality_hours_of_a_report_are_written_as_before(fleets, org_a):
    shown = sustainability_output(sustainability_report(organization_id=org_a.pk, start=START, end=END), org_a)

    for plain, rows in ((GridHourSerializer, shown["grid_hours"]), (QualityHourSerializer, shown["quality_hours"])):
        assert rows
        assert rendered(plain, rows) == rendered(drf_serializer(plain), rows)


def test_nulls_odd_values_and_offsets_are_written_as_before():
    hour = datetime(2026, 11, 1, 1, tzinfo=UTC)
    grid = [
        {"zone": "DE", "hour_start": hour, "gco2e_per_kwh": None, "source": "", "kind": "unknown", "facility_kwh": 0},
        {"zone": "FR", "hour_start": hour.astimezone(timezone(timedelta(hours=2))), "gco2e_per_kwh": 56.12,
         "source": "annual:FR", "kind": "annual", "facility_kwh": Decimal("1.123456789")},
        {"zone": None, "hour_start": hour, "gco2e_per_kwh": Decimal("1E+3"), "source": "x", "kind": "live",
         "facility_kwh": 1e-7},
    ]  # fmt: skip
    quality = [
        quality_hour_output(QualityHour(hour, Decimal("2"), Decimal("1.5"), Decimal("0.25"), 1)),
        quality_hour_output(QualityHour(hour + timedelta(hours=1), Decimal("0"), Decimal("0"), Decimal("0"), 0)),
        {"hour_start": hour, "held_h": None, "measured_h": 1, "bridged_h": 0.1, "missing_h": None,
         "unpriced_hours": Decimal("3")},
    ]  # fmt: skip

    assert rendered(GridHourSerializer, grid) == rendered(drf_serializer(GridHourSerializer), grid)
    assert rendered(QualityHourSerializer, quality) == rendered(drf_serializer(QualityHourSerializer), quality)


@pytest.mark.parametrize("granularity", ["hour", "day", "total"])
def test_usage_rows_are_written_as_before(fleets, org_a, granularity):
    from common.periods import Granularity
    from reports.display import usage_row_output
    from reports.selectors import GroupBy, UsageSpec, report_rows
    from reports.serializers import UsageRowSerializer

    spec = UsageSpec(
        organization_ids=[org_a.pk], start=START, end=END, granularity=Granularity(granularity), group_by=GroupBy.NODE
    )
    rows = [usage_row_output(row) for row in report_rows(spec=spec)]

    assert rows
    assert rendered(UsageRowSerializer, rows) == rendered(drf_serializer(UsageRowSerializer), rows)
