"""Org A: site fra-1 (DE) consuming the hand-worked year of ``worked.py``; users of every role; Org B apart."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounting.models import NodeHourLedger
from fleets.models import Node, Organization, Role, Site
from scope2.models import ResidualMixFactor
from tests.factories import NodeFactory, OrganizationFactory, SiteFactory
from tests.scope2.worked import HOURS, LOAD_KWH, LOCATION_G_PER_KWH, PPA_KWH, solar_profile_kwh


def ledger_hours(node: Node, hours: list[datetime], *, facility_kwh: Decimal, location_g_per_kwh: Decimal) -> None:
    """Stored ledger lines for ``node``: only what Scope 2 reads is meaningful (energy and location carbon)."""
    zero = Decimal(0)
    NodeHourLedger.objects.bulk_create(
        [
            NodeHourLedger(
                node=node, hour_start=hour, organization=node.fleet.organization, fleet=node.fleet, site=node.site,
                gpu_model="h100-sxm", currency="EUR", held_h=Decimal(1), observed_s=Decimal(3600), gpu_count=1,
                it_kwh=facility_kwh, facility_kwh=facility_kwh, pue=Decimal(1), electricity_cost=zero,
                hardware_cost=zero, cost=zero, location_co2e_g=facility_kwh * location_g_per_kwh,
                market_co2e_g=None, embodied_co2e_g_low=zero, embodied_co2e_g_central=zero,
                embodied_co2e_g_high=zero, embodied_unknown_gpu_h=zero, prompt_tokens=0, generation_tokens=0,
                idle_gpu_h=zero, idle_cost=zero, idle_facility_kwh=zero, energy_method="gpu_sum",
                energy_counter_j=0.0, energy_integrated_j=0.0, electricity_status="priced",
                location_gco2e_per_kwh=location_g_per_kwh, location_source="test", location_is_fallback=False,
                amortization="time",
            )
            for hour in hours
        ],
        batch_size=1000,
    )  # fmt: skip


@pytest.fixture
def org_a(db: Any) -> Organization:
    return OrganizationFactory(name="Org A", slug="org-a")


@pytest.fixture
def site_a(org_a: Organization) -> Site:
    return SiteFactory(organization=org_a, name="fra-1", grid_zone="DE", country="DE")


@pytest.fixture
def year_consumed(site_a: Site) -> Node:
    node = NodeFactory(fleet__organization=site_a.organization, site=site_a)
    ledger_hours(node, HOURS, facility_kwh=LOAD_KWH, location_g_per_kwh=LOCATION_G_PER_KWH)
    return node


@pytest.fixture
def sustainability_a(client_as: Callable[..., APIClient]) -> APIClient:
    return client_as(Role.SUSTAINABILITY)


def ppa_body(site: Site, **changes: Any) -> dict[str, Any]:
    profile = [{"hour_start": hour.isoformat(), "mwh": str(kwh / 1000)} for hour, kwh in solar_profile_kwh().items()]
    body = {
        "site": site.pk, "kind": "ppa", "name": "Solar PPA Brandenburg", "volume_mwh": str(PPA_KWH / 1000),
        "delivery_start": "2025-01-01T00:00:00Z", "delivery_end": "2026-01-01T00:00:00Z", "vintage_year": 2025,
        "generation_zone": "DE", "technology": "solar", "evidence_reference": "PPA-2024-117, signed 2024-11-02",
        "hourly_profile": profile,
    }  # fmt: skip
    return body | changes


@pytest.fixture
def residual_de(org_a: Any) -> None:
    """Org A's residual mix for DE 2025: 400 gCO2e/kWh, a test input, not a published figure."""
    ResidualMixFactor.objects.create(
        organization=org_a, zone="DE", year=2025, gco2e_per_kwh=Decimal(400), source="test figure"
    )


@pytest.fixture
def ppa(sustainability_a: APIClient, site_a: Site) -> dict[str, Any]:
    response = sustainability_a.post("/api/v1/instruments/", ppa_body(site_a), format="json")
    assert response.status_code == 201, response.content
    return response.json()
