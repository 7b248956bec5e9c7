"""The sustainability report: one organization's Scope 2, embodied carbon, energy and data quality."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from accounting.models import NodeHourLedger
from accounting.reports.aggregates import (
    LOCATION_ANNUAL,
    LOCATION_HOURLY,
    LOCATION_UNKNOWN,
    amount_sum,
    ledger_sums,
    ledger_sums_from,
)
from accounting.reports.factors import FactorOrigin, location_factor_source, market_factor_source
from accounting.reports.metrics import GridQuality, LedgerSums
from accounting.reports.selectors.lines import ledger_lines


@dataclass(frozen=True)
class FactorUse:
    """An emission factor source used in the period, how much energy it weighed, and its licence.

    ``scope``: "location" (grid intensity) or "market" (the site's market factor).
    """

    scope: str
    source: str
    origin: FactorOrigin
    licence: str
    attribution: str
    facility_kwh: Decimal
    held_h: Decimal


@dataclass(frozen=True)
class SustainabilityReport:
    """One organization's carbon over ``[start, end)``: ``sums`` (carbon, energy, tokens; no money),
    how its location intensity was known (``grid``), and every factor source used."""

    organization_id: int
    start: datetime
    end: datetime
    sums: LedgerSums
    grid: GridQuality
    factors: tuple[FactorUse, ...]


def sustainability_report(*, organization_id: int, start: datetime, end: datetime) -> SustainabilityReport:
    """Scope 2 (location and market based), embodied (Scope 3 share), energy, PUE, SCI and data quality.

    Three queries: the sums, the location sources, the market sources.
    """
    lines = ledger_lines(organization_ids=[organization_id], start=start, end=end)
    values = lines.aggregate(
        **ledger_sums(money=False),
        s_grid_hourly_kwh=amount_sum("facility_kwh", where=LOCATION_HOURLY),
        s_grid_annual_kwh=amount_sum("facility_kwh", where=LOCATION_ANNUAL),
        s_grid_hourly_h=amount_sum("held_h", where=LOCATION_HOURLY),
        s_grid_annual_h=amount_sum("held_h", where=LOCATION_ANNUAL),
        s_grid_unknown_h=amount_sum("held_h", where=LOCATION_UNKNOWN),
    )
    sums = ledger_sums_from(values, currency=None)
    grid = GridQuality(
        hourly_facility_kwh=_decimal(values["s_grid_hourly_kwh"]),
        annual_facility_kwh=_decimal(values["s_grid_annual_kwh"]),
        unknown_facility_kwh=sums.totals.location_unknown_facility_kwh,
        hourly_h=_decimal(values["s_grid_hourly_h"]),
        annual_h=_decimal(values["s_grid_annual_h"]),
        unknown_h=_decimal(values["s_grid_unknown_h"]),
    )
    factors = _factor_uses(lines, "location_source") + _factor_uses(lines, "market_source")
    return SustainabilityReport(organization_id, start, end, sums, grid, factors)


def _factor_uses(lines: QuerySet[NodeHourLedger], field: str) -> tuple[FactorUse, ...]:
    rows = (
        lines.exclude(**{field: ""})
        .values(field)
        .annotate(s_kwh=amount_sum("facility_kwh"), s_h=amount_sum("held_h"))
        .order_by(field)
    )
    scope, described = (
        ("location", location_factor_source) if field == "location_source" else ("market", market_factor_source)
    )
    uses = []
    for row in rows:
        source = described(row[field])
        uses.append(
            FactorUse(
                scope=scope,
                source=row[field],
                origin=source.origin,
                licence=source.licence,
                attribution=source.attribution,
                facility_kwh=_decimal(row["s_kwh"]),
                held_h=_decimal(row["s_h"]),
            )
        )
    return tuple(uses)


def _decimal(value: Any) -> Decimal:
    return Decimal(0) if value is None else Decimal(value)
