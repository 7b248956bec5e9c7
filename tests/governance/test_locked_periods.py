"""A closed period, once locked, keeps its inputs: changes within it are refused (409) until an admin unlocks."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounting.models import LedgerPending, NodePrice
from fleets.models import Node, Site
from governance.models import AuditEntry
from scope2.models import ContractualInstrument
from tests.helpers.inputs import hardware_cost, ledger_recompute, rent_body

pytestmark = pytest.mark.django_db

JANUARY = {"start": "2026-01-01T00:00:00Z", "end": "2026-02-01T00:00:00Z", "reason": "January closed"}


@pytest.fixture
def priced(finance: APIClient, node_a: Node) -> dict:
    """h100-a rented at 2.50 per GPU-hour from Jan 2, recomputed: 24 h x 2 GPUs x 2.50 = 120.00."""
    price = finance.post("/api/v1/node-prices/", rent_body(node_a), format="json").json()
    ledger_recompute()
    return price


def test_a_locked_period_refuses_a_price_change_until_an_admin_unlocks_it(
    finance: APIClient, admin_a: APIClient, node_a: Node, priced: dict
) -> None:
    lock = admin_a.post("/api/v1/locked-periods/", JANUARY, format="json")
    assert lock.status_code == 201
    url = f"/api/v1/node-prices/{priced['id']}/"

    refused = finance.patch(url, {"rate_per_h": "3.00"}, format="json")

    assert refused.status_code == 409
    assert refused.json()["detail"] == (
        "the period 2026-01-01T00:00:00+00:00 to 2026-02-01T00:00:00+00:00 is locked (January closed): "
        "this change would alter inputs in force within it; an admin must unlock it first"
    )
    assert NodePrice.objects.get().rate_per_h == Decimal("2.50")
    assert not LedgerPending.objects.exists()
    assert hardware_cost(node_a) == Decimal("120.00")
    # when the admin unlocks, the same change passes and the total follows
    assert admin_a.delete(f"/api/v1/locked-periods/{lock.json()['id']}/").status_code == 204
    assert finance.patch(url, {"rate_per_h": "3.00"}, format="json").json()["ledger_hours_reopened"] == 24
    ledger_recompute()
    assert hardware_cost(node_a) == Decimal("144.00")


def test_a_change_that_only_touches_hours_after_the_lock_passes(
    finance: APIClient, admin_a: APIClient, priced: dict
) -> None:
    admin_a.post("/api/v1/locked-periods/", JANUARY, format="json")
    ended = finance.patch(f"/api/v1/node-prices/{priced['id']}/", {"valid_to": "2026-03-01T00:00:00Z"}, format="json")
    assert (ended.status_code, ended.json()["ledger_hours_reopened"]) == (200, 0)
    later = rent_body(Node.objects.get(pk=priced["node_id"]), valid_from="2026-03-01T00:00:00Z")
    assert finance.post("/api/v1/node-prices/", later, format="json").status_code == 201


def test_a_new_price_starting_inside_the_lock_is_refused(finance: APIClient, admin_a: APIClient, node_b: Node) -> None:
    admin_a.post("/api/v1/locked-periods/", JANUARY, format="json")
    response = finance.post("/api/v1/node-prices/", rent_body(node_b), format="json")
    assert response.status_code == 409
    assert not NodePrice.objects.exists()


def test_pue_and_gpu_assets_are_refused_when_locked_lines_exist(
    finance: APIClient, admin_a: APIClient, site_a: Site, node_a: Node
) -> None:
    admin_a.post("/api/v1/locked-periods/", JANUARY, format="json")
    assert finance.put(f"/api/v1/sites/{site_a.pk}/pue/", {"pue": "1.5"}, format="json").status_code == 409
    gpu = node_a.gpus.first()
    assert finance.post("/api/v1/gpu-assets/", {"gpu": gpu.pk}, format="json").status_code == 409
    site_a.refresh_from_db()
    assert site_a.pue == Decimal("1.20")


def test_an_instrument_delivered_in_a_locked_period_is_refused(client_as, admin_a: APIClient, site_a: Site) -> None:
    admin_a.post("/api/v1/locked-periods/", JANUARY, format="json")
    body = {
        "site": site_a.pk, "kind": "go", "name": "Hydro GOs", "volume_mwh": "25",
        "delivery_start": "2026-01-01T00:00:00Z", "delivery_end": "2026-04-01T00:00:00Z", "vintage_year": 2026,
        "generation_zone": "NO", "technology": "hydro",
    }  # fmt: skip
    response = client_as("sustainability").post("/api/v1/instruments/", body, format="json")
    assert response.status_code == 409
    assert "is locked (January closed)" in response.json()["detail"]


def test_evidence_replaced_on_an_instrument_of_a_locked_period_is_refused(
    client_as, admin_a: APIClient, site_a: Site
) -> None:
    sustainability = client_as("sustainability")
    body = {
        "site": site_a.pk, "kind": "go", "name": "Hydro GOs", "volume_mwh": "25",
        "delivery_start": "2026-01-01T00:00:00Z", "delivery_end": "2026-04-01T00:00:00Z", "vintage_year": 2026,
        "generation_zone": "NO", "technology": "hydro",
    }  # fmt: skip
    instrument = sustainability.post("/api/v1/instruments/", body, format="json").json()
    url = f"/api/v1/instruments/{instrument['id']}/evidence/"
    first = SimpleUploadedFile("statement.pdf", b"%PDF-1.4 filed")
    assert sustainability.put(url, {"file": first}, format="multipart").status_code == 200
    admin_a.post("/api/v1/locked-periods/", JANUARY, format="json")
    audited = AuditEntry.objects.count()

    replaced = SimpleUploadedFile("other.pdf", b"%PDF-1.4 replaced")
    response = sustainability.put(url, {"file": replaced}, format="multipart")

    assert response.status_code == 409
    assert "is locked (January closed)" in response.json()["detail"]
    assert ContractualInstrument.objects.get().evidence_file_name == "statement.pdf"
    assert bytes(ContractualInstrument.objects.values_list("evidence_file", flat=True)[0]) == b"%PDF-1.4 filed"
    assert AuditEntry.objects.count() == audited


def test_a_lock_must_end_after_it_starts(admin_a: APIClient, org_a) -> None:
    response = admin_a.post("/api/v1/locked-periods/", JANUARY | {"end": JANUARY["start"]}, format="json")
    assert response.status_code == 400
    assert not AuditEntry.objects.exists()


def test_locking_and_unlocking_are_audited(admin_a: APIClient, org_a) -> None:
    lock = admin_a.post("/api/v1/locked-periods/", JANUARY, format="json").json()
    admin_a.delete(f"/api/v1/locked-periods/{lock['id']}/")
    assert list(AuditEntry.objects.order_by("id").values_list("subject", "action", "username")) == [
        ("locked_period", "create", "ada"),
        ("locked_period", "delete", "ada"),
    ]
