"""Node prices through the API: the hours re-opened, the totals after recomputation, overlaps refused."""

from __future__ import annotations

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounting.ledger import money_quantize
from accounting.models import LedgerPending, NodePrice
from fleets.models import Node
from governance.models import AuditEntry
from tests.helpers.inputs import JAN_1, JAN_3, hardware_cost, ledger_recompute, rent_body

pytestmark = pytest.mark.django_db


def test_a_rent_from_jan_2_reopens_its_24_stored_hours_and_the_total_follows(finance: APIClient, node_a: Node) -> None:
    # given 48 stored, unpriced hours; when a rent of 2.50 per GPU-hour starts on Jan 2
    response = finance.post("/api/v1/node-prices/", rent_body(node_a), format="json")

    assert response.status_code == 201, response.content
    assert response.json()["ledger_hours_reopened"] == 24
    assert LedgerPending.objects.filter(node=node_a).count() == 24
    ledger_recompute()
    assert hardware_cost(node_a) == Decimal("120.00")  # 24 h x 2 GPUs x 2.50


def test_moving_the_start_a_day_earlier_reopens_only_that_day(finance: APIClient, node_a: Node) -> None:
    price = finance.post("/api/v1/node-prices/", rent_body(node_a), format="json").json()
    ledger_recompute()

    response = finance.patch(f"/api/v1/node-prices/{price['id']}/", {"valid_from": JAN_1.isoformat()}, format="json")

    assert (response.status_code, response.json()["ledger_hours_reopened"]) == (200, 24)
    ledger_recompute()
    assert hardware_cost(node_a) == Decimal("240.00")  # 48 h x 2 GPUs x 2.50


def test_a_rent_change_reopens_every_hour_of_the_period(finance: APIClient, node_a: Node) -> None:
    price = finance.post("/api/v1/node-prices/", rent_body(node_a), format="json").json()
    ledger_recompute()

    response = finance.patch(f"/api/v1/node-prices/{price['id']}/", {"rate_per_h": "3.00"}, format="json")

    assert (response.status_code, response.json()["ledger_hours_reopened"]) == (200, 24)
    ledger_recompute()
    assert hardware_cost(node_a) == Decimal("144.00")  # 24 h x 2 GPUs x 3.00


def test_a_fleet_default_skips_the_hours_a_nodes_own_price_covers(
    finance: APIClient, node_a: Node, node_b: Node
) -> None:
    finance.post("/api/v1/node-prices/", rent_body(node_a), format="json")  # h100-a's own rent from Jan 2
    default = rent_body(node_a, kind="owned", rate_per_h=None, capex="35040", lifetime_years="4",
                        valid_from=JAN_1.isoformat()) | {"node": None}  # fmt: skip

    response = finance.post("/api/v1/node-prices/", default, format="json")

    # h100-a: Jan 1 only (its own rent wins from Jan 2); h100-b: both days
    assert response.json()["ledger_hours_reopened"] == 24 + 48
    ledger_recompute()
    # by month since depreciation by the book (it was 1.00 an hour, 48.00): 35,040 / 48 months = 730 in January,
    # 730 / 744 h x 48 h = 47.10 (a 30-day month would charge 730 / 720 h)
    assert money_quantize(hardware_cost(node_b), "USD") == Decimal("47.10")


def test_an_overlapping_period_is_refused_and_nothing_changes(finance: APIClient, node_a: Node) -> None:
    finance.post("/api/v1/node-prices/", rent_body(node_a), format="json")
    LedgerPending.objects.all().delete()
    audited = AuditEntry.objects.count()

    response = finance.post("/api/v1/node-prices/", rent_body(node_a, valid_from=JAN_3.isoformat()), format="json")

    assert response.status_code == 400
    assert "overlaps another one" in response.json()["detail"]
    assert NodePrice.objects.count() == 1
    assert (LedgerPending.objects.count(), AuditEntry.objects.count()) == (0, audited)


def test_an_owned_price_without_a_lifetime_is_refused_with_the_reason(finance: APIClient, node_a: Node) -> None:
    response = finance.post("/api/v1/node-prices/", rent_body(node_a, kind="owned", capex="1000"), format="json")
    assert response.status_code == 400
    assert "purchase price and a lifetime" in response.json()["detail"]
    assert not NodePrice.objects.exists()


def test_a_negative_rent_is_refused(finance: APIClient, node_a: Node) -> None:
    response = finance.post("/api/v1/node-prices/", rent_body(node_a, rate_per_h="-1"), format="json")
    assert response.status_code == 400
    assert not NodePrice.objects.exists()
