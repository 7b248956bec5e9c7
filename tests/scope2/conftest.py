"""Org A: site fra-1 (DE) consuming the hand-worked year of ``worked.py``; users of every role; Org B apart."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from fleets.models import Node, Organization, Role, Site
from scope2.models import ResidualMixFactor
from tests.helpers.factories import NodeFactory, OrganizationFactory, SiteFactory
from tests.helpers.instruments import (
    HOURS,
    LOAD_KWH,
    LOCATION_G_PER_KWH,
    ledger_hours,
    ppa_body,
)


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
