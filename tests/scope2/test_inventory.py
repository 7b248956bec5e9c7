"""The inventory within the organizational boundary, worked by hand through the API.

Org A, site fra-1 (DE, PUE 1.20, grid 300 g/kWh in the hour used), one H100 SXM card per node (catalog: 197 kg
central, 78.8 low, 315.2 high; host share 312.5 kg per GPU; 4 years = 35,040 h):

- ``own-1``, owned, commissioned 2026-03-10, its card bought 2026-03-15 (an asset row);
- ``rent-1``, rented with power in the rent, commissioned 2026-01-01, its card's asset row also says 2026-03-15.

Each served one hour, 2026-04-01 10:00, with 1 kWh of GPU energy: 1.2 kWh facility, 0.36 kg location-based.
A generator at fra-1: 12 kg entered for the whole of 2026.

- Scope 2 (own-1 only): 1.2 kWh, 0.36 kg; market-based likewise (no instrument, no residual mix: the fallback).
- Scope 3 Category 1 (rent-1's electricity): 1.2 kWh, 0.36 kg. Category 2 (own-1's card + host share, both
  acquired in March): 197 + 312.5 = 509.5 kg central (391.3 low, 627.7 high); rent-1's card in none.
- Totals 2026: 12 + 0.36 + 0.36 + 509.5 = 522.22 kg, both methods.
- Amortized view 2026: one hour of each node, (197 + 312.5) x 1000 / 35,040 g each: 2 x 509.5 / 35,040 =
  0.029081 kg.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import GpuInstallation, Node, Organization, Role, Site
from telemetry.models import GpuHourUsage
from tests.helpers.factories import (
    GpuAssetFactory,
    GpuFactory,
    GridIntensityFactory,
    MembershipFactory,
    NodeFactory,
    NodePriceFactory,
    OrganizationFactory,
    SiteFactory,
    SiteTariffFactory,
)

pytestmark = pytest.mark.django_db

HOUR = datetime(2026, 4, 1, 10, tzinfo=UTC)
YEAR = {"period": "2026"}
SCOPE1 = {"activity": "generator", "start": "2026-01-01T00:00:00Z", "end": "2027-01-01T00:00:00Z", "co2e_kg": "12",
          "description": "diesel genset tests: 4.48 l x 2.68 kg/l"}  # fmt: skip


def _node(site: Site, hostname: str, tenure: str, commissioned: datetime, *, includes_power: bool) -> Node:
    node = NodeFactory(
        fleet__organization=site.organization, site=site, hostname=hostname, tenure=tenure, commissioned_at=commissioned
    )
    gpu = GpuFactory(node=node, index=0, uuid=f"GPU-{hostname}", name="NVIDIA H100 80GB HBM3")
    GpuAssetFactory(gpu=gpu, acquired_on=date(2026, 3, 15))
    NodePriceFactory(node=node, includes_power=includes_power)
    GpuHourUsage.objects.create(
        gpu=gpu, hour_start=HOUR, energy_j=3_600_000.0, energy_counter_j=3_600_000.0, energy_integrated_j=0.0,
        energy_method="counter", observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0, mean_util_pct=80.0,
        reset_count=0, computed_at=HOUR,
    )  # fmt: skip
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[HOUR])
    return node


@pytest.fixture
def site_a(org_a: Organization) -> Site:
    site = SiteFactory(organization=org_a, name="fra-1", grid_zone="DE", pue=Decimal("1.20"))
    SiteTariffFactory(site=site)
    GridIntensityFactory(zone="DE", hour_start=HOUR, gco2e_per_kwh=Decimal(300))
    return site


@pytest.fixture
def own(site_a: Site) -> Node:
    return _node(site_a, "own-1", "owned", datetime(2026, 3, 10, tzinfo=UTC), includes_power=False)


@pytest.fixture
def rent(site_a: Site) -> Node:
    return _node(site_a, "rent-1", "rented", datetime(2026, 1, 1, tzinfo=UTC), includes_power=True)


@pytest.fixture
def sustainability_a(client_as: Callable[..., APIClient]) -> APIClient:
    return client_as(Role.SUSTAINABILITY)


@pytest.fixture
def generator(sustainability_a: APIClient, site_a: Site) -> dict[str, Any]:
    response = sustainability_a.post("/api/v1/scope1-emissions/", SCOPE1 | {"site": site_a.pk}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def inventory(client: APIClient, period: dict[str, str] = YEAR) -> dict[str, Any]:
    response = client.get("/api/v1/reports/sustainability/", period)
    assert response.status_code == 200, response.content
    return response.json()["inventory"]


def test_rented_capacity_with_power_in_the_rent_is_scope_3_and_owned_hardware_is_category_2(
    sustainability_a: APIClient, own: Node, rent: Node, generator: dict[str, Any]
) -> None:
    report = sustainability_a.get("/api/v1/reports/sustainability/", YEAR).json()
    shown = report["inventory"]

    assert shown["boundary"]["consolidation_approach"] == "operational_control"
    assert (shown["scope1"]["status"], shown["scope1"]["kgco2e"]) == ("reported", 12)
    assert (shown["scope2"]["facility_kwh"], shown["scope2"]["location_kgco2e"]) == (1.2, 0.36)
    assert shown["scope2"]["market_kgco2e"] == 0.36  # no instrument, no residual mix: the location fallback
    category_1 = shown["scope3"]["category_1"]
    assert (category_1["facility_kwh"], category_1["kgco2e"], category_1["nodes"]) == (1.2, 0.36, 1)
    assert shown["scope3"]["category_8"]["facility_kwh"] == 0
    goods = shown["scope3"]["category_2"]
    assert (goods["kgco2e_central"], goods["kgco2e_low"], goods["kgco2e_high"]) == (509.5, 391.3, 627.7)
    assert (goods["cards"], goods["host_shares"]) == (1, 1)  # rent-1's card is the provider's capital good
    assert "manufacturing to end of life" in goods["basis"] and "not split" in goods["basis"]
    assert shown["scope3"]["category_3"]["status"] == "excluded"
    assert shown["scope3"]["kgco2e"] == 509.86
    assert shown["totals"]["location_kgco2e"] == shown["totals"]["market_kgco2e"] == 522.22
    amortized = shown["embodied_amortized"]
    assert (amortized["basis"], amortized["kgco2e_central"]) == ("amortized", 0.029081)
    assert amortized["method"]["amortization"] == "time" and amortized["method"]["lives_years"] == {"h100-sxm": 4}
    # The report's own Scope 2 figure moved with the boundary; every node's electricity stays beside it (SCI's).
    assert (report["location_kgco2e"], report["operational_location_kgco2e"]) == (0.36, 0.72)
    assert report["facility_kwh"] == 2.4 and report["market_kgco2e"] == 0.36


def test_an_asset_bought_in_march_is_whole_in_the_first_quarter_and_absent_from_the_second(
    sustainability_a: APIClient, own: Node, rent: Node, generator: dict[str, Any]
) -> None:
    q1, q2 = inventory(sustainability_a, {"period": "2026-Q1"}), inventory(sustainability_a, {"period": "2026-Q2"})

    assert q1["scope3"]["category_2"]["kgco2e_central"] == 509.5
    assert q2["scope3"]["category_2"]["kgco2e_central"] == 0 and q2["scope3"]["category_2"]["cards"] == 0
    assert q1["scope2"]["facility_kwh"] == 0 and q2["scope2"]["facility_kwh"] == 1.2  # the hour served is in April
    # 12 kg over 8,760 h, of which Q1 holds 2,160: 2.958904 kg
    assert q1["scope1"]["kgco2e"] == 2.958904
    assert q2["embodied_amortized"]["kgco2e_central"] == 0.029081 and q1["embodied_amortized"]["kgco2e_central"] == 0


def test_a_card_swapped_into_an_owned_node_is_category_2_in_the_quarter_it_was_installed(
    sustainability_a: APIClient, own: Node
) -> None:
    # given: own-1's original card from its commissioning (10 March), and a new card (no asset row) installed
    # on 10 May 2026 in place of another
    original = own.gpus.get()
    GpuInstallation.objects.create(gpu=original, installed_at=own.commissioned_at)
    new = GpuFactory(node=own, index=1, uuid="GPU-own-1-new", name="NVIDIA H100 80GB HBM3")
    GpuInstallation.objects.create(gpu=new, installed_at=datetime(2026, 5, 10, tzinfo=UTC))

    q2 = inventory(sustainability_a, {"period": "2026-Q2"})["scope3"]["category_2"]

    # then: the new card is acquired when installed, not at the node's commissioning: 197 kg in Q2
    assert (q2["cards"], q2["kgco2e_central"]) == (1, 197)


def test_scope_1_is_stated_not_applicable_when_none_is_entered(sustainability_a: APIClient, own: Node) -> None:
    scope1 = inventory(sustainability_a)["scope1"]

    assert (scope1["status"], scope1["kgco2e"], scope1["entries"]) == ("not_applicable", 0, [])
    assert "not applicable" in scope1["note"]


def test_the_ghg_table_and_esrs_export_carry_scopes_1_to_3_and_totals(
    sustainability_a: APIClient, own: Node, rent: Node, generator: dict[str, Any]
) -> None:
    table = sustainability_a.get("/api/v1/reports/scope2/ghg-table/", YEAR).json()
    site, total = table["rows"]
    assert total["site"] == "TOTAL" and total["note"] == "Scope 2"
    assert (site["site"], site["electricity_mwh"], site["location_based_tco2e"]) == ("fra-1", 0.0012, 0.00036)
    scopes = {row["site"]: row for row in table["inventory_rows"]}
    assert scopes["SCOPE 1"]["location_based_tco2e"] == 0.012
    assert (scopes["SCOPE 3 CATEGORY 1"]["electricity_mwh"], scopes["SCOPE 3 CATEGORY 1"]["market_based_tco2e"]) == (
        0.0012, 0.00036,
    )  # fmt: skip
    assert scopes["SCOPE 3 CATEGORY 2"]["location_based_tco2e"] == 0.5095
    assert "no Scope 2 hour of the period has both" in scopes["SCOPE 3 CATEGORY 3"]["note"]
    assert scopes["TOTAL SCOPES 1-3"]["market_based_tco2e"] == 0.52222
    memo = scopes["MEMO: EMBODIED AMORTIZED"]
    assert memo["location_based_tco2e"] is None  # a memo, never added to the inventory
    assert "amortization time" in memo["note"] and "h100-sxm 4 y" in memo["note"]

    response = sustainability_a.get("/api/v1/reports/scope2/ghg-table/", YEAR | {"format": "csv"})
    lines = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    total_line = next(line for line in lines if line["site"] == "TOTAL SCOPES 1-3")
    assert total_line["location_based_tco2e"] == "0.52222" and "amortized" in lines[-2]["note"]
    assert lines[-1]["site"] == "MEMO: BIOGENIC CO2 (outside the scopes)"

    esrs = sustainability_a.get("/api/v1/reports/scope2/esrs/", YEAR).json()
    points = {point["datapoint"]: point for point in esrs["datapoints"]}
    assert points["E1-5.37"]["value"] == 0.0012  # own operations: the Scope 2 nodes' electricity
    assert (points["E1-6.48(a)"]["value"], points["E1-6.49(a)"]["value"]) == (0.012, 0.00036)
    assert points["E1-6.51"]["value"] == 0.50986
    by_category = {category["category"]: category for category in points["E1-6.51"]["categories"]}
    assert (by_category[1]["value"], by_category[2]["value"], by_category[3]["status"]) == (0.00036, 0.5095, "excluded")
    assert points["E1-6.52(a)"]["value"] == points["E1-6.52(b)"]["value"] == 0.52222
    assert esrs["method"]["amortization"] == "time"


def test_the_sustainability_csv_has_the_inventory_as_metric_lines(
    sustainability_a: APIClient, own: Node, rent: Node
) -> None:
    response = sustainability_a.get("/api/v1/reports/sustainability/", YEAR | {"format": "csv"})
    text = b"".join(response.streaming_content).decode()
    metrics = {row["metric"]: row["value"] for row in csv.DictReader(io.StringIO(text))}

    assert metrics["inventory.scope3.category_1.facility_kwh"] == "1.2"
    assert metrics["inventory.scope3.category_2.kgco2e_central"] == "509.5"
    assert metrics["inventory.embodied_amortized.method.amortization"] == "time"
    assert metrics["location_kgco2e"] == "0.36" and metrics["operational_location_kgco2e"] == "0.72"


def test_the_organization_chooses_category_8_or_scope_2_for_a_rented_node_and_never_scope_3_for_an_owned_one(
    client_as: Callable[..., APIClient], sustainability_a: APIClient, own: Node, rent: Node
) -> None:
    chosen = sustainability_a.put(
        f"/api/v1/node-scopes/{rent.pk}/", {"electricity": "category_8", "reason": "operating lease"}, format="json"
    )
    assert (chosen.status_code, chosen.json()["electricity"], chosen.json()["hardware"]) == (
        200, "category_8", "excluded_in_service",
    )  # fmt: skip
    shown = inventory(sustainability_a)
    assert (shown["scope3"]["category_8"]["facility_kwh"], shown["scope3"]["category_1"]["facility_kwh"]) == (1.2, 0)
    assert shown["boundary"]["node_choices"][0]["hostname"] == "rent-1"

    sustainability_a.put(f"/api/v1/node-scopes/{rent.pk}/", {"electricity": "scope_2"}, format="json")
    assert inventory(sustainability_a)["scope2"]["facility_kwh"] == 2.4

    refused = sustainability_a.put(f"/api/v1/node-scopes/{own.pk}/", {"electricity": "category_1"}, format="json")
    assert refused.status_code == 400 and "electricity" in refused.json()
    viewer = client_as(Role.VIEWER)
    assert viewer.put(f"/api/v1/node-scopes/{rent.pk}/", {"electricity": "auto"}, format="json").status_code == 403
    listed = {row["hostname"]: row for row in viewer.get("/api/v1/node-scopes/").json()}
    assert (listed["own-1"]["hardware"], listed["rent-1"]["electricity"]) == ("category_2", "scope_2")


def test_equity_share_takes_its_percentage_of_every_emission_figure(
    sustainability_a: APIClient, own: Node, rent: Node
) -> None:
    missing = sustainability_a.put("/api/v1/inventory-boundary/", {"consolidation_approach": "equity_share"})
    assert missing.status_code == 400 and "equity_share_pct" in missing.json()

    body = {"consolidation_approach": "equity_share", "equity_share_pct": "40"}
    assert sustainability_a.put("/api/v1/inventory-boundary/", body, format="json").status_code == 200

    shown = inventory(sustainability_a)
    assert (shown["boundary"]["share_applied"], shown["scope2"]["location_kgco2e"]) == (0.4, 0.144)
    assert shown["scope2"]["facility_kwh"] == 1.2  # energy stays whole
    assert shown["scope3"]["category_2"]["kgco2e_central"] == 203.8  # 40 % of 509.5
    esrs = sustainability_a.get("/api/v1/reports/scope2/esrs/", YEAR).json()
    assert {p["datapoint"]: p["value"] for p in esrs["datapoints"]}["E1-6.49(a)"] == 0.000144


def test_boundary_changes_are_audited_and_refused_over_a_locked_period(
    client_as: Callable[..., APIClient], sustainability_a: APIClient, rent: Node
) -> None:
    body = {"consolidation_approach": "financial_control"}
    assert sustainability_a.put("/api/v1/inventory-boundary/", body, format="json").status_code == 200
    admin = client_as(Role.ADMIN)
    trail = admin.get("/api/v1/audit/").json()
    assert "inventory_boundary" in {entry["subject"] for entry in trail}
    lock = {"start": "2026-04-01T00:00:00Z", "end": "2026-05-01T00:00:00Z", "reason": "closed"}
    assert admin.post("/api/v1/locked-periods/", lock, format="json").status_code == 201

    refused = sustainability_a.put(f"/api/v1/node-scopes/{rent.pk}/", {"electricity": "category_8"}, format="json")
    assert refused.status_code == 409
    again = {"consolidation_approach": "operational_control"}
    assert sustainability_a.put("/api/v1/inventory-boundary/", again, format="json").status_code == 409
    assert sustainability_a.get("/api/v1/inventory-boundary/").json()["consolidation_approach"] == "financial_control"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"end": "2025-12-01T00:00:00Z"}, "end"),
        ({"start": "2026-01-01T00:30:00Z"}, "start"),
        ({"description": " "}, "description"),
        ({"co2e_kg": "-1"}, "co2e_kg"),
        ({"activity": "volcano"}, "activity"),
    ],
)
def test_a_scope_1_entry_refused_names_its_field(
    sustainability_a: APIClient, site_a: Site, change: dict[str, str], field: str
) -> None:
    response = sustainability_a.post("/api/v1/scope1-emissions/", SCOPE1 | {"site": site_a.pk} | change, format="json")

    assert response.status_code == 400 and field in response.json(), response.content
    assert sustainability_a.get("/api/v1/scope1-emissions/").json() == []


def test_scope_1_entries_are_the_organizations_own(
    client_as: Callable[..., APIClient], sustainability_a: APIClient, site_a: Site, generator: dict[str, Any]
) -> None:
    other = OrganizationFactory(name="Org C", slug="org-c")
    stranger = client_as(Role.ADMIN, organization=other, username="carl")
    other_site = SiteFactory(organization=other)

    assert stranger.get(f"/api/v1/scope1-emissions/{generator['id']}/").status_code == 404
    assert stranger.patch(f"/api/v1/scope1-emissions/{generator['id']}/", {"co2e_kg": "0"}).status_code == 404
    assert stranger.get("/api/v1/scope1-emissions/").json() == []
    foreign = sustainability_a.post("/api/v1/scope1-emissions/", SCOPE1 | {"site": other_site.pk}, format="json")
    assert foreign.status_code == 400 and "site" in foreign.json()
    assert (
        client_as(Role.FINANCE).patch(f"/api/v1/scope1-emissions/{generator['id']}/", {"co2e_kg": "1"}).status_code
        == 403
    )
    changed = sustainability_a.patch(f"/api/v1/scope1-emissions/{generator['id']}/", {"co2e_kg": "6"}, format="json")
    assert (changed.status_code, changed.json()["co2e_kg"]) == (200, 6)


def test_the_sustainability_page_shows_scope_3_and_labels_the_amortized_view(
    own: Node, rent: Node, org_a: Organization
) -> None:
    browser = Client()
    browser.force_login(MembershipFactory(organization=org_a, role=Role.VIEWER).user)

    html = browser.get("/sustainability/", {"start": "2026-01-01", "end": "2026-12-31"}).content.decode()

    assert 'id="tile-scope3-rented"' in html and 'data-value="0.00036"' in html  # rent-1's 0.36 kg
    assert 'id="tile-capital-goods"' in html and 'data-value="0.5095"' in html  # own-1's card and host share
    assert "Embodied, amortized (SCI, not the inventory)" in html and "Scope 3 share" not in html
