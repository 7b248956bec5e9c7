"""Reads: an organization's instruments, and its Scope 2 per site over a period (dual reporting)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Case, Count, DecimalField, F, Q, QuerySet, Sum, Value, When
from rest_framework.exceptions import NotFound

from fleets.models import Site
from fleets.selectors import organizations_for_user
from reports.selectors.lines import ledger_rows, site_hours_serve
from scope2.allocation import (
    KWH_PER_MWH,
    ZERO,
    Instrument,
    ResidualMix,
    SiteAllocation,
    SiteHour,
)
from scope2.basis import BasisCoverage, basis_by_site, scope2_location_g
from scope2.boundary import ElectricityScope
from scope2.cfe import CfeScore, cfe_annual, cfe_hourly
from scope2.inventory import electricity_filters_since
from scope2.models import ContractualInstrument, InstrumentHour, ResidualMixFactor, Scope2Disclosure
from scope2.quality import Evidence
from scope2.residual import grid_cfe_share, shipped_residual_mix
from scope2.year_to_date import period_allocate, year_start


def instruments_for_user(*, user: Any) -> QuerySet[ContractualInstrument]:
    return (
        ContractualInstrument.objects.filter(organization__in=organizations_for_user(user=user))
        .select_related("site", "organization")
        .defer("evidence_file")
        .annotate(hourly_profile_hours=Count("hours"))
    )


def instrument_for_user(*, user: Any, instrument_id: int) -> ContractualInstrument:
    """One of the user's organizations' instruments; 404 for anyone else's (existence is not disclosed)."""
    instrument = instruments_for_user(user=user).filter(pk=instrument_id).first()
    if instrument is None:
        raise NotFound(f"no instrument {instrument_id} among yours")
    return instrument


@dataclass
class SiteScope2:
    site: Site
    allocation: SiteAllocation  # the figure the organization discloses (``matching``)
    hourly: SiteAllocation  # hourly matching where an instrument has a profile, annual otherwise
    annual: SiteAllocation  # every instrument matched annually (the 2015 Guidance)
    residual_mix: ResidualMix | None
    cfe_hourly: CfeScore
    cfe_annual: CfeScore
    grid_cfe_source: str | None


@dataclass
class Scope2Report:
    """Scope 2 of the lines whose electricity is the organization's Scope 2 (``scope2.boundary``);
    ``line_filters``: each electricity scope's filter on the period's ledger lines."""

    organization_id: int
    start: datetime
    end: datetime
    sites: list[SiteScope2]
    line_filters: dict[ElectricityScope, Q] = field(default_factory=dict)
    bases: dict[int, BasisCoverage] = field(default_factory=dict)  # per site: the factor basis of its Scope 2
    matching: str = Scope2Disclosure.Matching.ANNUAL.value  # the disclosed market-based figure's matching


def _site_hours(
    organization_id: int, start: datetime, end: datetime, scope2: Q, by_status: Q | None
) -> dict[int, list[SiteHour]]:
    """The Scope 2 lines (``scope2``) summed per site-hour: from the lines' site-hours where the filter is one on
    the electricity status (``by_status``) and they are kept, else from the lines."""
    located = Case(
        When(location_co2e_g__isnull=False, then=F("facility_kwh")),
        default=Value(ZERO),
        output_field=DecimalField(max_digits=28, decimal_places=12),
    )
    site_hours = by_status is not None and site_hours_serve(
        organization_ids=[organization_id], start=start, end=end, keys=["site_id", "hour_start"]
    )
    lines = ledger_rows(organization_ids=[organization_id], start=start, end=end, site_hours=site_hours)
    rows = (
        lines.filter(by_status if site_hours else scope2)
        .values("site_id", "hour_start")
        # Scope 2 takes the direct factor where the hour has one (scope2.basis)
        .annotate(kwh=Sum("facility_kwh"), location_g=scope2_location_g(), location_kwh=Sum(located))
        .order_by("site_id", "hour_start")
        .values_list("site_id", "hour_start", "kwh", "location_g", "location_kwh")
    )
    by_site: dict[int, list[SiteHour]] = defaultdict(list)
    for site_id, hour_start, kwh, location_g, location_kwh in rows:  # a year's hours per site: tuples, not dicts
        by_site[site_id].append(SiteHour(hour_start, kwh, location_g or ZERO, location_kwh or ZERO))
    return by_site


def _instruments(organization_id: int, start: datetime, end: datetime) -> dict[int, list[Instrument]]:
    rows = list(
        ContractualInstrument.objects.filter(
            organization_id=organization_id, delivery_start__lt=end, delivery_end__gt=start
        ).defer("evidence_file")
    )
    profiles: dict[int, dict[datetime, Decimal]] = defaultdict(dict)
    for instrument_id, hour, mwh in InstrumentHour.objects.filter(
        instrument__in=rows, hour_start__gte=start, hour_start__lt=end
    ).values_list("instrument_id", "hour_start", "mwh"):
        profiles[instrument_id][hour] = mwh * KWH_PER_MWH
    profiled = set(InstrumentHour.objects.filter(instrument__in=rows).values_list("instrument_id", flat=True))
    by_site: dict[int, list[Instrument]] = defaultdict(list)
    for row in rows:
        by_site[row.site_id].append(_instrument(row, profiles[row.pk] if row.pk in profiled else None))
    return by_site


