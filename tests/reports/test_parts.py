"""Ledger parts: the lines summed once at a fine grain add up to what each report's own query gives."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import Q

from accounting.ledger import CurrencyMismatchError
from common.periods import Granularity
from reports.display import sustainability_output, usage_row_output
from reports.selectors import (
    BUCKET,
    GroupBy,
    UsageSpec,
    group_labels,
    ledger_parts,
    parts_sum,
    parts_total,
    report_row,
    report_rows,
    sustainability_report,
)
from reports.selectors.sustainability import (
    BASIS_SUMS,
    REPORT_ANNOTATIONS,
    REPORT_KEYS,
    sustainability_report_from,
)
from scope2.basis import basis_of_located, stored_basis
from tests.helpers.reports import END, START

pytestmark = pytest.mark.django_db


def assert_same(rows, expected, output):
    """As shown, always; to the last digit on PostgreSQL (SQLite sums decimals as doubles: ~15 digits).

    Parts hold sums: a usage row's trace of sources (test_usage_trace) is the report's own, left out here.
    """
    expected = [untraced(row) for row in expected]
    assert [output(r) for r in rows] == [output(r) for r in expected]
    if connection.vendor == "postgresql":
        assert rows == expected


def untraced(row):
    if dataclasses.is_dataclass(row) and hasattr(row, "location_sources"):
        return dataclasses.replace(row, embodied_sources=None, location_sources=None)
    return row


def fine_parts(org, **options):
    return ledger_parts(
        organization_ids=[org.pk],
        start=START,
        end=END,
        keys=("fleet_id", "gpu_model", "site_id", "node__tenure"),
        granularity=Granularity.HOUR,
        **options,
    )


def test_parts_per_fleet_and_day_add_up_to_the_usage_reports_rows(fleets, org_a):
    parts = fine_parts(org_a)
    spec = UsageSpec(
        organization_ids=[org_a.pk], start=START, end=END, granularity=Granularity.DAY, group_by=GroupBy.FLEET
    )
    daily = report_rows(spec=spec)

    labels = group_labels(GroupBy.FLEET, [org_a.pk])
    per_day = parts_sum(parts, lambda p: (p.key[BUCKET].replace(hour=0), p.key["fleet_id"]))
    rebuilt = [
        report_row(sums, start=START, end=END, granularity=Granularity.DAY, bucket=day, group_key=fleet, labels=labels)
        for (day, fleet), sums in per_day.items()
    ]

    assert len(parts) == 6  # 3 hours x 2 fleets
    assert_same(rebuilt, daily, usage_row_output)


def test_all_parts_add_up_to_the_total_row_exactly(fleets, org_a):
    spec = UsageSpec(
        organization_ids=[org_a.pk], start=START, end=END, granularity=Granularity.TOTAL, group_by=GroupBy.NONE
    )
    (total,) = report_rows(spec=spec)

    rebuilt = report_row(parts_total(fine_parts(org_a)), start=START, end=END, granularity=Granularity.TOTAL)

    assert_same([rebuilt], [total], usage_row_output)


def test_no_lines_no_parts_and_no_total(org_a):
    assert fine_parts(org_a) == []
    assert parts_total([]) is None


def test_money_of_two_currencies_is_never_added(fleets, org_a):
    fleets.rtx.site.currency = "EUR"
    fleets.rtx.site.save()
    from accounting.node_hour_lines import ledger_node_hours_compute
    from tests.helpers.reports import HOURS

    ledger_node_hours_compute(node_id=fleets.rtx.pk, hour_starts=HOURS)
    parts = fine_parts(org_a)

    assert {p.sums.totals.currency for p in parts} == {"USD", "EUR"}
    with pytest.raises(CurrencyMismatchError):
        parts_total(parts)
    carbon = fine_parts(org_a, money=False)  # carbon, energy and tokens add across currencies
    assert parts_total(carbon).totals.facility_kwh == sum(p.sums.totals.facility_kwh for p in parts)


def test_extra_aggregates_come_with_each_part(fleets, org_a):
    from django.db.models import Count

    parts = fine_parts(org_a, extra={"s_market_lines": Count("id", filter=Q(market_co2e_g__isnull=False))})

    assert sorted(p.extra["s_market_lines"] for p in parts) == [0, 0, 0, 1, 1, 1]  # the H100 site has a factor


def test_the_sustainability_report_from_finer_parts_is_the_apis_report(fleets, org_a):
    parts = ledger_parts(
        organization_ids=[org_a.pk],
        start=START,
        end=END,
        keys=(*REPORT_KEYS, "fleet_id", "gpu_model", "site__grid_zone"),
        granularity=Granularity.DAY,
        money=False,
        annotations=REPORT_ANNOTATIONS,
        extra=BASIS_SUMS,
    )

    from_parts = sustainability_report_from(parts, organization_id=org_a.pk, start=START, end=END)

    api = sustainability_report(organization_id=org_a.pk, start=START, end=END)
    # Everything but the per-hour exports (grid, data quality), which the API reads with more queries.
    totals_only = dataclasses.replace(api, grid_hours=(), quality_hours=())
    assert_same([from_parts], [totals_only], lambda r: sustainability_output(r, org_a))
    # The lines' own basis from the parts' sums, as its own query reads it.
    assert from_parts.located_kwh is not None and api.located_kwh is not None and api.located_kwh[0] > 0
    basis = stored_basis(organization_id=org_a.pk, start=START, end=END)
    assert basis_of_located(*from_parts.located_kwh) == basis_of_located(*api.located_kwh) == basis
    assert [(h.zone, h.facility_kwh) for h in api.grid_hours] == [("US-CAL-CISO", Decimal("3.12"))] * 3
