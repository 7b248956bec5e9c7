"""Taxes and a site's monthly tariff charges in every total: usage report and CSV, FOCUS, journal, finance page.

sto-1 (SEK, PUE 1.00), November 2026 (30 days): two nodes, each rented at 2.00 SEK per node-hour (net);
a tariff of 1.25 SEK/kWh including VAT (1.00 net), in force from Nov 16 (half the month) with a fixed
charge of 300 SEK a month and a demand charge of 50 SEK per kW-month; 25 % VAT (recoverable) and
0.439 SEK/kWh energy tax. Nov 20 10:00 sto-a draws 7 kWh and sto-b 5 kWh (the site's peak: 12 kW);
11:00 sto-a draws 10 kWh.

    line           rent  electricity  energy tax   VAT    cost
    sto-a 10:00    2.00      7.00        3.073     2.25  12.073
    sto-b 10:00    2.00      5.00        2.195     1.75   9.195
    sto-a 11:00    2.00     10.00        4.39      3.00  16.39
    total          6.00     22.00        9.658     7.00  37.658 -> 37.66 (VAT recoverable: not in cost)

    site charges: fixed 300 x 15 / 30 = 150.00; demand 50 x 12 kW = 600.00; total 750.00
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounting.models import LedgerSettings, NodeHourLedger, NodePrice, SiteTariff, SiteTax
from accounting.node_hour_lines import ledger_node_hours_compute
from accounting.site_charges import site_monthly_charges
from accounting.site_hours import site_hours_rebuild
from fleets.models import Fleet, Node, Organization, Role, Site
from telemetry.models import GpuHourUsage
from tests.helpers.factories import GpuFactory, MembershipFactory, NodeFactory, SiteFactory
from tests.helpers.input_fixtures import org_a  # noqa: F401

pytestmark = pytest.mark.django_db

NOV_1 = datetime(2026, 11, 1, tzinfo=UTC)
NOV_16 = datetime(2026, 11, 16, tzinfo=UTC)
PEAK = datetime(2026, 11, 20, 10, tzinfo=UTC)
NEXT = PEAK + timedelta(hours=1)
DEC_1 = datetime(2026, 12, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = ROOT.parent / "shared" / "bin" / "focus-validate"
FOCUS_CHECK = ROOT / "bin" / "focus-check"


def _usage(node: Node, hour: datetime, kwh: int) -> None:
    energy_j = kwh * 3_600_000.0
    GpuHourUsage.objects.create(
        gpu=node.gpus.get(), hour_start=hour, energy_j=energy_j, energy_counter_j=energy_j, energy_integrated_j=0.0,
        energy_method="counter", observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0, mean_util_pct=50.0,
        reset_count=0, computed_at=hour,
    )  # fmt: skip


def _node(fleet: Fleet, site: Site, hostname: str) -> Node:
    node = NodeFactory(fleet=fleet, site=site, hostname=hostname, commissioned_at=NOV_1)
    GpuFactory(node=node, index=0, uuid=f"GPU-{hostname}")
    NodePrice.objects.create(
        fleet=fleet, node=node, kind="rented", rate_per_h=Decimal("2.00"), rate_per="node", valid_from=NOV_1
    )
    return node


@pytest.fixture
def site(org_a: Organization) -> Site:  # noqa: F811
    LedgerSettings.objects.create(organization=org_a, model_host_power=False)
    site = SiteFactory(organization=org_a, name="sto-1", pue=Decimal("1.00"), currency="SEK", grid_zone="SE-SE3")
    fleet = Fleet.objects.create(organization=org_a, name="nordic")
    SiteTariff.objects.create(
        site=site, flat_price_per_kwh=Decimal("1.25"), prices_include_vat=True, fixed_per_month=Decimal(300),
        demand_per_kw_month=Decimal(50), valid_from=NOV_16,
    )  # fmt: skip
    SiteTax.objects.create(site=site, vat_rate=Decimal("0.25"), energy_tax_per_kwh=Decimal("0.439"), valid_from=NOV_1)
    sto_a, sto_b = _node(fleet, site, "sto-a"), _node(fleet, site, "sto-b")
    _usage(sto_a, PEAK, 7)
    _usage(sto_b, PEAK, 5)
    _usage(sto_a, NEXT, 10)
    ledger_node_hours_compute(node_id=sto_a.pk, hour_starts=[PEAK, NEXT], now=DEC_1)
    ledger_node_hours_compute(node_id=sto_b.pk, hour_starts=[PEAK], now=DEC_1)
    return site


@pytest.fixture
def api(org_a: Organization) -> APIClient:  # noqa: F811
    from fleets.personal_tokens import personal_token_create

    membership = MembershipFactory(organization=org_a, role=Role.FINANCE)
    _, token = personal_token_create(user=membership.user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def _csv(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_the_usage_report_splits_every_cost_and_lists_the_sites_monthly_charges(api: APIClient, site: Site) -> None:
    answer = api.get("/api/v1/reports/usage/", {"period": "2026-11", "granularity": "total"}).json()

    row = answer["results"][0]
    figures = ("rent_cost", "depreciation_cost", "opex_cost", "electricity_cost", "energy_tax_cost", "vat_amount",
               "vat_recoverable", "vat_cost", "cost")  # fmt: skip
    assert {name: row[name] for name in figures} == {
        "rent_cost": "6.00", "depreciation_cost": "0.00", "opex_cost": "0.00", "electricity_cost": "22.00",
        "energy_tax_cost": "9.66", "vat_amount": "7.00", "vat_recoverable": "7.00", "vat_cost": "0.00",
        "cost": "37.66",
    }  # fmt: skip
    assert row["vat_unknown_h"] == 0
    charges = answer["site_charges"]
    assert [
        (c["site"], c["month"], c["fixed"], c["demand"], c["peak_kw"], c["peak_hour"], c["month_complete"])
        for c in charges["charges"]
    ] == [("sto-1", "2026-11-01", "150.00", "600.00", 12.0, "2026-11-20T10:00:00Z", True)]
    assert charges["totals"] == [{"currency": "SEK", "fixed": "150.00", "demand": "600.00", "total": "750.00"}]


def test_the_usage_csv_appends_the_tax_columns_after_the_existing_ones(api: APIClient, site: Site) -> None:
    response = api.get("/api/v1/reports/usage/", {"period": "2026-11", "granularity": "total", "format": "csv"})
    rows = _csv(response)
    columns = list(rows[0])
    assert columns[-5:] == ["energy_tax_cost", "vat_amount", "vat_recoverable", "vat_cost", "vat_unknown_h"]
    assert columns.index("opex_cost") < columns.index("cost") < columns.index("energy_tax_cost")
    assert (rows[0]["energy_tax_cost"], rows[0]["vat_amount"], rows[0]["cost"]) == ("9.66", "7.00", "37.66")


def test_the_month_in_progress_is_charged_to_date_and_flagged(site: Site) -> None:
    # when: asked on Nov 23, a week after the tariff came into force
    (charge,) = site_monthly_charges(
        organization_ids=[site.organization_id], start=NOV_1, end=DEC_1, now=datetime(2026, 11, 23, tzinfo=UTC)
    )
    # then
    assert charge.month_complete is False
    assert charge.fixed == Decimal(300) * 7 / 30
    assert (charge.peak_kw, charge.peak_hour, charge.demand) == (Decimal(12), PEAK, Decimal(600))


def test_a_site_with_no_lines_has_a_fixed_charge_and_no_demand(site: Site) -> None:
    NodeHourLedger.objects.filter(site=site).delete()
    site_hours_rebuild()  # lines written by hand: their site-hours summed again
    # October has no tariff in force, November from the 16th: one month, half of it
    (charge,) = site_monthly_charges(
        organization_ids=[site.organization_id], start=datetime(2026, 10, 1, tzinfo=UTC), end=DEC_1, now=DEC_1,
        site_ids=[site.pk],
    )  # fmt: skip
    assert (charge.month.month, charge.fixed, charge.peak_kw, charge.demand) == (11, Decimal(150), None, 0)
    assert site_monthly_charges(organization_ids=[site.organization_id], start=NOV_1, end=NOV_16, now=DEC_1) == []


def _focus(api: APIClient, granularity: str = "hour") -> list[dict[str, str]]:
    query = {"start": NOV_1.isoformat(), "end": DEC_1.isoformat(), "granularity": granularity}
    return _csv(api.get("/api/v1/reports/focus/", query))


def test_focus_has_tax_rows_and_the_sites_monthly_charges(api: APIClient, site: Site) -> None:
    rows = _focus(api)

    taxes = [row for row in rows if row["ChargeCategory"] == "Tax"]
    billed: dict[str, Decimal] = defaultdict(Decimal)
    effective: dict[str, Decimal] = defaultdict(Decimal)
    for row in taxes:
        billed[row["x_ChargeKind"]] += Decimal(row["BilledCost"])
        effective[row["x_ChargeKind"]] += Decimal(row["EffectiveCost"])
    assert dict(billed) == {"energy_tax": Decimal("9.658"), "vat": Decimal("7.00")}
    assert dict(effective) == {"energy_tax": Decimal("9.658"), "vat": 0}  # recoverable: a receivable
    assert {(row["SkuId"], row["SkuPriceId"], row["PricingQuantity"], row["PricingCategory"]) for row in taxes} == {
        ("", "", "", "")
    }
    monthly = {row["x_ChargeKind"]: row for row in rows if row["ResourceId"] == f"site-{site.pk}"}
    fixed, demand = monthly["fixed_charge"], monthly["demand_charge"]
    assert (fixed["BilledCost"], fixed["ChargeFrequency"], fixed["PricingQuantity"], fixed["PricingUnit"]) == (
        "150", "Recurring", "0.5", "Months",
    )  # fmt: skip
    assert (demand["BilledCost"], demand["ChargeFrequency"], demand["PricingQuantity"]) == ("600", "Usage-Based", "12")
    assert (fixed["ChargeCategory"], fixed["ChargePeriodStart"], fixed["ChargePeriodEnd"]) == (
        "Usage", "2026-11-16T00:00:00Z", "2026-12-01T00:00:00Z",
    )  # fmt: skip
    assert (fixed["ResourceType"], fixed["SubAccountId"], fixed["RegionId"]) == ("Site", "", "SE-SE3")


@pytest.mark.slow
@pytest.mark.skipif(not VALIDATOR.exists(), reason=f"the FinOps Foundation's validator is not at {VALIDATOR}")
@pytest.mark.parametrize("granularity", ["hour", "day"])
def test_the_taxed_export_passes_the_focus_validator(
    api: APIClient, site: Site, tmp_path: Path, granularity: str
) -> None:
    query = {"start": NOV_1.isoformat(), "end": DEC_1.isoformat(), "granularity": granularity}
    response = api.get("/api/v1/reports/focus/", query)
    path = tmp_path / "focus.csv"
    path.write_bytes(b"".join(response.streaming_content))
    assert b",Tax," in path.read_bytes()
    result = subprocess.run(
        [str(FOCUS_CHECK), str(path)], capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "FOCUS_VALIDATE": str(VALIDATOR)},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def _debits(rows: list[dict[str, str]]) -> dict[str, Decimal]:
    """Debits per account (fixed and demand charges share one), the accounts debited only."""
    debits: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        if Decimal(row["debit"]):
            debits[row["account"]] += Decimal(row["debit"])
    return dict(debits)


def test_the_journal_books_taxes_and_site_charges_and_foots(api: APIClient, site: Site) -> None:
    rows = _csv(api.get("/api/v1/reports/journal/", {"period": "2026-11"}))
    usage = api.get("/api/v1/reports/usage/", {"period": "2026-11", "granularity": "total"}).json()

    debits = _debits(rows)
    assert debits == {
        "6100": Decimal("6.00"), "6400": Decimal("22.00"), "6450": Decimal("9.66"), "1650": Decimal("7.00"),
        "6410": Decimal("750.00"),
    }  # fmt: skip
    lines = sum(amount for account, amount in debits.items() if account.startswith("6") and account != "6410")
    assert lines == Decimal(usage["results"][0]["cost"])  # the lines foot to the usage report's cost
    assert debits["6410"] == Decimal(usage["site_charges"]["totals"][0]["total"])
    assert sum(Decimal(row["debit"]) for row in rows) == sum(Decimal(row["credit"]) for row in rows)
    assert {row["account_name"] for row in rows if row["account"] == "1650"} == {"Input VAT receivable"}


def test_non_recoverable_vat_is_an_expense_in_the_journal(api: APIClient, site: Site) -> None:
    SiteTax.objects.filter(site=site).update(vat_recoverable=False)
    for node in Node.objects.filter(site=site):
        hours = list(node.ledger_lines.values_list("hour_start", flat=True))
        ledger_node_hours_compute(node_id=node.pk, hour_starts=hours, now=DEC_1)

    rows = _csv(api.get("/api/v1/reports/journal/", {"period": "2026-11"}))
    cost = api.get("/api/v1/reports/usage/", {"period": "2026-11", "granularity": "total"}).json()["results"][0]

    debits = _debits(rows)
    assert (debits["6460"], "1650" in debits) == (Decimal("7.00"), False)
    assert cost["cost"] == "44.66"  # 37.658 + 7.00
    assert sum(v for k, v in debits.items() if k.startswith("6") and k != "6410") == Decimal("44.66")


def test_the_finance_page_shows_the_split_and_the_site_charges_as_their_own_line(
    client: Client,
    org_a: Organization,  # noqa: F811
    site: Site,
) -> None:
    client.force_login(MembershipFactory(organization=org_a, role=Role.VIEWER).user)

    page = client.get("/finance/?start=2026-11-01&end=2026-11-30&currency=SEK")

    assert page.status_code == 200
    split = page.context["total"]
    assert (split["energy_tax_cost"], split["vat_recoverable"], split["vat_cost"]) == (
        Decimal("9.66"), Decimal("7.00"), Decimal("0.00"),
    )  # fmt: skip
    assert page.context["site_charges"]["cost_with_site_charges"] == Decimal("787.66")  # 37.66 + 750.00
    html = page.content.decode()
    for row_id, shown in [("split-energy-tax", "9.66 SEK"), ("split-vat-recoverable", "7.00 SEK"),
                          ("split-site-charges", "750.00 SEK"), ("split-total", "787.66 SEK")]:  # fmt: skip
        cell = html.split(f'id="{row_id}"', 1)[1].split("</tr>", 1)[0]
        assert shown in cell, (row_id, cell)


def test_the_finance_pages_fleet_table_splits_each_fleets_cost_with_every_column(
    client: Client,
    org_a: Organization,  # noqa: F811
    site: Site,
) -> None:
    client.force_login(MembershipFactory(organization=org_a, role=Role.VIEWER).user)

    html = client.get("/finance/?start=2026-11-01&end=2026-11-30&currency=SEK&columns=all").content.decode()

    table = html.split('<table id="by-fleet">', 1)[1].split("</table>", 1)[0]
    for css, shown in [("rent", "6.00 SEK"), ("energy-tax", "9.66 SEK"), ("vat-recoverable", "7.00 SEK"),
                       ("vat-cost", "0.00 SEK")]:  # fmt: skip
        assert f'<td class="{css}">{shown}</td>' in table


def test_the_node_page_shows_each_lines_split_and_taxes(
    client: Client,
    org_a: Organization,  # noqa: F811
    site: Site,
) -> None:
    client.force_login(MembershipFactory(organization=org_a, role=Role.ENGINEER).user)
    node = Node.objects.get(hostname="sto-a")

    html = client.get(f"/nodes/{node.pk}/?start=2026-11-20&end=2026-11-20&granularity=hour").content.decode()

    table = html.split('<table id="ledger">', 1)[1].split("</table>", 1)[0]
    assert (
        '<td class="energy-tax">4.39 SEK</td><td class="vat">3.00 SEK</td><td class="vat-cost">0.00 SEK</td>' in table
    )
