"""The factor basis of the inventory's electricity figures: direct for Scope 2, lifecycle minus direct for Category 3.

GHG Protocol Scope 2 Guidance (2015), ch. 6 and table 6.1: Scope 2 is the emissions from the generation of
purchased electricity, that is combustion at the plant (a **direct** factor); the upstream emissions of the fuel
supply, plant construction and transmission and distribution losses are Scope 3 **Category 3** (fuel- and
energy-related activities). So, per ledger line of a Scope 2 node:

- Scope 2, location-based: facility kWh x the hour's direct factor (``location_direct_co2e_g``) where the grid
  source gives one; otherwise facility kWh x its lifecycle factor (``location_co2e_g``), flagged: those kWh are
  ``lifecycle_basis_kwh`` and the figure's basis is ``mixed`` (or ``lifecycle`` when no kWh had a direct factor);
- Category 3 (activities A and B: upstream of the fuels burnt and of the plants): facility kWh x (lifecycle -
  direct) for the lines whose hour has both; activity C (transmission and distribution losses) is not covered;
- a line whose source is direct only (UK Carbon Intensity) has no lifecycle figure: its Category 3 is not known
  (``direct_only_kwh``); a line whose source is lifecycle only has its upstream inside Scope 2 (flagged above).

SCI, per-token figures and the ledger lines' ``location_co2e_g`` keep the grid source's own figure (lifecycle
for Electricity Maps and the annual averages): they feed decisions, where the whole life counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.db.models import DecimalField, ExpressionWrapper, F, Q, Sum
from django.db.models.functions import Coalesce

from accounting.models import NodeHourLedger
from grid.annual import LIFECYCLE_ONLY_NOTE
from reports.aggregates import lines_counted
from reports.selectors.lines import ledger_rows, site_hours_serve

ZERO = Decimal(0)
DIRECT = "direct"
LIFECYCLE = "lifecycle"
MIXED = "mixed"
BASES = (DIRECT, LIFECYCLE, MIXED)

SCOPE2_BASIS_RULE = (
    "direct (combustion) factors, GHG Protocol Scope 2 Guidance: facility kWh x the hour's direct factor where the "
    "grid source gives one; where it gives only a lifecycle factor (the shipped annual average of a zone whose "
    "country has no generation mix, an upload without a direct column), that hour's kWh take the lifecycle "
    "factor, flagged as lifecycle_basis_kwh"
)
LIFECYCLE_BASIS_NOTE = LIFECYCLE_ONLY_NOTE
CATEGORY_3_METHOD = (
    "facility kWh x (lifecycle - direct factor) of each Scope 2 hour whose grid source gives both (upstream of "
    "the fuels and the plants: Category 3 activities A and B); transmission and distribution losses (activity C) "
    "are not covered"
)
CATEGORY_3_NOT_KNOWN = (
    "no Scope 2 hour of the period has both a lifecycle and a direct factor; where only a lifecycle factor was "
    "known its upstream part is inside Scope 2 (lifecycle_basis_kwh)"
)
LOCATION_AS_STORED = (
    "the grid source's own figure per hour (lifecycle for Electricity Maps and the annual averages, direct for UK "
    "Carbon Intensity): what SCI and the per-token figures weigh"
)

_G = DecimalField(max_digits=28, decimal_places=12)
_HAS_DIRECT = Q(location_direct_co2e_g__isnull=False)
_LIFECYCLE_ONLY = Q(location_direct_co2e_g__isnull=True, location_co2e_g__isnull=False)
# Lines computed before bases were recorded have an empty basis: taken as lifecycle (they have no direct figure).
_BOTH = _HAS_DIRECT & ~Q(location_basis=DIRECT)


@dataclass
class BasisCoverage:
    """One set of Scope 2 lines by factor basis: kWh and gCO2e."""

    direct_kwh: Decimal = ZERO  # Scope 2 on the direct basis
    lifecycle_basis_kwh: Decimal = ZERO  # Scope 2 on the lifecycle basis: no direct factor known
    category_3_kwh: Decimal = ZERO  # both factors known
    category_3_co2e_g: Decimal = ZERO  # (lifecycle - direct) x kWh of those
    direct_only_kwh: Decimal = ZERO  # direct basis, no lifecycle figure: Category 3 not known
    lifecycle_basis_sources: set[str] = field(default_factory=set)

    @property
    def basis(self) -> str | None:
        """``direct``, ``lifecycle``, ``mixed``; None when no kWh had a grid factor."""
        if self.direct_kwh and self.lifecycle_basis_kwh:
            return MIXED
        if self.direct_kwh:
            return DIRECT
        return LIFECYCLE if self.lifecycle_basis_kwh else None

    def add(self, other: BasisCoverage) -> None:
        self.direct_kwh += other.direct_kwh
        self.lifecycle_basis_kwh += other.lifecycle_basis_kwh
        self.category_3_kwh += other.category_3_kwh
        self.category_3_co2e_g += other.category_3_co2e_g
        self.direct_only_kwh += other.direct_only_kwh
        self.lifecycle_basis_sources |= other.lifecycle_basis_sources


def combined(coverages: Iterable[BasisCoverage]) -> BasisCoverage:
    """Several sites' coverage as one."""
    total = BasisCoverage()
    for coverage in coverages:
        total.add(coverage)
    return total


