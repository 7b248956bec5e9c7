"""Hardware left unconverted (a price in a currency no rate converts) in the FOCUS export and the journal.

January 2026, Jan 1-2 (48 node-hours each), both nodes at sto-1 (SEK), one GPU each, no tariff, no exchange
rates at all, reporting currency SEK:

- sek-rent: commissioned at 00:30 on Jan 1 (47.5 GPU-hours held), rented at 2.10 USD per GPU-hour:
  99.75 USD unconverted;
- sek-own: owned, 8,760 EUR over 1 year by hour from 2025-12-01 (1.00 EUR an hour) + 0.30 EUR an hour
  running: 48.00 EUR depreciation + 14.40 EUR running cost = 62.40 EUR unconverted.

Neither is in a line's cost (0 SEK); the usage report lists them under ``reporting.unconverted``.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Organization, Role
from tests.helpers.factories import FleetFactory, GpuFactory, NodeFactory, SiteFactory

pytestmark = pytest.mark.django_db

JAN_1 = datetime(2026, 1, 1, tzinfo=UTC)
HOURS = [JAN_1 + timedelta(hours=n) for n in range(48)]
DEC_1 = datetime(2025, 12, 1, tzinfo=UTC)
COMMISSIONED = DEC_1.isoformat()
ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = ROOT.parent / "shared" / "bin" / "focus-validate"
FOCUS_CHECK = ROOT / "bin" / "focus-check"


@pytest.fixture
def finance(client_as: Callable[..., APIClient]) -> APIClient:
    return client_as(Role.FINANCE, username="fiona")


def _price(client: APIClient, node: Any, **body: str) -> None:
    body = {"fleet": node.fleet_id, "node": node.pk, "valid_from": COMMISSIONED} | body
    response = client.post("/api/v1/node-prices/", body, format="json")
    assert response.status_code == 201, response.content


@pytest.fixture
def books(org_a: Organization, finance: APIClient) -> None:
    fleet = FleetFactory(organization=org_a, name="nordic")
    site = SiteFactory(organization=org_a, name="sto-1", currency="SEK", grid_zone="")
    nodes = []
    for hostname, commissioned in (("sek-rent", JAN_1 + timedelta(minutes=30)), ("sek-own", DEC_1)):
        node = NodeFactory(fleet=fleet, site=site, hostname=hostname, commissioned_at=commissioned)
        GpuFactory(node=node, index=0, uuid=f"GPU-{hostname}-0")
        nodes.append(node)
    _price(finance, nodes[0], kind="rented", rate_per_h="2.10", rate_per="gpu", currency="USD")
    _price(finance, nodes[1], kind="owned", capex="8760", lifetime_years="1", depreciation_method="hour",
           opex_per_h="0.30", currency="EUR")  # fmt: skip
    answer = finance.patch("/api/v1/ledger-settings/", {"reporting_currency": "SEK"}, format="json")
    assert answer.status_code == 200, answer.content
    for node in nodes:
        ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)


def _csv(client: APIClient, url: str, **query: str) -> str:
    response = client.get(url, query)
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content).decode()


def _unconverted(client: APIClient) -> dict[str, Decimal]:
    report = client.get("/api/v1/reports/usage/", {"period": "2026-01", "granularity": "total"}).json()
    assert report["reporting"]["complete"] is False
    return {item["currency"]: Decimal(item["amount"]) for item in report["reporting"]["unconverted"]}


def test_focus_bills_the_unconverted_hardware_in_the_price_s_currency(finance: APIClient, books: None) -> None:
    rows = list(csv.DictReader(io.StringIO(_csv(finance, "/api/v1/reports/focus/", period="2026-01"))))

    effective: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    for row in rows:
        effective[(row["ResourceName"], row["x_ChargeKind"], row["BillingCurrency"])] += Decimal(row["EffectiveCost"])
    assert dict(effective) == {
        ("sek-rent", "rent", "USD"): Decimal("99.75"),
        ("sek-own", "depreciation", "EUR"): Decimal("48"),
        ("sek-own", "opex", "EUR"): Decimal("14.4"),
    }
    depreciation = next(row for row in rows if row["x_ChargeKind"] == "depreciation")
    organization = depreciation["BillingAccountId"]
    assert (depreciation["BilledCost"], depreciation["InvoiceId"]) == ("0", f"{organization}-2026-01-EUR")
    by_currency: dict[str, Decimal] = defaultdict(Decimal)
    for (_, _, currency), amount in effective.items():
        by_currency[currency] += amount
    assert dict(by_currency) == _unconverted(finance) == {"USD": Decimal("99.75"), "EUR": Decimal("62.40")}


def test_the_journal_books_the_unconverted_hardware_in_its_currency(finance: APIClient, books: None) -> None:
    rows = list(csv.DictReader(io.StringIO(_csv(finance, "/api/v1/reports/journal/", period="2026-01"))))

    expense_debits = {(row["currency"], row["account"], row["debit"]) for row in rows if row["account"][0] == "6"}
    assert expense_debits == {("USD", "6100", "99.75"), ("EUR", "6200", "48.00"), ("EUR", "6300", "14.40")}
    expenses: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        if row["account"].startswith("6"):
            expenses[row["currency"]] += Decimal(row["amount"])
    assert dict(expenses) == _unconverted(finance)
    assert sum(Decimal(r["debit"]) for r in rows) == sum(Decimal(r["credit"]) for r in rows)


@pytest.mark.skipif(not VALIDATOR.exists(), reason=f"the FinOps Foundation's validator is not at {VALIDATOR}")
def test_the_export_with_unconverted_rows_passes_the_focus_validator(
    finance: APIClient, books: None, tmp_path: Path
) -> None:
    path = tmp_path / "focus.csv"
    path.write_text(_csv(finance, "/api/v1/reports/focus/", period="2026-01", granularity="day"), encoding="utf-8")

    result = subprocess.run(
        [str(FOCUS_CHECK), str(path)], capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "FOCUS_VALIDATE": str(VALIDATOR)},
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
