"""One asset record for money and carbon: an owned price's in-service date starts the node's depreciation and
its cards' embodied life, and the book value lists the cards bought under it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounting.models import GpuAsset, NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import GpuInstallation, Node
from governance.models import AuditEntry
from tests.helpers.factories import GpuFactory
from tests.helpers.inputs import JAN_1, rent_body

pytestmark = pytest.mark.django_db
URL = "/api/v1/node-prices/"
MAR_1 = datetime(2026, 3, 1, tzinfo=UTC)
LIFE_END = MAR_1 + timedelta(hours=4 * 8760)  # h100-sxm: 4 years of 8,760 h from in-service = 2030-02-28 00:00


def bought(finance: APIClient, node: Node) -> dict:
    """Node h100-a (commissioned 2025-12-01, two H100 SXM cards, no asset rows), bought: 12,000 over one year
    by month from 1 March 2026, no salvage: 1,000 a month."""
    body = rent_body(
        node, kind="owned", rate_per_h=None, capex="12000", lifetime_years="1", in_service_at=MAR_1.isoformat(),
        valid_from=JAN_1.isoformat(),
    )  # fmt: skip
    created = finance.post(URL, body, format="json")
    assert created.status_code == 201, created.content
    return created.json()


def line(node: Node, hour: datetime) -> NodeHourLedger:
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[hour], now=hour + timedelta(hours=2))
    return NodeHourLedger.objects.get(node=node, hour_start=hour)


def test_depreciation_and_the_cards_embodied_life_start_at_the_price_in_service_date(
    finance: APIClient, node_a: Node
) -> None:
    price = bought(finance, node_a)

    book = finance.get(f"{URL}{price['id']}/book-value/", {"at": "2026-04-01T00:00:00Z"}).json()

    assert (book["in_service_at"], book["accumulated_depreciation"]) == ("2026-03-01T00:00:00Z", "1000.000000")
    cards = book["cards"]
    assert [card["index"] for card in cards] == [0, 1]
    for card in cards:
        assert card["in_service_at"] == "2026-03-01T00:00:00Z"  # not the node's commissioning, 2025-12-01
        assert card["embodied_until"] == "2030-02-28T00:00:00Z"
        assert (card["embodied_kgco2e"], card["profile_key"], card["linked"]) == ("197.000000", "h100-sxm", "node")


def test_the_lines_depreciate_from_march_and_the_embodied_carbon_ends_four_years_after(
    finance: APIClient, node_a: Node
) -> None:
    bought(finance, node_a)

    february, march = line(node_a, MAR_1 - timedelta(hours=1)), line(node_a, MAR_1)
    last, after = line(node_a, LIFE_END - timedelta(hours=1)), line(node_a, LIFE_END)

    assert february.depreciation_cost == 0
    assert march.depreciation_cost == (Decimal(1000) / 744).quantize(Decimal("1e-12"))  # 1,000 over 744 h
    # two cards (197 kg each) and the host share (312.5 kg per card), 4 x 8,760 h, in the life's last hour ...
    per_h = (2 * Decimal(197) + 2 * Decimal("312.5")) * 1000 / (4 * 8760)
    assert last.embodied_co2e_g_central == pytest.approx(per_h, rel=Decimal("1e-9"))
    # ... and none after it: fully allocated, known
    assert (after.embodied_co2e_g_central, after.embodied_unknown_gpu_h) == (0, 0)


def test_a_card_swapped_in_later_lists_its_own_installation_as_in_service_and_its_life_from_then(
    finance: APIClient, node_a: Node
) -> None:
    # given: the node's two original cards from its commissioning; card 1 replaced on 1 June 2026 by a new card
    price = bought(finance, node_a)
    original, replaced = node_a.gpus.order_by("index")
    commissioned, swapped = node_a.commissioned_at, datetime(2026, 6, 1, tzinfo=UTC)
    GpuInstallation.objects.create(gpu=original, installed_at=commissioned)
    GpuInstallation.objects.create(gpu=replaced, installed_at=commissioned, ended_at=swapped, ended_reason="replaced")
    new = GpuFactory(node=node_a, index=1, uuid="GPU-h100-a-new", name="NVIDIA H100 80GB HBM3")
    GpuInstallation.objects.create(gpu=new, installed_at=swapped)

    cards = finance.get(f"{URL}{price['id']}/book-value/").json()["cards"]

    # then: the original cards keep the node's in-service date; the new card's life runs from its installation
    dated = {card["gpu_id"]: (card["in_service_at"], card["embodied_until"]) for card in cards}
    assert dated[original.pk] == dated[replaced.pk] == ("2026-03-01T00:00:00Z", "2030-02-28T00:00:00Z")
    assert dated[new.pk] == ("2026-06-01T00:00:00Z", "2030-05-31T00:00:00Z")  # + 35,040 h
    # and the ledger charges by the same dates: past the node's life, the new card alone (197 kg / 35,040 h)
    after_node = line(node_a, LIFE_END)
    assert after_node.embodied_co2e_g_central == pytest.approx(Decimal(197) * 1000 / (4 * 8760), rel=Decimal("1e-9"))


def test_an_asset_row_names_the_price_it_was_bought_under_and_its_own_date_wins(
    finance: APIClient, node_a: Node
) -> None:
    price = bought(finance, node_a)
    gpu = node_a.gpus.order_by("index").first()

    created = finance.post(
        "/api/v1/gpu-assets/", {"gpu": gpu.pk, "node_price": price["id"], "acquired_on": "2026-02-01"}, format="json"
    )

    assert created.status_code == 201, created.content
    assert created.json()["node_price_id"] == price["id"]
    assert AuditEntry.objects.filter(subject="gpu_asset", after__node_price=price["id"]).count() == 1
    cards = finance.get(f"{URL}{price['id']}/book-value/").json()["cards"]
    assert [(c["index"], c["linked"], c["in_service_at"]) for c in cards] == [
        (0, "asset", "2026-02-01T00:00:00Z"),
        (1, "node", "2026-03-01T00:00:00Z"),
    ]


def test_a_card_cannot_name_a_rented_price_or_another_node_s_price(
    finance: APIClient, node_a: Node, node_b: Node
) -> None:
    rented = finance.post(URL, rent_body(node_a), format="json").json()
    other = bought(finance, node_b)
    gpu = node_a.gpus.order_by("index").first()

    for price_id in (rented["id"], other["id"]):
        response = finance.post("/api/v1/gpu-assets/", {"gpu": gpu.pk, "node_price": price_id}, format="json")
        assert response.status_code == 400
        assert "node_price" in response.json()["detail"]
    assert not GpuAsset.objects.exists()