def scope2_location_g() -> Sum:
    """Scope 2 location-based gCO2e of a set of lines: direct where known, else the line's (lifecycle) figure."""
    return Sum(Coalesce("location_direct_co2e_g", "location_co2e_g", output_field=_G))


def basis_by_site(
    *, organization_id: int, start: datetime, end: datetime, where: Q, by_status: Q | None = None
) -> dict[int, BasisCoverage]:
    """Per site, the factor basis of the lines ``where`` selects in ``[start, end)``: one query, by site and
    intensity source (the lifecycle basis' sources), added up per site (exact ``Decimal`` sums). Read from the
    lines' site-hours where ``by_status`` says ``where`` as a condition on the electricity status alone."""
    site_hours = by_status is not None and site_hours_serve(
        organization_ids=[organization_id], start=start, end=end, keys=["site_id", "location_source"]
    )
    lines = ledger_rows(organization_ids=[organization_id], start=start, end=end, site_hours=site_hours).filter(
        by_status if site_hours else where
    )
    upstream = ExpressionWrapper(F("location_co2e_g") - F("location_direct_co2e_g"), output_field=_G)
    rows = lines.values("site_id", "location_source").annotate(
        direct_kwh=Sum("facility_kwh", filter=_HAS_DIRECT),
        lifecycle_kwh=Sum("facility_kwh", filter=_LIFECYCLE_ONLY),
        both_kwh=Sum("facility_kwh", filter=_BOTH),
        upstream_g=Sum(upstream, filter=_BOTH),
        direct_only_kwh=Sum("facility_kwh", filter=_HAS_DIRECT & Q(location_basis=DIRECT)),
        lifecycle_lines=lines_counted(_LIFECYCLE_ONLY).over(site_hours=site_hours),
    ).order_by("site_id", "location_source")  # fmt: skip
    covered: dict[int, BasisCoverage] = {}
    for row in rows:
        part = BasisCoverage(
            row["direct_kwh"] or ZERO, row["lifecycle_kwh"] or ZERO, row["both_kwh"] or ZERO,
            row["upstream_g"] or ZERO, row["direct_only_kwh"] or ZERO,
        )  # fmt: skip
        if row["lifecycle_lines"]:
            part.lifecycle_basis_sources.add(row["location_source"] or "unknown")
        if row["site_id"] in covered:
            covered[row["site_id"]].add(part)
        else:
            covered[row["site_id"]] = part
    for coverage in covered.values():  # a zero sum as the single query's ``or ZERO`` gave it
        for name in _SUMMED_KWH_AND_G:
            setattr(coverage, name, getattr(coverage, name) or ZERO)
    return covered


_SUMMED_KWH_AND_G = ("direct_kwh", "lifecycle_basis_kwh", "category_3_kwh", "category_3_co2e_g", "direct_only_kwh")


def stored_basis(*, organization_id: int, start: datetime, end: datetime) -> str | None:
    """The basis of the ledger lines' own ``location_co2e_g`` over every node (what SCI and the per-token figures
    weigh): ``lifecycle``, ``direct`` or ``mixed``; None when no line had a grid factor. One query."""
    sums = NodeHourLedger.objects.filter(
        organization_id=organization_id, hour_start__gte=start, hour_start__lt=end, location_co2e_g__isnull=False
    ).aggregate(kwh=Sum("facility_kwh"), direct_kwh=Sum("facility_kwh", filter=Q(location_basis=DIRECT)))
    return basis_of_located(sums["kwh"] or ZERO, sums["direct_kwh"] or ZERO)


def basis_of_located(located: Decimal, direct: Decimal) -> str | None:
    """``stored_basis``' rule: of ``located`` facility kWh with a location figure, ``direct`` on the direct basis."""
    if not located:
        return None
    if not direct:
        return LIFECYCLE
    return DIRECT if direct == located else MIXED
