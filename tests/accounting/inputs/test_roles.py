"""Every write endpoint for every role, and for another organization's user (404, nothing revealed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounting.models import GpuAsset, NodePrice, SiteMarketFactor, SitePue, SiteTariff
from fleets.models import Gpu, Node, Role, Site
from fleets.permissions import Capability, may_change
from governance.models import AuditEntry, LockedPeriod
from tests.helpers.factories import MembershipFactory
from tests.helpers.inputs import JAN_1, JAN_2, ROLES, rent_body

pytestmark = pytest.mark.django_db

FINANCE_WRITERS = {Role.ADMIN, Role.FINANCE}
SUSTAINABILITY_WRITERS = {Role.ADMIN, Role.SUSTAINABILITY}
MAY_1 = JAN_1.replace(month=5)
JUN_1 = JAN_1.replace(year=2025, month=6)


@pytest.fixture
def rows(node_a: Node, site_a: Site, gpu_a: Gpu) -> dict[str, Any]:
    """One existing row of each kind, to change."""
    return {
        "price": NodePrice.objects.create(
            fleet=node_a.fleet, node=node_a, kind="rented", rate_per_h=1, valid_from=JAN_1, valid_to=JAN_2
        ),
        "tariff": SiteTariff.objects.create(site=site_a, flat_price_per_kwh=1, valid_from=JAN_1, valid_to=JAN_2),
        "asset": GpuAsset.objects.create(gpu=gpu_a),
        "pue": SitePue.objects.create(site=site_a, pue="1.1", valid_from=JAN_1, valid_to=JAN_2),
        "pue_gone": SitePue.objects.create(site=site_a, pue="1.1", valid_from=MAY_1.replace(year=2025), valid_to=JUN_1),
        "market": SiteMarketFactor.objects.create(
            site=site_a, gco2e_per_kwh=300, source="supplier:A", valid_from=JAN_1, valid_to=JAN_2
        ),
        "market_gone": SiteMarketFactor.objects.create(
            site=site_a, gco2e_per_kwh=300, source="supplier:A", valid_from=MAY_1.replace(year=2025), valid_to=JUN_1
        ),
        "lock": LockedPeriod.objects.create(
            organization=site_a.organization,
            start=JAN_1.replace(year=2020),
            end=JAN_1.replace(year=2021),
            locked_at=JAN_1,
        ),
    }


def writes(rows: dict[str, Any], node: Node, site: Site) -> list[tuple[str, str, dict[str, Any], set[str]]]:
    """(method, url, body, roles allowed) for every write endpoint of the inputs."""
    gpu_b = node.gpus.order_by("index").last()
    return [
        ("post", "/api/v1/node-prices/", rent_body(node), FINANCE_WRITERS),
        ("patch", f"/api/v1/node-prices/{rows['price'].pk}/", {"rate_per_h": "2"}, FINANCE_WRITERS),
        (
            "post",
            "/api/v1/site-tariffs/",
            {"site": site.pk, "flat_price_per_kwh": "0.2", "valid_from": JAN_2.isoformat()},
            FINANCE_WRITERS,
        ),
        ("patch", f"/api/v1/site-tariffs/{rows['tariff'].pk}/", {"flat_price_per_kwh": "0.3"}, FINANCE_WRITERS),
        ("put", f"/api/v1/sites/{site.pk}/pue/", {"pue": "1.3"}, FINANCE_WRITERS),
        ("post", "/api/v1/site-pue-periods/", {"site": site.pk, "pue": "1.4", "valid_from": MAY_1}, FINANCE_WRITERS),
        ("patch", f"/api/v1/site-pue-periods/{rows['pue'].pk}/", {"pue": "1.25"}, FINANCE_WRITERS),
        ("delete", f"/api/v1/site-pue-periods/{rows['pue_gone'].pk}/", {}, FINANCE_WRITERS),
        (
            "post",
            "/api/v1/site-market-factors/",
            {"site": site.pk, "gco2e_per_kwh": "250", "source": "supplier:B", "valid_from": MAY_1},
            SUSTAINABILITY_WRITERS,
        ),
        ("patch", f"/api/v1/site-market-factors/{rows['market'].pk}/", {"gco2e_per_kwh": "90"}, SUSTAINABILITY_WRITERS),
        ("delete", f"/api/v1/site-market-factors/{rows['market_gone'].pk}/", {}, SUSTAINABILITY_WRITERS),
        ("post", "/api/v1/gpu-assets/", {"gpu": gpu_b.pk, "condition": "new"}, FINANCE_WRITERS),
        ("patch", f"/api/v1/gpu-assets/{rows['asset'].pk}/", {"profile_key": "h100-sxm"}, FINANCE_WRITERS),
        (
            "post",
            "/api/v1/locked-periods/",
            {"start": "2019-01-01T00:00:00Z", "end": "2019-02-01T00:00:00Z"},
            {Role.ADMIN},
        ),
        ("delete", f"/api/v1/locked-periods/{rows['lock'].pk}/", {}, {Role.ADMIN}),
    ]


@pytest.mark.parametrize("role", ROLES)
def test_each_write_endpoint_answers_by_role(
    client_as: Callable[..., APIClient], rows: dict[str, Any], node_a: Node, site_a: Site, role: str
) -> None:
    client = client_as(role)
    for method, url, body, allowed in writes(rows, node_a, site_a):
        audited = AuditEntry.objects.count()
        response = getattr(client, method)(url, body, format="json")
        if role in allowed:
            assert response.status_code in (200, 201, 204), (method, url, response.content)
            assert AuditEntry.objects.count() == audited + 1, (method, url)
        else:
            assert response.status_code == 403, (method, url, response.status_code)
            assert AuditEntry.objects.count() == audited, (method, url)


def test_another_organizations_user_gets_404_and_changes_nothing(
    client_as: Callable[..., APIClient], rows: dict[str, Any], node_a: Node, site_a: Site, org_b: Any
) -> None:
    outsider = client_as(Role.ADMIN, org_b)
    for method, url, body, _ in writes(rows, node_a, site_a):
        if method == "post" and "locked-periods" in url:
            body = body | {"organization": "org-a"}
        response = getattr(outsider, method)(url, body, format="json")
        assert response.status_code == 404, (method, url, response.status_code)
    lists = ("node-prices", "site-tariffs", "gpu-assets", "locked-periods", "site-pue-periods", "site-market-factors")
    for url in (f"/api/v1/{name}/" for name in lists):
        assert outsider.get(url).json() == []
    assert outsider.get(f"/api/v1/node-prices/{rows['price'].pk}/").status_code == 404
    assert outsider.get(f"/api/v1/sites/{site_a.pk}/pue/").status_code == 404
    assert outsider.get(f"/api/v1/site-pue-periods/{rows['pue'].pk}/").status_code == 404
    assert outsider.get(f"/api/v1/site-market-factors/{rows['market'].pk}/").status_code == 404
    assert SitePue.objects.count() == SiteMarketFactor.objects.count() == 2
    assert outsider.get("/api/v1/audit/", {"organization": "org-a"}).status_code == 404
    assert not AuditEntry.objects.exists()
    assert NodePrice.objects.get().rate_per_h == 1


@pytest.mark.parametrize("role", ROLES)
def test_every_member_reads_the_inputs(client_as: Callable[..., APIClient], rows: dict[str, Any], role: str) -> None:
    client = client_as(role)
    assert [row["id"] for row in client.get("/api/v1/node-prices/").json()] == [rows["price"].pk]
    assert client.get(f"/api/v1/site-tariffs/{rows['tariff'].pk}/").json()["flat_price_per_kwh"] == "1.000000"
    assert client.get(f"/api/v1/gpu-assets/{rows['asset'].pk}/").status_code == 200


@pytest.mark.parametrize(
    ("role", "granted"),
    [
        (Role.ADMIN, set(Capability)),
        (Role.FINANCE, {Capability.PRICES}),
        (Role.SUSTAINABILITY, {Capability.SUSTAINABILITY}),
        (Role.ENGINEER, {Capability.NODES, Capability.WORKLOADS}),
        (Role.VIEWER, set()),
    ],
)
def test_what_each_role_may_change(org_a: Any, org_b: Any, role: str, granted: set[Capability]) -> None:
    user = MembershipFactory(organization=org_a, role=role).user
    assert {c for c in Capability if may_change(user=user, organization=org_a, capability=c)} == granted
    assert not any(may_change(user=user, organization=org_b, capability=c) for c in Capability)
