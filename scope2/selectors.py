"""Reads: an organization's instruments, and its Scope 2 per site over a period (dual reporting)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Case, Count, DecimalField, F, Q, QuerySet, Sum, Value, When
from rest_framework.exceptions import NotFound

from accounting.models import NodeHourLedger
from fleets.models import Site
from fleets.selectors import organizations_for_user
from scope2.allocation import (
    KWH_PER_MWH,
    ZERO,
    Instrument,
    ResidualMix,
    SiteAllocation,
    SiteHour,
    site_allocate,
)
from scope2.basis import BasisCoverage, basis_by_site, scope2_location_g
from scope2.boundary import ElectricityScope
from scope2.cfe import CfeScore, cfe_annual, cfe_hourly
from scope2.inventory import electricity_line_filters
from scope2.models import ContractualInstrument, InstrumentHour, ResidualMixFactor
from scope2.residual import grid_cfe_share, shipped_residual_mix


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
    allocation: SiteAllocation  # hourly matching where an instrument has a profile, annual otherwise
    annual: SiteAllocation  # every instrument matched annually: the figure beside it
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


def _site_hours(organization_id: int, start: datetime, end: datetime, scope2: Q) -> dict[int, list[SiteHour]]:
    located = Case(
        When(location_co2e_g__isnull=False, then=F("facility_kwh")),
        default=Value(ZERO),
        output_field=DecimalField(max_digits=28, decimal_places=12),
    )
    rows = (
        NodeHourLedger.objects.filter(
            scope2, organization_id=organization_id, hour_start__gte=start, hour_start__lt=end
        )
        .values("site_id", "hour_start")
        # Scope 2 takes the direct factor where the hour has one (scope2.basis)
        .annotate(kwh=Sum("facility_kwh"), location_g=scope2_location_g(), location_kwh=Sum(located))
        .order_by("site_id", "hour_start")
    )
    by_site: dict[int, list[SiteHour]] = defaultdict(list)
    for row in rows:
        by_site[row["site_id"]].append(
            SiteHour(row["hour_start"], row["kwh"], row["location_g"] or ZERO, row["location_kwh"] or ZERO)
        )
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
        has_evidence=bool(row.evidence_reference.strip() or row.evidence_file_sha256),
        profile_kwh=profile_kwh,
    )


def residual_mix_for(*, organization_id: int, zone: str, year: int) -> ResidualMix | None:
    """The organization's own figure (zone, then its country), else the shipped table's."""
    for key in (zone.upper(), zone.upper()[:2]):
        row = ResidualMixFactor.objects.filter(organization_id=organization_id, zone=key, year=year).first()
        if row is not None:
            return ResidualMix(row.gco2e_per_kwh, row.source)
    return shipped_residual_mix(zone=zone, year=year)


def _site_scope2(
    site: Site, hours: list[SiteHour], instruments: list[Instrument], start: datetime, end: datetime
) -> SiteScope2:
    residual = residual_mix_for(organization_id=site.organization_id, zone=site.grid_zone, year=start.year)
    common: dict[str, Any] = dict(
        hours=hours, instruments=instruments, site_zone=site.grid_zone, start=start, end=end, residual=residual
    )
    allocation, annual = site_allocate(**common), site_allocate(**common, matching="annual")
    grid = grid_cfe_share(zone=site.grid_zone, year=start.year) if site.grid_zone else None
    share = grid[0] if grid else None
    consumed = {hour.hour_start: hour.facility_kwh for hour in hours}
    annual_cfe_kwh = sum((use.matched_kwh for use in annual.uses if use.carbon_free), ZERO)
    return SiteScope2(
        site=site,
        allocation=allocation,
        annual=annual,
        residual_mix=residual,
        cfe_hourly=cfe_hourly(
            consumption_kwh=consumed, contracted_kwh=allocation.hourly_carbon_free_kwh, grid_share=share
        ),
        cfe_annual=cfe_annual(consumption_kwh=annual.consumption_kwh, contracted_kwh=annual_cfe_kwh, grid_share=share),
        grid_cfe_source=grid[1] if grid else None,
    )


def scope2_report(*, organization_id: int, start: datetime, end: datetime) -> Scope2Report:
    """Per site with Scope 2 consumption or instruments in [start, end): both methods, the instruments, the CFE
    score. Nodes whose electricity is Scope 3 (rented with power in the rent) are left out: not the
    organization's purchased electricity, so no instrument of its can cover them."""
    filters = electricity_line_filters(organization_id=organization_id, start=start, end=end)
    hours = _site_hours(organization_id, start, end, filters[ElectricityScope.SCOPE_2])
    instruments = _instruments(organization_id, start, end)
    sites = Site.objects.filter(organization_id=organization_id, pk__in=set(hours) | set(instruments))
    return Scope2Report(
        organization_id,
        start,
        end,
        [_site_scope2(site, hours.get(site.pk, []), instruments.get(site.pk, []), start, end) for site in sites],
        filters,
        basis_by_site(organization_id=organization_id, start=start, end=end, where=filters[ElectricityScope.SCOPE_2]),
    )
