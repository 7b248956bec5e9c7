"""The sustainability report: one organization's Scope 2, embodied carbon, energy and data quality."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import BooleanField, Count, ExpressionWrapper, Max, Q, Sum

from accounting.ledger.units import S_PER_H, ZERO
from grid.intensity import DIRECT
from reports.aggregates import (
    LOCATION_UNKNOWN,
    UNPRICED_WITH_TELEMETRY,
    RowsAggregate,
    amount_sum,
    ledger_sums_from,
    rows_aggregates,
    same_over_site_hours,
)
from reports.factors import FactorOrigin, location_factor_source, market_factor_source
from reports.metrics import GridQuality, LedgerSums, grid_kind
from reports.selectors.lines import ledger_rows, site_hours_serve
from reports.selectors.parts import LedgerPart, ledger_parts, parts_sum, parts_total


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
class GridHour:
    """The grid intensity one zone-hour's lines were weighed with, where it came from, and the energy it weighed.

    ``kind``: live, upload, annual (the average standing in), simulated or unknown (``grid_kind``).
    """

    zone: str
    hour_start: datetime
    gco2e_per_kwh: Decimal | None
    source: str
    kind: str
    facility_kwh: Decimal


@dataclass(frozen=True)
class QualityHour:
    """One UTC hour's data quality over the organization's nodes, in node-hours (not GPU-hours).

    ``held_h``: node-hours held; ``measured_h``: time the samples covered (at most the max gap apart);
    ``bridged_h``: telemetry gaps a cumulative counter carried on across (counted in full);
    ``missing_h``: held time neither measured nor bridged (what no counter proves);
    ``unpriced_hours``: node-hours with telemetry but no price, asset or tariff in force.
    The hours add up to the report's totals.
    """

    hour_start: datetime
    held_h: Decimal
    measured_h: Decimal
    bridged_h: Decimal
    unpriced_hours: int

    @property
    def missing_h(self) -> Decimal:
        return max(self.held_h - self.measured_h - self.bridged_h, ZERO)


@dataclass(frozen=True)
class SustainabilityReport:
    """One organization's carbon over ``[start, end)``: ``sums`` (carbon, energy, tokens; no money),
    how its location intensity was known (``grid``), every factor source used, and each zone-hour's
    intensity (``grid_hours``, for the export) and each hour's measured, bridged and missing time
    (``quality_hours``); ``embodied_g_by_model``: embodied carbon (central, g) per GPU model, when the
    parts it was added from were keyed by model; ``located_kwh``: the facility kWh of the lines with a location
    figure, and of those on the direct basis, when the parts carried ``BASIS_SUMS`` (the basis of the lines'
    own figures, ``scope2.basis.stored_basis``, without a query of its own)."""

    organization_id: int
    start: datetime
    end: datetime
    sums: LedgerSums
    grid: GridQuality
    factors: tuple[FactorUse, ...]
    grid_hours: tuple[GridHour, ...] = ()
    quality_hours: tuple[QualityHour, ...] = ()
    embodied_g_by_model: Mapping[str, Decimal] = dataclasses.field(default_factory=dict)
    located_kwh: tuple[Decimal, Decimal] | None = None


# The report's figures are sums over these groups of lines: by the kind of location intensity each
# line was weighed with (hourly, annual stand-in, none) and by the factor sources used.
REPORT_KEYS = ("location_unknown", "location_is_fallback", "location_source", "market_source")
REPORT_ANNOTATIONS = {"location_unknown": ExpressionWrapper(LOCATION_UNKNOWN, output_field=BooleanField())}
# Summed beside the report's parts (``ledger_parts``' extra): the facility kWh with a location figure, and of
# those on the direct basis (``SustainabilityReport.located_kwh``).
_LOCATED = Q(location_co2e_g__isnull=False)
BASIS_SUMS = {
    "s_located_kwh": same_over_site_hours(amount_sum("facility_kwh", where=_LOCATED)),
    "s_located_direct_kwh": same_over_site_hours(amount_sum("facility_kwh", where=_LOCATED & Q(location_basis=DIRECT))),
}


def sustainability_report(*, organization_id: int, start: datetime, end: datetime) -> SustainabilityReport:
    """Scope 2 (location and market based), embodied (Scope 3 share), energy, PUE, SCI and data quality.

    Two scans of the period's lines: the lines summed per ``REPORT_KEYS`` and GPU model (a handful of
    groups), added here; and per zone-hour and intensity source, each hour's intensity and data quality
    (each hour's quality the sum of its zone-hours').
    """
    parts = ledger_parts(
        organization_ids=[organization_id],
        start=start,
        end=end,
        keys=(*REPORT_KEYS, "gpu_model"),
        money=False,
        annotations=REPORT_ANNOTATIONS,
        site_hour_annotations=True,  # whether a sum is null: the same for a site-hour's row as for its lines
        extra=BASIS_SUMS,
    )
    report = sustainability_report_from(parts, organization_id=organization_id, start=start, end=end)
    grid, quality = zone_hours(organization_id=organization_id, start=start, end=end)
    return dataclasses.replace(report, grid_hours=grid, quality_hours=quality)


# Summed per zone-hour and source for its grid intensity (``zone_hours``).
GRID_SUMS = {
    "s_gco2e_per_kwh": Max("location_gco2e_per_kwh"),
    "s_location_co2e_g": amount_sum("location_co2e_g"),
    "s_facility_kwh": amount_sum("facility_kwh"),
}


# Summed per group for each hour's data quality (``quality_hours``, ``zone_hours``), over lines or site-hours.
QUALITY_SUMS = {
    "s_held_h": same_over_site_hours(amount_sum("held_h")),
    "s_observed_s": same_over_site_hours(amount_sum("observed_s")),
    "s_bridged_s": same_over_site_hours(amount_sum("bridged_s")),
    "s_unpriced_hours": RowsAggregate(Count("id", filter=UNPRICED_WITH_TELEMETRY), Sum("unpriced_hours")),
}
_ZONE_HOUR_KEYS = ("site__grid_zone", "hour_start", "location_source", "location_is_fallback")


def quality_hours(*, organization_id: int, start: datetime, end: datetime) -> tuple[QualityHour, ...]:
    """Each UTC hour with ledger lines: node-hours held, measured, bridged (and so missing), and unpriced, by hour."""
    site_hours = site_hours_serve(organization_ids=[organization_id], start=start, end=end, keys=["hour_start"])
    rows = ledger_rows(organization_ids=[organization_id], start=start, end=end, site_hours=site_hours)
    sums = rows_aggregates(QUALITY_SUMS, site_hours=site_hours)
    return _quality_hours_from(rows.values("hour_start").annotate(**sums).order_by())


def zone_hours(
    *, organization_id: int, start: datetime, end: datetime
) -> tuple[tuple[GridHour, ...], tuple[QualityHour, ...]]:
    """The report's ``grid_hours`` and ``quality_hours``, from one query grouped by zone, hour and source.

    Grid hours: each zone-hour's grid intensity (g/kWh), its source and kind, and the facility kWh it
    weighed, by zone and hour; lines of one zone-hour may differ (an organization's upload covers only
    its own sites): one entry each. Quality hours: as ``quality_hours``, each hour's the sum of its rows'.
    Read from the lines' site-hours where they are kept (``accounting.site_hours``).
    """
    site_hours = site_hours_serve(organization_ids=[organization_id], start=start, end=end, keys=_ZONE_HOUR_KEYS)
    lines = ledger_rows(organization_ids=[organization_id], start=start, end=end, site_hours=site_hours)
    rows = list(
        lines.values(*_ZONE_HOUR_KEYS)
        .annotate(**GRID_SUMS, **rows_aggregates(QUALITY_SUMS, site_hours=site_hours))
        .order_by("site__grid_zone", "hour_start", "location_source")
    )
    return _grid_hours_from(rows), _quality_hours_from(rows)


def _quality_hours_from(rows: Iterable[Mapping[str, Any]]) -> tuple[QualityHour, ...]:
    """Each hour's quality: the ``QUALITY_SUMS`` of ``rows`` (any grouping that includes the hour) added per hour."""
    held: dict[datetime, list[Decimal]] = {}
    for row in rows:
        sums = held.setdefault(row["hour_start"], [ZERO, ZERO, ZERO, ZERO])
        sums[0] += row["s_held_h"] or ZERO
        sums[1] += row["s_observed_s"] or ZERO
        sums[2] += row["s_bridged_s"] or ZERO
        sums[3] += row["s_unpriced_hours"] or 0
    return tuple(
        QualityHour(
            hour_start=hour,
            held_h=held_h,
            measured_h=observed_s / S_PER_H,
            bridged_h=bridged_s / S_PER_H,
            unpriced_hours=int(unpriced),
        )
        for hour, (held_h, observed_s, bridged_s, unpriced) in sorted(held.items())
    )


