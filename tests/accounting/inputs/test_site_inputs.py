"""Tariffs (time-of-use included), site PUE and GPU assets through the API, and the hours they re-open."""

from __future__ import annotations

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounting.models import GpuAsset, LedgerPending, NodeHourLedger, SiteTariff
from fleets.models import Node, Site
from tests.helpers.inputs import JAN_2, ledger_recompute

pytestmark = pytest.mark.django_db

TOU = [
    {"name": "peak", "start": "07:00", "end": "23:00", "price_per_kwh": "0.31"},
    {"name": "off-peak", "start": "23:00", "end": "07:00", "price_per_kwh": "0.12"},
]


def test_a_time_of_use_tariff_reopens_the_hours_of_every_node_of_the_site(
    finance: APIClient, site_a: Site, node_a: Node, node_b: Node
) -> None:
    body = {"site": site_a.pk, "windows": TOU, "valid_from": JAN_2.isoformat()}
    response = finance.post("/api/v1/site-tariffs/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["ledger_hours_reopened"] == 2 * 24
    assert SiteTariff.objects.get().windows[0] == TOU[0] | {"price_per_kwh": "0.310000"}


def test_windows_that_leave_hours_uncovered_are_refused_with_the_reason(finance: APIClient, site_a: Site) -> None:
    body = {"site": site_a.pk, "windows": TOU[:1], "valid_from": JAN_2.isoformat()}
    response = finance.post("/api/v1/site-tariffs/", body, format="json")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("windows:")
    assert not SiteTariff.objects.exists()


def test_a_flat_price_replaces_windows_and_an_overlap_is_refused(finance: APIClient, site_a: Site) -> None:
    created = finance.post(
        "/api/v1/site-tariffs/", {"site": site_a.pk, "windows": TOU, "valid_from": JAN_2.isoformat()}, format="json"
    ).json()
    changed = finance.patch(f"/api/v1/site-tariffs/{created['id']}/", {"flat_price_per_kwh": "0.25"}, format="json")
    assert (changed.status_code, changed.json()["windows"]) == (200, [])
    overlapping = {"site": site_a.pk, "flat_price_per_kwh": "0.2", "valid_from": "2026-06-01T00:00:00Z"}
    assert finance.post("/api/v1/site-tariffs/", overlapping, format="json").status_code == 400
    assert SiteTariff.objects.count() == 1


def test_a_pue_change_reopens_every_stored_hour_of_the_site_and_the_energy_follows(
    finance: APIClient, site_a: Site, node_a: Node, node_b: Node
) -> None:
    response = finance.put(f"/api/v1/sites/{site_a.pk}/pue/", {"pue": "1.35"}, format="json")
    assert response.json() == {"site_id": site_a.pk, "pue": "1.35", "ledger_hours_reopened": 96}
    ledger_recompute()
    assert set(NodeHourLedger.objects.values_list("pue", flat=True)) == {Decimal("1.35")}


def test_a_pue_below_one_is_refused(finance: APIClient, site_a: Site) -> None:
    assert finance.put(f"/api/v1/sites/{site_a.pk}/pue/", {"pue": "0.9"}, format="json").status_code == 400
    assert not LedgerPending.objects.exists()


def test_a_gpu_asset_reopens_its_nodes_stored_hours(finance: APIClient, node_a: Node, node_b: Node) -> None:
    gpu = node_a.gpus.first()
    body = {"gpu": gpu.pk, "acquired_on": "2025-06-01", "condition": "second_hand", "prior_use_years": "1.5"}
    response = finance.post("/api/v1/gpu-assets/", body, format="json")
    assert (response.status_code, response.json()["ledger_hours_reopened"]) == (201, 48)
    assert set(LedgerPending.objects.values_list("node_id", flat=True)) == {node_a.pk}
    again = finance.post("/api/v1/gpu-assets/", body, format="json")
    assert again.status_code == 400
    changed = finance.patch(f"/api/v1/gpu-assets/{response.json()['id']}/", {"condition": "new"}, format="json")
    assert changed.status_code == 400
    assert "a new GPU has no prior use" in changed.json()["detail"]
    assert GpuAsset.objects.get().condition == "second_hand"