def _instrument(row: ContractualInstrument, profile_kwh: dict[datetime, Decimal] | None) -> Instrument:
    return Instrument(
        id=row.pk,
        kind=row.kind,
        name=row.name,
        volume_kwh=None if row.volume_mwh is None else row.volume_mwh * KWH_PER_MWH,
        share=row.share_of_consumption,
        delivery_start=row.delivery_start,
        delivery_end=row.delivery_end,
        vintage_year=row.vintage_year,
        generation_zone=row.generation_zone,
        technology=row.technology,
        stated_factor=row.emission_factor_gco2e_per_kwh,
        evidence=Evidence(
            registry=row.registry,
            certificate_id_from=row.certificate_id_from,
            certificate_id_to=row.certificate_id_to,
            cancellation_date=row.cancellation_date,
            beneficiary=row.beneficiary,
            consumption_start=row.consumption_period_start,
            consumption_end=row.consumption_period_end,
            reference=row.evidence_reference,
            file_attached=bool(row.evidence_file_sha256),
            purchase_type=row.purchase_type,
            attributes_exclusive=row.attributes_exclusive,
            supplier_rate_delivered_basis=row.supplier_rate_delivered_basis,
        ),
        profile_kwh=profile_kwh,
        biogenic_g_per_kwh=row.biogenic_co2_g_per_kwh,
    )


def residual_mix_for(*, organization_id: int, zone: str, year: int) -> ResidualMix | None:
    """The latest published year not after ``year`` (issuers publish year Y in the course of Y+1): the
    organization's own figure (zone, then its country), else the shipped table's; its year is stated."""
    for key in (zone.upper(), zone.upper()[:2]):
        row = (
            ResidualMixFactor.objects.filter(organization_id=organization_id, zone=key, year__lte=year)
            .order_by("-year")
            .first()
        )
        if row is not None:
            return ResidualMix(row.gco2e_per_kwh, row.source, row.year)
    return shipped_residual_mix(zone=zone, year=year)


def disclosed_matching(*, organization_id: int) -> str:
    """The matching of the market-based figure the organization discloses: annual without a row."""
    row = Scope2Disclosure.objects.filter(organization_id=organization_id).first()
    return row.market_matching if row else Scope2Disclosure.Matching.ANNUAL.value


def _site_scope2(
    site: Site, hours: list[SiteHour], instruments: list[Instrument], start: datetime, end: datetime, matching: str
) -> SiteScope2:
    residuals: dict[int, ResidualMix | None] = {}

    def residual_of(year: int) -> ResidualMix | None:
        if year not in residuals:
            residuals[year] = residual_mix_for(organization_id=site.organization_id, zone=site.grid_zone, year=year)
        return residuals[year]

    common: dict[str, Any] = dict(
        hours=hours, instruments=instruments, site_zone=site.grid_zone, start=start, end=end, residual_of=residual_of
    )
    hourly = period_allocate(**common, matching="auto")
    # Matching differs only for an instrument with an hourly profile (``scope2.allocation._use``): without one,
    # both matchings are the one allocation.
    profiled = any(instrument.profile_kwh is not None for instrument in instruments)
    annual = period_allocate(**common, matching="annual") if profiled else hourly
    grid = grid_cfe_share(zone=site.grid_zone, year=start.year) if site.grid_zone else None
    share = grid[0] if grid else None
    consumed = {hour.hour_start: hour.facility_kwh for hour in hours if start <= hour.hour_start < end}
    annual_cfe_kwh = sum((use.matched_kwh for use in annual.uses if use.carbon_free), ZERO)
    return SiteScope2(
        site=site,
        allocation=hourly if matching == Scope2Disclosure.Matching.HOURLY else annual,
        hourly=hourly,
        annual=annual,
        residual_mix=residual_of(start.year),
        cfe_hourly=cfe_hourly(consumption_kwh=consumed, contracted_kwh=hourly.hourly_carbon_free_kwh, grid_share=share),
        cfe_annual=cfe_annual(consumption_kwh=annual.consumption_kwh, contracted_kwh=annual_cfe_kwh, grid_share=share),
        grid_cfe_source=grid[1] if grid else None,
    )


def scope2_report(*, organization_id: int, start: datetime, end: datetime) -> Scope2Report:
    """Per site with Scope 2 consumption or instruments in [start, end): both methods, both matchings (the
    disclosed one in ``allocation``), the instruments, the CFE score. A period is the year-to-date slice of its
    year's allocation (``scope2.year_to_date``), so the hours and instruments are read from 1 January. Nodes
    whose electricity is Scope 3 (rented with power in the rent) are left out: not the organization's purchased
    electricity, so no instrument of its can cover them."""
    since = year_start(start.year)
    filters = electricity_filters_since(organization_id=organization_id, since=since, start=start, end=end)
    scope_2 = ElectricityScope.SCOPE_2
    hours = _site_hours(organization_id, since, end, filters.since[scope_2], filters.since_by_status[scope_2])
    instruments = _instruments(organization_id, since, end)
    in_period = {site_id for site_id, rows in hours.items() if any(start <= row.hour_start for row in rows)}
    in_period |= {site_id for site_id, rows in instruments.items()
                  if any(row.delivery_start < end and start < row.delivery_end for row in rows)}  # fmt: skip
    matching = disclosed_matching(organization_id=organization_id)
    sites = Site.objects.filter(organization_id=organization_id, pk__in=in_period)
    return Scope2Report(
        organization_id,
        start,
        end,
        [
            _site_scope2(site, hours.get(site.pk, []), instruments.get(site.pk, []), start, end, matching)
            for site in sites
        ],
        filters.period,
        basis_by_site(
            organization_id=organization_id,
            start=start,
            end=end,
            where=filters.period[scope_2],
            by_status=filters.period_by_status[scope_2],
        ),
        matching,
    )
