"""The input tests' organizations, sites, nodes and clients (fixtures), shared by the ledger's and governance's tests.

Org A: site fra-1 (EUR, PUE 1.20), fleet "inference" with node h100-a (2 GPUs) and h100-b (1 GPU).

Both nodes have 48 stored ledger lines, 2026-01-01 00:00 to 2026-01-03 00:00 UTC,
computed without any price (unpriced: hardware cost 0) and without usage.
Org B, apart, has its own site, fleet and node.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Fleet, Gpu, Node, Organization, Role, Site
from tests.helpers.factories import (
    FleetFactory,
    GpuFactory,
    MembershipFactory,
    NodeFactory,
    OrganizationFactory,
    SiteFactory,
)
from tests.helpers.inputs import HOURS


@pytest.fixture
def org_a(db: Any) -> Organization:
    return OrganizationFactory(name="Org A", slug="org-a")


@pytest.fixture
def org_b(db: Any) -> Organization:
    return OrganizationFactory(name="Org B", slug="org-b")


@pytest.fixture
def site_a(org_a: Organization) -> Site:
    return SiteFactory(organization=org_a, name="fra-1", pue=Decimal("1.20"), currency="EUR", grid_zone="")


@pytest.fixture
def fleet_a(org_a: Organization) -> Fleet:
    return FleetFactory(organization=org_a, name="inference")


def _node(fleet: Fleet, site: Site, hostname: str, gpus: int) -> Node:
    node = NodeFactory(fleet=fleet, site=site, hostname=hostname, commissioned_at=datetime(2025, 12, 1, tzinfo=UTC))
    for index in range(gpus):
        GpuFactory(node=node, index=index, uuid=f"GPU-{hostname}-{index}")
    ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)
    return node


@pytest.fixture
def node_a(fleet_a: Fleet, site_a: Site) -> Node:
    return _node(fleet_a, site_a, "h100-a", 2)


@pytest.fixture
def node_b(fleet_a: Fleet, site_a: Site) -> Node:
    return _node(fleet_a, site_a, "h100-b", 1)


@pytest.fixture
def gpu_a(node_a: Node) -> Gpu:
    return node_a.gpus.order_by("index").first()


@pytest.fixture
def node_other(org_b: Organization) -> Node:
    site = SiteFactory(organization=org_b, name="ams-1")
    return NodeFactory(fleet=FleetFactory(organization=org_b, name="other"), site=site, hostname="other-1")


@pytest.fixture
def finance(client_as: Callable[..., APIClient]) -> APIClient:
    return client_as(Role.FINANCE, username="fiona")


@pytest.fixture
def admin_a(client_as: Callable[..., APIClient]) -> APIClient:
    return client_as(Role.ADMIN, username="ada")


@pytest.fixture
def staff(client: Client, org_a: Organization) -> Client:
    """The Django admin, signed in as a staff admin of Org A."""
    user = MembershipFactory(organization=org_a, role=Role.ADMIN, user__username="ada", user__is_staff=True).user
    client.force_login(user)
    return client
