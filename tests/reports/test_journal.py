"""The journal export: a month's entries foot to the usage report's cost, with a rounding line where needed.

November holds H2 and H3 of tests/reports/conftest.py: h100-a 2 x (5.00 rent + 0.54 electricity), rtx-a
2 x (1.00 depreciation + 0.20 running cost + 0.264 electricity): 11.08 + 2.928 = 14.008, shown as 14.01.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from reports.focus.columns import Account, Charge, ChargeKind, Footprint
from reports.journal import JOURNAL_COLUMNS, journal_rows


def _journal(client: Any, **query: str) -> list[dict[str, str]]:
    response = client.get("/api/v1/reports/journal/", query)
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def _expenses(rows: list[dict[str, str]]) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        if row["account"].startswith("6"):
            totals[row["currency"]] += Decimal(row["debit"]) - Decimal(row["credit"])
    return dict(totals)


@pytest.mark.django_db
def test_the_journal_foots_to_the_usage_reports_cost_for_the_month(token_client_a: Any, fleets: Any) -> None:
    # when
    rows = _journal(token_client_a, period="2026-11")
    usage = token_client_a.get(
        "/api/v1/reports/usage/", {"period": "2026-11", "granularity": "total", "group_by": "currency"}
    ).json()["results"]
    # then
    assert list(rows[0]) == JOURNAL_COLUMNS
    assert _expenses(rows) == {row["currency"]: Decimal(row["cost"]) for row in usage} == {"USD": Decimal("14.01")}
    assert sum(Decimal(row["debit"]) for row in rows) == sum(Decimal(row["credit"]) for row in rows)
    by_account = {(row["cost_centre"], row["account"]): row["debit"] for row in rows if row["debit"] != "0.00"}
    assert by_account == {
        ("enterprise", "6100"): "10.00",
        ("enterprise", "6400"): "1.08",
        ("consumer", "6200"): "2.00",
        ("consumer", "6300"): "0.40",
        ("consumer", "6400"): "0.53",
    }
    assert {row["entity"] for row in rows} == {fleets.h100.fleet.organization.name}
    assert all(row["period"] == "2026-11" and row["reference"] for row in rows)


@pytest.mark.django_db
def test_the_journal_needs_a_month(token_client_a: Any, fleets: Any) -> None:
    assert token_client_a.get("/api/v1/reports/journal/", {"period": "2026"}).status_code == 400
    assert token_client_a.get("/api/v1/reports/journal/").status_code == 400


def _electricity(fleet_id: int, cost: str) -> Charge:
    account = Account(1, "Org", fleet_id, f"fleet {fleet_id}", "site", "DE", fleet_id, f"node-{fleet_id}", "owned")
    start = datetime(2026, 11, 1, tzinfo=UTC)
    return Charge(
        kind=ChargeKind.ELECTRICITY, account=account, start=start, end=start + timedelta(hours=1), currency="EUR",
        billed=Decimal(cost), effective=Decimal(cost), pricing_quantity=Decimal(1), pricing_unit="kWh",
        consumed_quantity=Decimal(1), consumed_unit="kWh", sku_id="electricity", sku_price_id="tariff-1",
        footprint=Footprint(ledger_hours=1),
    )  # fmt: skip


def test_a_rounding_line_makes_the_rounded_lines_foot_to_the_total_rounded_once() -> None:
    # given: three cost centres of 0.335 each: 0.34 x 3 = 1.02 rounded apart, 1.005 -> 1.01 rounded once
    charges = [_electricity(fleet_id, "0.335") for fleet_id in (1, 2, 3)]
    # when
    rows = list(journal_rows(charges, period="2026-11", reference="ref"))
    # then
    rounding = [row for row in rows if row["charge_kind"] == "rounding"]
    assert [(row["account"], row["debit"], row["credit"]) for row in rounding] == [
        ("6990", Decimal("0.00"), Decimal("0.01")),
        ("2000", Decimal("0.01"), Decimal("0.00")),
    ]
    expense = sum(row["amount"] for row in rows if row["account"].startswith("6"))
    assert expense == Decimal("1.01")
    assert sum(row["debit"] for row in rows) == sum(row["credit"] for row in rows)
