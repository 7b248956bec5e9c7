"""The exchange-rate table and a price's currency through the API: roles, audit, locks, bad values named."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounting.models import ExchangeRate, LedgerPending, LedgerSettings, NodeHourLedger
from fleets.models import Node, Organization, Role
from governance.models import AuditEntry, LockedPeriod
from tests.helpers.inputs import JAN_1, JAN_2, JAN_3, ledger_recompute, rent_body
from tests.helpers.uploads import upload_answer

pytestmark = pytest.mark.django_db

USD_EUR = {"currency": "USD", "quote_currency": "EUR", "month": "2026-01-01", "kind": "average", "rate": "0.92",
           "source": "ECB reference rates"}  # fmt: skip


def test_a_rate_is_created_audited_and_answered(finance: APIClient, org_a: Organization) -> None:
    response = finance.post("/api/v1/exchange-rates/", USD_EUR, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["organization_id"], body["rate"], body["month"], body["kind"]) == (
        org_a.pk, "0.9200000000", "2026-01-01", "average"
    )  # fmt: skip
    entry = AuditEntry.objects.get(subject="exchange_rate")
    assert (entry.object_id, entry.action, entry.after["rate"]) == (body["id"], "create", "0.9200000000")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"currency": "XYZ"}, "currency"),
        ({"quote_currency": "usd"}, "quote_currency"),
        ({"quote_currency": "USD"}, "quote_currency"),  # the same currency both sides
        ({"rate": "0"}, "rate"),
        ({"rate": "-1.2"}, "rate"),
        ({"month": "2026-01-15"}, "month"),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(
    finance: APIClient, org_a: Organization, change: Any, field: str
) -> None:
    response = finance.post("/api/v1/exchange-rates/", USD_EUR | change, format="json")

    assert response.status_code == 400
    assert field in response.json()
    assert (ExchangeRate.objects.count(), AuditEntry.objects.count()) == (0, 0)


def test_the_same_pair_month_and_kind_twice_is_refused(finance: APIClient, org_a: Organization) -> None:
    finance.post("/api/v1/exchange-rates/", USD_EUR, format="json")

    response = finance.post("/api/v1/exchange-rates/", USD_EUR | {"rate": "0.93"}, format="json")

    assert response.status_code == 400
    assert "holds this rate already" in response.json()["detail"]


@pytest.mark.parametrize("role", [Role.VIEWER, Role.ENGINEER, Role.SUSTAINABILITY])
def test_a_role_without_prices_cannot_write_a_rate(client_as: Callable[..., APIClient], org_a: Any, role: str) -> None:
    client = client_as(role)

    assert client.post("/api/v1/exchange-rates/", USD_EUR, format="json").status_code == 403
    assert client.get("/api/v1/exchange-rates/").status_code == 200  # any member reads
    assert ExchangeRate.objects.count() == 0


def test_another_organizations_rates_are_invisible(
    finance: APIClient, org_b: Organization, client_as: Callable[..., APIClient]
) -> None:
    theirs = client_as(Role.FINANCE, organization=org_b, username="bob")
    rate_id = theirs.post("/api/v1/exchange-rates/", USD_EUR, format="json").json()["id"]

    assert finance.get("/api/v1/exchange-rates/").json() == []
    assert finance.get(f"/api/v1/exchange-rates/{rate_id}/").status_code == 404
    assert finance.patch(f"/api/v1/exchange-rates/{rate_id}/", {"rate": "1"}, format="json").status_code == 404
    assert finance.delete(f"/api/v1/exchange-rates/{rate_id}/").status_code == 404
    assert ExchangeRate.objects.get(pk=rate_id).rate == Decimal("0.92")


def test_a_rate_of_a_locked_month_is_refused_and_nothing_changes(finance: APIClient, org_a: Organization) -> None:
    rate_id = finance.post("/api/v1/exchange-rates/", USD_EUR, format="json").json()["id"]
    LockedPeriod.objects.create(organization=org_a, start=JAN_1, end=JAN_2, reason="Jan 1 closed", locked_at=JAN_3)
    audited = AuditEntry.objects.count()

    changed = finance.patch(f"/api/v1/exchange-rates/{rate_id}/", {"rate": "0.95"}, format="json")
    deleted = finance.delete(f"/api/v1/exchange-rates/{rate_id}/")
    created = finance.post("/api/v1/exchange-rates/", USD_EUR | {"kind": "closing"}, format="json")

    assert (changed.status_code, deleted.status_code, created.status_code) == (409, 409, 409)
    assert "is locked" in changed.json()["detail"]
    assert list(ExchangeRate.objects.values_list("rate", flat=True)) == [Decimal("0.92")]
    assert AuditEntry.objects.count() == audited
    # a month apart from the lock is open
    assert finance.post("/api/v1/exchange-rates/", USD_EUR | {"month": "2026-02-01"}, format="json").status_code == 201


def test_a_usd_rent_at_a_eur_site_converts_and_an_average_rate_change_reopens_its_hours(
    finance: APIClient, node_a: Node
) -> None:
    # given a rent of 2.50 USD per GPU-hour from Jan 2 on h100-a (2 GPUs) at fra-1 (EUR), and USD/EUR 0.92
    assert finance.post("/api/v1/node-prices/", rent_body(node_a, currency="USD"), format="json").status_code == 201
    rate_id = finance.post("/api/v1/exchange-rates/", USD_EUR, format="json").json()["id"]
    ledger_recompute()
    line = NodeHourLedger.objects.get(node=node_a, hour_start=JAN_2)
    assert (line.price_currency, line.price_fx_rate, line.rent_cost) == ("USD", Decimal("0.92"), Decimal("4.6"))

    # when the rate changes: the 24 hours that converted through it re-open
    response = finance.patch(f"/api/v1/exchange-rates/{rate_id}/", {"rate": "0.90"}, format="json")

    assert (response.status_code, response.json()["ledger_hours_reopened"]) == (200, 24)
    assert LedgerPending.objects.filter(node=node_a).count() == 24
    ledger_recompute()
    assert NodeHourLedger.objects.get(node=node_a, hour_start=JAN_2).rent_cost == Decimal("4.5")  # 2 x 2.50 x 0.90
    entry = AuditEntry.objects.filter(subject="exchange_rate").latest("pk")
    assert (entry.before["rate"], entry.after["rate"], entry.ledger_hours_reopened) == ("0.9200000000", "0.9000000000",
                                                                                       24)  # fmt: skip


def test_a_closing_rate_reopens_no_line(finance: APIClient, node_a: Node) -> None:
    finance.post("/api/v1/node-prices/", rent_body(node_a, currency="USD"), format="json")
    ledger_recompute()

    response = finance.post("/api/v1/exchange-rates/", USD_EUR | {"kind": "closing"}, format="json")

    assert (response.status_code, response.json()["ledger_hours_reopened"]) == (201, 0)


@pytest.mark.parametrize("currency", ["XYZ", "usd", "US"])
def test_a_price_in_an_unknown_currency_is_refused_naming_currency(
    finance: APIClient, node_a: Node, currency: str
) -> None:
    response = finance.post("/api/v1/node-prices/", rent_body(node_a, currency=currency), format="json")

    assert response.status_code == 400
    assert "currency" in response.json()


def test_rates_upload_from_csv_replaces_a_month_sent_again(finance: APIClient, org_a: Organization) -> None:
    text = (
        "currency,quote_currency,month,kind,rate,source\n"
        "USD,EUR,2026-01-01,average,0.92,ECB\nUSD,SEK,2026-01-01,,10.5,\n"
    )

    first = upload_answer(
        finance, "/api/v1/exchange-rates/upload/", {"file": SimpleUploadedFile("r.csv", text.encode())}
    )
    again = text.replace("0.92", "0.93")
    second = upload_answer(
        finance, "/api/v1/exchange-rates/upload/", {"file": SimpleUploadedFile("r.csv", again.encode())}
    )

    assert (first.status_code, first.json()["saved"], second.status_code) == (201, 2, 201)
    assert ExchangeRate.objects.get(quote_currency="EUR").rate == Decimal("0.93")
    assert ExchangeRate.objects.get(quote_currency="SEK").kind == "average"  # kind left out: the month's average
    assert AuditEntry.objects.filter(subject="exchange_rate").count() == 4


def test_an_upload_with_a_bad_rate_saves_nothing_and_names_the_field(finance: APIClient, org_a: Organization) -> None:
    text = "currency,quote_currency,month,rate\nUSD,EUR,2026-01-01,0.92\nUSD,SEK,2026-01-01,0\nUSD,XYZ,2026-01-01,1\n"

    answer = upload_answer(
        finance, "/api/v1/exchange-rates/upload/", {"file": SimpleUploadedFile("r.csv", text.encode())}
    )

    assert answer.status_code == 400
    reasons = {row["line"]: row["reason"] for row in answer.json()["refused"]}
    assert reasons[3].startswith("rate:") and reasons[4].startswith("quote_currency:")
    assert ExchangeRate.objects.count() == 0


def test_a_viewer_cannot_upload_rates(client_as: Callable[..., APIClient], org_a: Organization) -> None:
    text = "currency,quote_currency,month,rate\nUSD,EUR,2026-01-01,0.92\n"
    answer = upload_answer(
        client_as(Role.VIEWER), "/api/v1/exchange-rates/upload/", {"file": SimpleUploadedFile("r.csv", text.encode())}
    )

    assert answer.status_code == 403


def test_the_reporting_currency_is_set_through_the_api_audited_and_checked(
    finance: APIClient, client_as: Callable[..., APIClient], org_a: Organization
) -> None:
    refused = finance.patch("/api/v1/ledger-settings/", {"reporting_currency": "XYZ"}, format="json")
    viewer = client_as(Role.VIEWER).patch("/api/v1/ledger-settings/", {"reporting_currency": "USD"}, format="json")
    saved = finance.patch("/api/v1/ledger-settings/", {"reporting_currency": "USD"}, format="json")

    assert (refused.status_code, "reporting_currency" in refused.json(), viewer.status_code) == (400, True, 403)
    assert (saved.status_code, saved.json()["reporting_currency"]) == (200, "USD")
    assert finance.get("/api/v1/ledger-settings/").json() == {"organization_id": org_a.pk, "reporting_currency": "USD"}
    assert LedgerSettings.objects.get(organization=org_a).reporting_currency == "USD"
    assert AuditEntry.objects.filter(subject="ledger_settings").count() == 1


def _owned_eur_price(finance: APIClient, node: Node) -> int:
    # 12,000 EUR over 1 year by month to a salvage of 1,200: 900 a month; on Apr 1, 3 months on: 9,300 EUR
    body = rent_body(
        node, kind="owned", rate_per_h=None, capex="12000", lifetime_years="1", salvage_value="1200",
        in_service_at=JAN_1.isoformat(), valid_from=JAN_1.isoformat(),
    )  # fmt: skip
    response = finance.post("/api/v1/node-prices/", body, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def test_a_book_value_in_the_reporting_currency_is_at_the_closing_rate_of_its_month(
    finance: APIClient, node_a: Node
) -> None:
    price_id = _owned_eur_price(finance, node_a)
    finance.patch("/api/v1/ledger-settings/", {"reporting_currency": "USD"}, format="json")
    closing = {"currency": "EUR", "quote_currency": "USD", "month": "2026-04-01", "kind": "closing", "rate": "1.10",
               "source": "ECB"}  # fmt: skip
    finance.post("/api/v1/exchange-rates/", closing, format="json")
    finance.post("/api/v1/exchange-rates/", closing | {"kind": "average", "rate": "1.05"}, format="json")

    book = finance.get(f"/api/v1/node-prices/{price_id}/book-value/", {"at": "2026-04-01T00:00:00Z"}).json()

    assert (book["currency"], book["book_value"]) == ("EUR", "9300.000000")
    reporting = book["reporting"]
    assert (reporting["currency"], reporting["rate_kind"], reporting["total"], reporting["complete"]) == (
        "USD", "closing", "10230.00", True
    )  # fmt: skip  # 9,300 x 1.10, not the average 1.05
    named = {"currency": "EUR", "quote_currency": "USD", "month": "2026-04-01", "kind": "closing",
             "rate": "1.1000000000", "source": "ECB", "inverted": False}  # fmt: skip
    assert reporting["rates"] == [named]


def test_a_book_value_with_no_closing_rate_is_listed_unconverted(finance: APIClient, node_a: Node) -> None:
    price_id = _owned_eur_price(finance, node_a)
    finance.patch("/api/v1/ledger-settings/", {"reporting_currency": "USD"}, format="json")

    book = finance.get(f"/api/v1/node-prices/{price_id}/book-value/", {"at": "2026-04-01T00:00:00Z"}).json()

    assert book["reporting"]["unconverted"] == [
        {"figure": "book_value", "currency": "EUR", "month": "2026-04-01", "amount": "9300.00", "lines": 1}
    ]
    assert (book["reporting"]["total"], book["reporting"]["complete"]) == (None, False)  # no total, not 0