def _grid_hours_from(rows: Iterable[Mapping[str, Any]]) -> tuple[GridHour, ...]:
    return tuple(
        GridHour(
            zone=row["site__grid_zone"],
            hour_start=row["hour_start"],
            gco2e_per_kwh=row["s_gco2e_per_kwh"],
            source=row["location_source"],
            kind=grid_kind({**row, "location_co2e_g": row["s_location_co2e_g"]}),
            facility_kwh=row["s_facility_kwh"] or ZERO,
        )
        for row in rows
    )


def sustainability_report_from(
    parts: list[LedgerPart], *, organization_id: int, start: datetime, end: datetime
) -> SustainabilityReport:
    """The report of the lines in ``parts``: carbon-only parts keyed by at least ``REPORT_KEYS``.

    A page keys them finer for its charts and gets the same report as the API.
    """
    sums = parts_total(parts) or ledger_sums_from({}, currency=None)
    location = {
        kind: _kwh_and_h(p for p in parts if _location_kind(p) == kind) for kind in ("hourly", "annual", "unknown")
    }
    grid = GridQuality(
        hourly_facility_kwh=location["hourly"][0],
        annual_facility_kwh=location["annual"][0],
        unknown_facility_kwh=sums.totals.location_unknown_facility_kwh,
        hourly_h=location["hourly"][1],
        annual_h=location["annual"][1],
        unknown_h=location["unknown"][1],
    )
    factors = _factor_uses(parts, "location_source") + _factor_uses(parts, "market_source")
    by_model = parts_sum((p for p in parts if "gpu_model" in p.key), lambda p: p.key["gpu_model"])
    embodied_g = {model: model_sums.totals.embodied_co2e_g.central for model, model_sums in by_model.items()}
    return SustainabilityReport(
        organization_id, start, end, sums, grid, factors, embodied_g_by_model=embodied_g, located_kwh=_located(parts)
    )


