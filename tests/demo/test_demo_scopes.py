"""The demo's inventory within its organizational boundary: the rented nodes with power in the rent (the enterprise
fleet at dc-sjc, and the consumer fleet's two marketplace boxes) are Scope 3 Category 1 with their kWh, never Scope
2; the owned boxes are Scope 2; the demo's instruments sit only where its electricity is its own Scope 2.

The demo's own inventory and prices (``demo_inventory_seed``), one hour of 1 kWh of GPU energy on every card,
the ledger computing each node's line as it does for the seeded demo.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db.models import Sum
from rest_framework.test import APIClient

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from demo import spec
from demo.inventory import demo_inventory_seed
from fleets.models import Gpu, Membership
from scope2.demo import demo_instruments_seed
from telemetry.models import GpuHourUsage

pytestmark = pytest.mark.django_db

WINDOW = datetime(2026, 11, 24, tzinfo=UTC)
HOUR = WINDOW + timedelta(hours=10)
DAY = {"start": "2026-11-24T00:00:00Z", "end": "2026-11-25T00:00:00Z"}


@pytest.fixture
def demo_hour() -> APIClient:
    inventory = demo_inventory_seed(window_start=WINDOW)
    for gpu in Gpu.objects.filter(node__fleet__organization=inventory.organization):
        GpuHourUsage.objects.create(
            gpu=gpu, hour_start=HOUR, energy_j=3_600_000.0, energy_counter_j=3_600_000.0, energy_integrated_j=0.0,
            energy_method="counter", observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0, mean_util_pct=80.0,
            reset_count=0, computed_at=HOUR,
        )  # fmt: skip
    for demo_node in inventory.nodes:
        ledger_node_hours_compute(node_id=demo_node.node.pk, hour_starts=[HOUR])
    demo_instruments_seed(organization=inventory.organization, start=WINDOW, end=WINDOW + timedelta(days=1))
    client = APIClient()
    client.force_authenticate(Membership.objects.get(organization=inventory.organization).user)
    return client


def _kwh(**where: str) -> float:
    total = NodeHourLedger.objects.filter(**where).aggregate(kwh=Sum("facility_kwh"))["kwh"] or Decimal(0)
    return float(round(total, 6))


def test_the_demos_rented_enterprise_fleet_is_scope_3_with_its_kwh_and_its_owned_boxes_scope_2(
    demo_hour: APIClient,
) -> None:
    shown = demo_hour.get("/api/v1/reports/sustainability/", DAY).json()["inventory"]

    rented_with_power = [n for f in spec.FLEETS for n in f.nodes if n.tenure == "rented"]
    assert all((n.price or f.price).includes_power for f in spec.FLEETS for n in f.nodes if n.tenure == "rented")
    category_1 = shown["scope3"]["category_1"]
    assert category_1["nodes"] == len(rented_with_power) == 4
    assert category_1["facility_kwh"] == _kwh(node__tenure="rented")
    enterprise_kwh = _kwh(fleet__name="enterprise")
    assert enterprise_kwh > 0 and category_1["facility_kwh"] >= enterprise_kwh
    assert shown["scope2"]["facility_kwh"] == _kwh(node__tenure="owned") > 0
    assert shown["scope2"]["facility_kwh"] + category_1["facility_kwh"] == pytest.approx(_kwh(), abs=1e-6)

    scope2 = demo_hour.get("/api/v1/reports/scope2/", DAY).json()
    assert "dc-sjc" not in {site["site"] for site in scope2["sites"]}
    claimed = {instrument["site"] for instrument in scope2["instruments"]}
    assert claimed == {"home-ber", "home-sto"}  # where the demo buys its own electricity
