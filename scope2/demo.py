"""Contractual instruments for the demo organization, so the sustainability page shows dual reporting.

``demo_instruments_seed`` is meant to be called by the demo seed after the
history backfill and the ledger drain (it sizes the instruments from the
facility energy of the stored ledger lines whose electricity is the
organization's Scope 2, ``scope2.boundary``). It goes through ``instrument_create``, so the demo's
instruments pass the same checks as anyone's, and it replaces the demo instruments of an earlier run.

An instrument only belongs where the electricity is the organization's own purchase: ``dc-sjc`` holds the
rented enterprise fleet, power in the rent, so its electricity is the provider's Scope 2 and the demo's
Scope 3 Category 1, and no instrument of the demo's is claimed there.

- ``home-ber`` (DE): a solar PPA with an hourly profile, a sine over the
  site's local daylight hours, delivering 80 % of the window's Scope 2 facility energy:
  annually matched it covers 80 %, hourly matched less (nights stay uncovered).
- ``home-sto`` (SE-SE3): Swedish hydro guarantees of origin from SE3 for the window's
  whole Scope 2 facility energy (the same bidding zone); the rented box there has power in its rent.
- ``home-waw`` (PL): none; it takes the residual mix, or, as long as no residual
  mix is entered, the location-based factor, labelled.

Each carries the evidence fields an auditor checks (registry, certificate id range, cancellation date,
beneficiary, consumption period), so that it passes the evidence criterion on them, not on a sentence. Figures,
ids and references are illustrative, made up for the demo, and the instruments' names say "(demo)".
"""

from __future__ import annotations

import math
import zoneinfo
from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Q, Sum

from accounting.models import NodeHourLedger
from fleets.models import Organization, Site
from scope2.allocation import KWH_PER_MWH
from scope2.boundary import ElectricityScope
from scope2.inventory import electricity_line_filters
from scope2.models import ContractualInstrument
from scope2.services import instrument_create

DEMO_REF_PREFIX = "demo:"
PPA_SHARE = Decimal("0.8")
PPA_SITE, GO_SITE = "home-ber", "home-sto"
REGISTRIES = {"DE": "UBA Herkunftsnachweisregister", "SE": "Cesar (Energimyndigheten)"}


def _facility_mwh(site: Site, start: datetime, end: datetime, scope2: Q) -> Decimal:
    """The site's Scope 2 facility energy in the stored ledger (what the Scope 2 report allocates), MWh."""
    lines = NodeHourLedger.objects.filter(scope2, site=site, hour_start__gte=start, hour_start__lt=end)
    return (lines.aggregate(kwh=Sum("facility_kwh"))["kwh"] or Decimal(0)) / KWH_PER_MWH


def _solar_weights(site: Site, start: datetime, end: datetime) -> dict[datetime, Decimal]:
    """Per UTC hour, the sun's share of a day: sin over 06:00-18:00 local time, 0 at night."""
    local = zoneinfo.ZoneInfo(site.time_zone)
    weights: dict[datetime, Decimal] = defaultdict(Decimal)
    hour = start.replace(minute=0, second=0, microsecond=0)
    while hour < end:
        local_h = hour.astimezone(local).hour + 0.5
        if 6 <= local_h < 18:
            weights[hour] = Decimal(str(round(math.sin(math.pi * (local_h - 6) / 12), 6)))
        hour += timedelta(hours=1)
    return weights


def _base(site: Site, start: datetime, end: datetime, name: str, serial: str) -> dict[str, object]:
    country = site.grid_zone[:2]
    return {
        "site": site, "name": name, "delivery_start": start, "delivery_end": end, "vintage_year": start.year,
        "certificate_ref": f"{DEMO_REF_PREFIX}{site.name}:{name}", "evidence_reference": f"DEMO-{serial}",
        "registry": REGISTRIES.get(country, "demo registry"),
        "certificate_id_from": f"{country}-{serial}-000001", "certificate_id_to": f"{country}-{serial}-000048",
        "cancellation_date": end.date(), "beneficiary": site.organization.name,
        "consumption_period_start": start.date(), "consumption_period_end": (end - timedelta(microseconds=1)).date(),
    }  # fmt: skip


def demo_instruments_seed(*, organization: Organization, start: datetime, end: datetime) -> list[ContractualInstrument]:
    """Replace the demo instruments of ``organization`` for the whole UTC hours that hold [start, end)."""
    start = start.replace(minute=0, second=0, microsecond=0)
    if end != (end_hour := end.replace(minute=0, second=0, microsecond=0)):
        end = end_hour + timedelta(hours=1)
    ContractualInstrument.objects.filter(
        organization=organization, certificate_ref__startswith=DEMO_REF_PREFIX
    ).delete()
    created = []
    sites = {site.name: site for site in Site.objects.filter(organization=organization).select_related("organization")}
    scope2 = electricity_line_filters(organization_id=organization.pk, start=start, end=end)[ElectricityScope.SCOPE_2]
    if (ppa_site := sites.get(PPA_SITE)) is not None:
        consumed = _facility_mwh(ppa_site, start, end, scope2)
        weights = _solar_weights(ppa_site, start, end)
        total_weight = sum(weights.values(), Decimal(0))
        if consumed and total_weight:
            scale = consumed * PPA_SHARE / total_weight
            profile = [(hour, (weight * scale).quantize(Decimal("0.000001"))) for hour, weight in weights.items()]
            data = _base(ppa_site, start, end, "Solar PPA (demo)", "PPA") | {
                "kind": "ppa", "generation_zone": ppa_site.grid_zone, "technology": "solar",
                "purchase_type": "direct_line", "attributes_exclusive": True,
                "volume_mwh": sum((mwh for _, mwh in profile), Decimal(0)),
            }  # fmt: skip
            created.append(instrument_create(organization=organization, data=data, profile=profile))
    if (sto := sites.get(GO_SITE)) is not None:
        consumed = _facility_mwh(sto, start, end, scope2)
        if consumed:
            data = _base(sto, start, end, "Hydro guarantees of origin (demo)", "GO") | {
                "kind": "go", "generation_zone": sto.grid_zone, "technology": "hydro", "purchase_type": "unbundled",
                "volume_mwh": consumed.quantize(Decimal("0.000001")),
            }  # fmt: skip
            created.append(instrument_create(organization=organization, data=data))
    return created
