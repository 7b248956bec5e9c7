"""The FOCUS 1.2 export: rented, owned and EUR-billed rows worked by hand, and the FinOps Foundation's validator.

Figures per hour (tests/reports/conftest.py): h100-a rents 2 GPUs at 2.50 (5.00) and buys 1.8 kWh at 0.30
(0.54); rtx-a is owned, 35,040 over 4 years (1.00 depreciation) + 0.20 running cost, 1.32 kWh at 0.20 (0.264);
h100-eu is h100-a at a EUR site. The owned price starts 2026-01-01: its purchase row falls there.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from fleets.models import Fleet
from reports.focus.charges import DAY, CorrectionFigures, PriceTerms, charges_by_period, correction_line_charges
from reports.focus.columns import COLUMNS, Account, ChargeKind, Footprint, decimal_text, focus_row
from tests.helpers.factories import SiteFactory
from tests.helpers.reports import END, START, h100_node, h100_usage

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = ROOT.parent / "shared" / "bin" / "focus-validate"
FOCUS_CHECK = ROOT / "bin" / "focus-check"  # the validator, less its one condition-less InvoiceId rule
FROM_PURCHASE = "2026-01-01T00:00:00Z"


@pytest.fixture
def eur_node(fleets: Any, org_a: Any) -> Any:
    site = SiteFactory(organization=org_a, name="fra-1", grid_zone="US-CAL-CISO", country="DE", currency="EUR")
    node = h100_node(org_a, fleet=Fleet.objects.create(organization=org_a, name="europe"), site=site)
    node.hostname = "h100-eu"
    node.save()
    h100_usage(node)
    return node


def _export_text(client: Any, **query: str) -> str:
    response = client.get("/api/v1/reports/focus/", query)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/csv")
    return b"".join(response.streaming_content).decode()


def _export(client: Any, **query: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_export_text(client, **query))))


def _totals(rows: list[dict[str, str]], column: str) -> dict[tuple[str, str, str], Decimal]:
    totals: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    for row in rows:
        totals[(row["ResourceName"], row["x_ChargeKind"], row["BillingCurrency"])] += Decimal(row[column])
    return dict(totals)


def test_hourly_rows_split_cash_from_amortized_cost(token_client_a: Any, eur_node: Any) -> None:
    # when
    rows = _export(token_client_a, start=START.isoformat(), end=END.isoformat())
    # then: three hours x (rent + electricity) for each H100 node, (depreciation + opex + electricity) for the RTX
    assert list(rows[0]) == COLUMNS
    assert len(rows) == 3 * 2 + 3 * 2 + 3 * 3
    billed, effective = _totals(rows, "BilledCost"), _totals(rows, "EffectiveCost")
    assert billed[("h100-a", "rent", "USD")] == effective[("h100-a", "rent", "USD")] == Decimal("15")
    assert billed[("h100-a", "electricity", "USD")] == Decimal("1.62")
    assert billed[("h100-eu", "rent", "EUR")] == Decimal("15")
    assert billed[("rtx-a", "depreciation", "USD")] == 0
    assert effective[("rtx-a", "depreciation", "USD")] == Decimal("3")
    assert billed[("rtx-a", "opex", "USD")] == Decimal("0.6")
    assert billed[("rtx-a", "electricity", "USD")] == Decimal("0.792")
    assert {row["ChargeCategory"] for row in rows} == {"Usage"}
    assert {row["ChargeClass"] for row in rows} == {""}
    assert {row["BillingPeriodStart"] for row in rows} == {"2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z"}


def test_footprint_is_written_once_per_node_hour(token_client_a: Any, fleets: Any) -> None:
    rows = _export(token_client_a, start=START.isoformat(), end=END.isoformat())
    carriers = [row for row in rows if row["x_LedgerHours"]]
    assert len(carriers) == 6  # two nodes x three hours
    h100 = [row for row in carriers if row["ResourceName"] == "h100-a"]
    assert {row["x_ChargeKind"] for row in h100} == {"rent"}
    assert sum(Decimal(row["x_FacilityKwh"]) for row in h100) == Decimal("5.4")
    assert sum(Decimal(row["x_LocationCo2eG"]) for row in h100) == Decimal(3 * 360)
    assert sum(Decimal(row["x_MarketCo2eG"]) for row in h100) == Decimal(3 * 90)


def test_daily_rows_add_the_hours_of_each_utc_day(token_client_a: Any, fleets: Any) -> None:
    rows = _export(token_client_a, start=START.isoformat(), end=END.isoformat(), granularity="day")
    rent = [row for row in rows if row["x_ChargeKind"] == "rent"]
    assert [(row["ChargePeriodStart"], row["BilledCost"], row["PricingQuantity"]) for row in rent] == [
        ("2026-10-31T00:00:00Z", "5", "2"),
        ("2026-11-01T00:00:00Z", "10", "4"),
    ]
    assert [row["x_LedgerHours"] for row in rent] == ["1", "2"]


def test_owned_node_purchase_is_billed_once_and_amortized_nowhere(token_client_a: Any, fleets: Any) -> None:
    rows = _export(token_client_a, start=FROM_PURCHASE, end=END.isoformat())
    purchases = [row for row in rows if row["ChargeCategory"] == "Purchase"]
    assert len(purchases) == 1
    (purchase,) = purchases
    assert (purchase["ResourceName"], purchase["BilledCost"], purchase["EffectiveCost"]) == ("rtx-a", "35040", "0")
    assert purchase["ChargeFrequency"] == "One-Time"
    assert purchase["ConsumedQuantity"] == "" and purchase["ConsumedUnit"] == ""
    assert purchase["ChargePeriodStart"] == FROM_PURCHASE


def test_other_organizations_are_not_exported(token_client_a: Any, fleets: Any) -> None:
    rows = _export(token_client_a, start=START.isoformat(), end=END.isoformat())
    assert {row["ResourceId"] for row in rows} == {f"node-{fleets.h100.pk}", f"node-{fleets.rtx.pk}"}


def test_anonymous_export_is_refused(fleets: Any) -> None:
    from rest_framework.test import APIClient

    assert APIClient().get("/api/v1/reports/focus/").status_code in (401, 403)


def test_decimal_text_is_plain_without_float_error() -> None:
    assert decimal_text(Decimal("0.1") + Decimal("0.2")) == "0.3"
    assert decimal_text(Decimal("5.000000000000")) == "5"
    assert decimal_text(Decimal("1E+3")) == "1000"
    assert decimal_text(Decimal("0E-12")) == "0"


@pytest.mark.slow
@pytest.mark.skipif(not VALIDATOR.exists(), reason=f"the FinOps Foundation's validator is not at {VALIDATOR}")
@pytest.mark.parametrize("granularity", ["hour", "day"])
def test_export_passes_the_focus_validator(
    token_client_a: Any, eur_node: Any, tmp_path: Path, granularity: str
) -> None:
    # given: owned, rented, USD and EUR rows and an owned node's purchase
    text = _export_text(token_client_a, start=FROM_PURCHASE, end=END.isoformat(), granularity=granularity)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {row["BillingCurrency"] for row in rows} == {"USD", "EUR"}
    assert {row["ChargeCategory"] for row in rows} == {"Usage", "Purchase"}
    path = tmp_path / "focus.csv"
    path.write_text(text, encoding="utf-8")
    # when
    result = subprocess.run(
        [str(FOCUS_CHECK), str(path)], capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "FOCUS_VALIDATE": str(VALIDATOR)},
    )  # fmt: skip
    # then
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Fail: 1 " in result.stdout  # InvoiceId-C-004-C alone (bin/focus-check)


def test_the_command_writes_the_file_the_api_answers(token_client_a: Any, fleets: Any, tmp_path: Path) -> None:
    from django.core.management import call_command

    path = tmp_path / "focus.csv"
    call_command(
        "focus_export", "--organization", fleets.h100.fleet.organization.slug, "--start", FROM_PURCHASE,
        "--end", END.isoformat(), "--granularity", "day", "--output", str(path),
    )  # fmt: skip
    answered = _export_text(token_client_a, start=FROM_PURCHASE, end=END.isoformat(), granularity="day")
    assert path.read_bytes().decode() == answered  # CSV lines end in \r\n (RFC 4180) in both


ACCOUNT = Account(1, "Org", 2, "consumer", "sjc-2", "US-CAL-CISO", 3, "rtx-a", "owned")
OWNED = PriceTerms(price_id="price-9", owned=True)
LOCKED_HOURS = [datetime(2026, 11, 30, 22, tzinfo=UTC), datetime(2026, 11, 30, 23, tzinfo=UTC)]


def _owned_correction(hour: datetime, **deltas: str) -> CorrectionFigures:
    """A correction of an owned node's locked hour, booked on 3 December."""
    names = ("rent_cost", "depreciation_cost", "opex_cost", "electricity_cost", "facility_kwh")
    return CorrectionFigures(
        restated_hour=hour, booked_hour=datetime(2026, 12, 3, 9, tzinfo=UTC), cause="inputs_or_formula",
        currency="EUR", sku_id="rtx-4090", tariff_price_id="tariff-3", footprint=Footprint(corrections=1),
        **{name: Decimal(deltas.get(name, "0")) for name in names},  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_correction_is_one_row_per_kind_it_changes_charged_to_its_hour_and_billed_when_booked() -> None:
    # given: a shorter life restated (more depreciation) and a lower running cost, in two locked hours
    corrections = [_owned_correction(hour, depreciation_cost="0.40", opex_cost="-0.05") for hour in LOCKED_HOURS]
    charges = [charge for c in corrections for charge in correction_line_charges(c, ACCOUNT, OWNED)]
    # when
    hourly = [focus_row(charge) for charge in charges]
    daily = [focus_row(charge) for charge in charges_by_period(charges, DAY)]
    # then: depreciation (no cash) and running cost rows, each a Correction of November billed in December
    assert [(r["x_ChargeKind"], r["BilledCost"], r["EffectiveCost"], r["ListCost"]) for r in hourly[:2]] == [
        ("depreciation", "0", "0.4", "0.4"), ("opex", "-0.05", "-0.05", "-0.05"),
    ]  # fmt: skip
    assert {r["ChargeClass"] for r in hourly} == {"Correction"}
    assert {(r["BillingPeriodStart"], r["InvoiceId"]) for r in hourly} == {
        (datetime(2026, 12, 1, tzinfo=UTC), "org-1-2026-12-EUR")
    }
    first = hourly[0]
    assert (first["ChargePeriodStart"], first["SkuPriceId"]) == (LOCKED_HOURS[0], "price-9:depreciation:rtx-4090")
    assert first["PricingQuantity"] is None and first["PricingUnit"] is None
    day = datetime(2026, 11, 30, tzinfo=UTC)
    assert [(r["x_ChargeKind"], r["EffectiveCost"], r["ChargePeriodStart"]) for r in daily] == [
        ("depreciation", "0.8", day), ("opex", "-0.1", day),
    ]  # fmt: skip


def test_a_correction_of_carbon_alone_is_one_zero_row_carrying_it() -> None:
    carbon = Footprint(location_co2e_g=Decimal("-12.5"), corrections=1)
    correction = replace(_owned_correction(LOCKED_HOURS[0]), footprint=carbon)

    (charge,) = correction_line_charges(correction, ACCOUNT, OWNED)

    assert (charge.kind, charge.billed, charge.effective, charge.correction) == (ChargeKind.DEPRECIATION, 0, 0, True)
    assert focus_row(charge)["x_LocationCo2eG"] == "-12.5"
