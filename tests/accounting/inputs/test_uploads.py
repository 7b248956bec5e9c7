"""Node prices from CSV: every row checked, refused rows answered with their reasons, all or nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounting.models import LedgerPending, NodePrice
from fleets.models import Node, Role
from governance.models import AuditEntry
from tests.helpers.uploads import upload_answer

pytestmark = pytest.mark.django_db

HEADER = "fleet,node,kind,rate_per_h,rate_per,capex,lifetime_years,valid_from,valid_to\n"


def upload(client: APIClient, text: str) -> Any:
    return upload_answer(client, "/api/v1/node-prices/upload/", {"file": SimpleUploadedFile("p.csv", text.encode())})


def test_a_good_file_is_saved_whole_and_reopens_its_hours(finance: APIClient, node_a: Node, node_b: Node) -> None:
    text = HEADER + (
        "inference,h100-a,rented,2.50,gpu,,,2026-01-02T00:00:00Z,\ninference,,owned,,,35040,4,2026-01-01T00:00:00Z,\n"
    )
    response = upload(finance, text)
    assert response.status_code == 201, response.content
    # h100-a's own rent: 24 h; the fleet default: h100-a's Jan 1 and h100-b's 48 h
    assert response.json() == {"saved": 2, "ledger_hours_reopened": 24 + 24 + 48}


def test_refused_rows_are_answered_with_their_reasons_and_nothing_is_saved(finance: APIClient, node_a: Node) -> None:
    text = HEADER + (
        "inference,h100-a,rented,2.50,gpu,,,2026-01-02T00:00:00Z,\n"
        "inference,h100-a,rented,2.75,gpu,,,2026-01-05T00:00:00Z,\n"
        "inference,h100-z,rented,1,gpu,,,2026-01-01T00:00:00Z,\n"
        "inference,h100-a,owned,,,-5,4,2026-01-01T00:00:00Z,\n"
        "inference,h100-a,rented,1,gpu,,,not a date,\n"
    )
    response = upload(finance, text)

    assert response.status_code == 400
    body = response.json()
    assert body["detail"] == "4 row(s) refused; nothing was saved"
    reasons = {row["line"]: row["reason"] for row in body["refused"]}
    assert set(reasons) == {3, 4, 5, 6}
    assert "overlaps another one" in reasons[3]
    assert reasons[4] == "node: no node h100-z in fleet inference"
    assert reasons[5].startswith("capex:")
    assert reasons[6].startswith("valid_from:")
    assert body["refused"][1]["row"]["node"] == "h100-z"
    assert (NodePrice.objects.count(), LedgerPending.objects.count(), AuditEntry.objects.count()) == (0, 0, 0)


def test_a_file_without_the_needed_columns_is_refused(finance: APIClient, node_a: Node) -> None:
    response = upload(finance, "fleet,kind\ninference,rented\n")
    assert (response.status_code, response.json()["detail"]) == (400, "the header lacks the columns valid_from")


@pytest.mark.parametrize("role", [Role.SUSTAINABILITY, Role.ENGINEER, Role.VIEWER])
def test_only_admin_and_finance_upload_prices(client_as: Callable[..., APIClient], node_a: Node, role: str) -> None:
    text = HEADER + "inference,h100-a,rented,2.50,gpu,,,2026-01-02T00:00:00Z,\n"
    assert upload(client_as(role), text).status_code == 403
    assert upload(client_as(Role.ADMIN), text).status_code == 201


INSTRUMENTS_URL = "/api/v1/instruments/upload/"
INSTRUMENTS = (
    "site,kind,name,volume_mwh,delivery_start,delivery_end,vintage_year,generation_zone,technology,"
    "certificate_ref,certificate_mwh\n"
)


def test_instruments_from_csv_are_checked_row_by_row_against_over_allocation(
    client_as: Callable[..., APIClient], site_a, org_a
) -> None:
    text = INSTRUMENTS + (
        "fra-1,go,Hydro Q1,60,2025-01-01T00:00:00Z,2025-04-01T00:00:00Z,2025,NO,hydro,NECS-1,100\n"
        "fra-1,go,Hydro Q2,50,2025-04-01T00:00:00Z,2025-07-01T00:00:00Z,2025,NO,hydro,NECS-1,\n"
        "ber-9,go,Wind,1,2025-01-01T00:00:00Z,2025-04-01T00:00:00Z,2025,DE,wind,,\n"
    )
    client = client_as(Role.SUSTAINABILITY)
    response = upload_answer(client, INSTRUMENTS_URL, {"file": SimpleUploadedFile("i.csv", text.encode())})

    assert response.status_code == 400
    reasons = {row["line"]: row["reason"] for row in response.json()["refused"]}
    assert set(reasons) == {3, 4}
    assert "NECS-1" in reasons[3]  # 60 + 50 MWh claimed on a 100 MWh certificate
    assert reasons[4] == "site: no site of that name in this organization"
    assert client.get("/api/v1/instruments/").json() == []
    assert (
        client_as(Role.FINANCE)
        .post("/api/v1/instruments/upload/", {"file": SimpleUploadedFile("i.csv", text.encode())})
        .status_code
        == 403
    )


def test_a_good_instruments_file_is_saved_and_audited(client_as: Callable[..., APIClient], site_a, org_a) -> None:
    text = INSTRUMENTS + "fra-1,go,Hydro Q1,60,2025-01-01T00:00:00Z,2025-04-01T00:00:00Z,2025,NO,hydro,NECS-1,100\n"
    client = client_as(Role.SUSTAINABILITY)
    response = upload_answer(client, INSTRUMENTS_URL, {"file": SimpleUploadedFile("i.csv", text.encode())})
    assert (response.status_code, response.json()["saved"]) == (201, 1)
    assert [row["name"] for row in client.get("/api/v1/instruments/").json()] == ["Hydro Q1"]
    assert AuditEntry.objects.get().subject == "instrument"


def test_a_file_past_the_limit_is_refused_before_it_is_read(finance: APIClient, node_a: Node, monkeypatch) -> None:
    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("an oversized file was read")

    monkeypatch.setattr("accounting.inputs.upload_runs.csv_check", unread)
    big = SimpleUploadedFile("prices.csv", b"fleet,kind,valid_from\n" + b"x" * (2 * 1024 * 1024))
    response = finance.post("/api/v1/node-prices/upload/", {"file": big}, format="multipart")
    assert (response.status_code, response.json()) == (400, {"detail": "files are limited to 2097152 bytes"})
    assert not NodePrice.objects.exists()


@pytest.mark.parametrize("ref", ["A\x00", "Aé", "org a", "../org-a"])
def test_an_organization_no_slug_can_name_is_not_found_and_nothing_is_saved(
    finance: APIClient, node_a: Node, ref: str
) -> None:
    answer = finance.post(
        "/api/v1/node-prices/upload/",
        {"file": SimpleUploadedFile("p.csv", b"fleet,node,rate_per_h\n"), "organization": ref},
    )

    assert answer.status_code == 404
    assert "among yours" in answer.json()["detail"]
    assert not NodePrice.objects.exists()
