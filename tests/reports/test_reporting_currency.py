"""A USD rent at a SEK site and a EUR rent at a EUR site, rolled up into one USD total with the rates named.

Hand-worked, January 2026, 48 node-hours each (Jan 1-2), one GPU each, no tariff
(electricity unpriced, so cost is the rent):

- sto-1 (SEK): rent 2.00 USD per GPU-hour, converted at USD/SEK 10.5 (January average)
  = 21.00 SEK an hour, 1,008.00 SEK; in USD at SEK/USD 0.095 = 95.76 USD
- fra-1 (EUR): rent 1.50 EUR per GPU-hour = 72.00 EUR; in USD at EUR/USD 1.08 = 77.76 USD
- reporting total: 95.76 + 77.76 = 173.52 USD
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Node, Organization, Role
from tests.helpers.factories import FleetFactory, GpuFactory, MembershipFactory, NodeFactory, SiteFactory
from tests.helpers.inputs import ledger_recompute

pytestmark = pytest.mark.django_db

JAN_1 = datetime(2026, 1, 1, tzinfo=UTC)
HOURS = [JAN_1 + timedelta(hours=n) for n in range(48)]
SOURCE = "ECB reference rates"


@pytest.fixture
def finance(client_as: Callable[..., APIClient]) -> APIClient:
    return client_as(Role.FINANCE, username="fiona")


def _node(org: Organization, fleet: Any, currency: str, site: str, hostname: str) -> Node:
    site_row = SiteFactory(organization=org, name=site, currency=currency, grid_zone="")
    node = NodeFactory(fleet=fleet, site=site_row, hostname=hostname, commissioned_at=datetime(2025, 12, 1, tzinfo=UTC))
    GpuFactory(node=node, index=0, uuid=f"GPU-{hostname}-0")
    return node


def _rate(client: APIClient, currency: str, quote: str, rate: str, kind: str = "average") -> int:
    body = {"currency": currency, "quote_currency": quote, "month": "2026-01-01", "kind": kind, "rate": rate,
            "source": SOURCE}  # fmt: skip
    response = client.post("/api/v1/exchange-rates/", body, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def _rent(client: APIClient, node: Node, rate: str, currency: str = "") -> None:
    body = {"fleet": node.fleet_id, "node": node.pk, "kind": "rented", "rate_per_h": rate, "rate_per": "gpu",
            "currency": currency, "valid_from": "2025-12-01T00:00:00Z"}  # fmt: skip
    response = client.post("/api/v1/node-prices/", body, format="json")
    assert response.status_code == 201, response.content


@pytest.fixture
def books(org_a: Organization, finance: APIClient) -> dict[str, Any]:
    fleet = FleetFactory(organization=org_a, name="inference")
    sek, eur = _node(org_a, fleet, "SEK", "sto-1", "sek-1"), _node(org_a, fleet, "EUR", "fra-1", "eur-1")
    _rent(finance, sek, "2.00", currency="USD")
    _rent(finance, eur, "1.50")
    rates = {
        "USD/SEK": _rate(finance, "USD", "SEK", "10.5"),
        "SEK/USD": _rate(finance, "SEK", "USD", "0.095"),
        "EUR/USD": _rate(finance, "EUR", "USD", "1.08"),
    }
    answer = finance.patch("/api/v1/ledger-settings/", {"reporting_currency": "USD"}, format="json")
    assert answer.status_code == 200, answer.content
    for node in (sek, eur):
        ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)
    return {"sek": sek, "eur": eur, "rates": rates}


def _usage(client: APIClient) -> dict[str, Any]:
    response = client.get("/api/v1/reports/usage/", {"period": "2026-01", "granularity": "total", "group_by": "site"})
    assert response.status_code == 200, response.content
    return response.json()


def _named(currency: str, quote: str, rate: str) -> dict[str, Any]:
    return {"currency": currency, "quote_currency": quote, "month": "2026-01-01", "kind": "average", "rate": rate,
            "source": SOURCE, "inverted": False}  # fmt: skip


def test_a_usd_rent_at_a_sek_site_is_booked_in_sek_at_the_months_average_rate(books: dict[str, Any]) -> None:
    line = NodeHourLedger.objects.get(node=books["sek"], hour_start=JAN_1)

    assert (line.currency, line.price_currency, line.price_fx_rate) == ("SEK", "USD", Decimal("10.5"))
    assert (line.price_fx_month.isoformat(), line.price_fx_source) == ("2026-01-01", SOURCE)
    assert (line.rent_cost, line.cost, line.hardware_cost_unconverted) == (Decimal("21"), Decimal("21"), None)


def test_the_usage_report_rolls_both_sites_up_to_one_usd_total_naming_each_rate(
    finance: APIClient, books: dict[str, Any]
) -> None:
    reporting = _usage(finance)["reporting"]

    assert (reporting["currency"], reporting["rate_kind"], reporting["complete"]) == ("USD", "average", True)
    assert "IAS 21" in reporting["basis"]
    assert reporting["amounts"] == [
        {"figure": "cost", "currency": "EUR", "month": "2026-01-01", "amount": "72.00", "lines": 48,
         "converted": "77.76", "rate": _named("EUR", "USD", "1.0800000000")},
        {"figure": "cost", "currency": "SEK", "month": "2026-01-01", "amount": "1008.00", "lines": 48,
         "converted": "95.76", "rate": _named("SEK", "USD", "0.0950000000")},
    ]  # fmt: skip
    assert reporting["total"] == "173.52"
    assert sum(Decimal(item["converted"]) for item in reporting["amounts"]) == Decimal(reporting["total"])  # foots
    assert reporting["unconverted"] == []
    assert reporting["rates"] == [item["rate"] for item in reporting["amounts"]]


def test_a_missing_rate_leaves_the_amount_unconverted_and_counted_and_the_total_incomplete(
    finance: APIClient, books: dict[str, Any]
) -> None:
    # when the EUR/USD rate is deleted (and no USD/EUR is held either)
    assert finance.delete(f"/api/v1/exchange-rates/{books['rates']['EUR/USD']}/").status_code == 200

    reporting = _usage(finance)["reporting"]

    assert reporting["unconverted"] == [
        {"figure": "cost", "currency": "EUR", "month": "2026-01-01", "amount": "72.00", "lines": 48}
    ]
    assert [item["currency"] for item in reporting["amounts"]] == ["SEK"]  # the EUR cost is not in it as 0
    assert (reporting["total"], reporting["complete"]) == ("95.76", False)


def test_without_a_rate_for_the_price_the_lines_keep_the_rent_apart_counted_never_zero(
    finance: APIClient, books: dict[str, Any]
) -> None:
    # when USD/SEK and SEK/USD are deleted: the SEK site's 48 lines re-open (each time) and are recomputed
    for pair in ("USD/SEK", "SEK/USD"):
        answer = finance.delete(f"/api/v1/exchange-rates/{books['rates'][pair]}/")
        assert (answer.status_code, answer.json()["ledger_hours_reopened"]) == (200, 48)
    ledger_recompute()

    line = NodeHourLedger.objects.get(node=books["sek"], hour_start=JAN_1)
    assert (line.price_currency, line.price_fx_rate, line.hardware_cost_unconverted) == ("USD", None, Decimal("2"))
    assert (line.rent_cost, line.cost) == (Decimal(0), Decimal(0))
    report = _usage(finance)
    sek_row = next(row for row in report["results"] if row["group_label"] == "sto-1")
    assert (sek_row["hardware_unconverted_h"], sek_row["cost"]) == (48.0, "0.00")
    # the rent is in USD, the reporting currency: the total takes it as it is, named as what it is
    unconverted_rent = [
        item for item in report["reporting"]["amounts"] if item["figure"] == "hardware_cost_unconverted"
    ]
    assert unconverted_rent == [{"figure": "hardware_cost_unconverted", "currency": "USD", "month": "2026-01-01",
                                 "amount": "96.00", "lines": 48, "converted": "96.00", "rate": None}]  # fmt: skip


def test_the_report_takes_a_pair_held_only_the_other_way_round_at_its_reciprocal(
    finance: APIClient, books: dict[str, Any]
) -> None:
    # when SEK/USD is deleted, USD/SEK 10.5 converts the SEK cost: 1,008.00 / 10.5 = 96.00 USD
    finance.delete(f"/api/v1/exchange-rates/{books['rates']['SEK/USD']}/")

    reporting = _usage(finance)["reporting"]

    sek = next(item for item in reporting["amounts"] if item["currency"] == "SEK")
    assert (sek["converted"], sek["rate"]["inverted"], sek["rate"]["currency"]) == ("96.00", True, "SEK")
    assert (reporting["total"], reporting["complete"]) == ("173.76", True)


def test_a_rate_held_only_the_other_way_round_converts_at_its_reciprocal_and_says_so(
    org_a: Organization, finance: APIClient
) -> None:
    fleet = FleetFactory(organization=org_a, name="inference")
    sek = _node(org_a, fleet, "SEK", "sto-1", "sek-1")
    _rent(finance, sek, "2.00", currency="USD")
    _rate(finance, "SEK", "USD", "0.1")  # no USD/SEK: 1 / 0.1 = 10 SEK per USD

    ledger_node_hours_compute(node_id=sek.pk, hour_starts=HOURS[:1])

    line = NodeHourLedger.objects.get(node=sek, hour_start=JAN_1)
    assert (line.price_fx_rate, line.rent_cost) == (Decimal(10), Decimal(20))
    assert line.price_fx_source == f"1 / SEK/USD ({SOURCE})"


def test_without_a_reporting_currency_the_report_has_no_reporting_block(
    finance: APIClient, books: dict[str, Any]
) -> None:
    finance.patch("/api/v1/ledger-settings/", {"reporting_currency": ""}, format="json")

    assert _usage(finance)["reporting"] is None


def test_the_finance_page_shows_the_total_in_the_reporting_currency_with_its_rates(
    client: Client, org_a: Organization, books: dict[str, Any]
) -> None:
    client.force_login(MembershipFactory(organization=org_a, role=Role.VIEWER).user)

    page = client.get("/finance/", {"start": "2026-01-01", "end": "2026-02-01"}).content.decode()

    assert 'id="reporting-total"' in page
    assert "In USD:" in page and "173.52" in page
    assert "SEK→USD 0.0950000000 2026-01 (ECB reference rates)" in page
    assert "EUR→USD 1.0800000000 2026-01" in page


def test_the_usage_csv_keeps_its_columns_and_adds_each_rows_cost_in_the_reporting_currency(
    finance: APIClient, books: dict[str, Any]
) -> None:
    query = {"period": "2026-01", "granularity": "total", "group_by": "site", "format": "csv"}
    plain_columns = list(_usage(finance)["results"][0])

    response = finance.get("/api/v1/reports/usage/", query)

    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert list(rows[0])[: len(plain_columns)] == plain_columns  # the JSON fields first, unchanged
    assert list(rows[0])[len(plain_columns) :] == ["reporting_currency", "cost_in_reporting_currency", "reporting_rate"]
    by_site = {row["group_label"]: row for row in rows}
    assert (by_site["sto-1"]["cost_in_reporting_currency"], by_site["fra-1"]["cost_in_reporting_currency"]) == (
        "95.76", "77.76"
    )  # fmt: skip
    assert by_site["sto-1"]["reporting_rate"] == f"SEK/USD 0.095 average 2026-01 ({SOURCE})"