def _located(parts: list[LedgerPart]) -> tuple[Decimal, Decimal] | None:
    """The parts' ``BASIS_SUMS`` added up (exact ``Decimal`` sums); ``None`` unless every part carries them."""
    if not all(name in part.extra for part in parts for name in BASIS_SUMS):
        return None
    located = sum((part.extra["s_located_kwh"] or ZERO for part in parts), ZERO)
    direct = sum((part.extra["s_located_direct_kwh"] or ZERO for part in parts), ZERO)
    return located, direct


def _location_kind(part: LedgerPart) -> str:
    if part.key["location_unknown"]:
        return "unknown"
    return "annual" if part.key["location_is_fallback"] else "hourly"


def _kwh_and_h(parts: Iterable[LedgerPart]) -> tuple[Decimal, Decimal]:
    """Facility kWh and node-hours held of the parts."""
    kwh, held_h = ZERO, ZERO
    for part in parts:
        kwh += part.sums.totals.facility_kwh
        held_h += part.sums.totals.held_h
    return kwh, held_h


def _factor_uses(parts: list[LedgerPart], field: str) -> tuple[FactorUse, ...]:
    scope, described = (
        ("location", location_factor_source) if field == "location_source" else ("market", market_factor_source)
    )
    sources = sorted({part.key[field] for part in parts} - {""})
    uses = []
    for name in sources:
        source = described(name)
        facility_kwh, held_h = _kwh_and_h(p for p in parts if p.key[field] == name)
        uses.append(
            FactorUse(
                scope=scope,
                source=name,
                origin=source.origin,
                licence=source.licence,
                attribution=source.attribution,
                facility_kwh=facility_kwh,
                held_h=held_h,
            )
        )
    return tuple(uses)
