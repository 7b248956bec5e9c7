"""A site's VAT and energy tax, net and gross prices, on stored lines, written through the API, worked by hand.

sto-1 (SEK, PUE 1.00): one node with one card drawing 36 MJ in the hour (10 facility kWh), rented at
2.00 SEK per node-hour (net), a tariff of 1.25 SEK/kWh including VAT (1.00 net at 25 %), and taxes of
25 % VAT (recoverable) and 0.439 SEK/kWh energy tax (Sweden's).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounting.models import LedgerSettings, NodeHourLedger, NodePrice, SiteTax
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Node, Organization, Role, Site
from governance.models import AuditEntry
from telemetry.models import GpuHourUsage
from tests.helpers.factories import GpuFactory, NodeFactory, NodePriceFactory, SiteFactory, SiteTariffFactory
from tests.helpers.input_fixtures import admin_a, finance, fleet_a, node_a, org_a, site_a  # noqa: F401
from tests.helpers.inputs import JAN_1, ledger_recompute

pytestmark = pytest.mark.django_db

HOUR = datetime(2026, 11, 2, 14, tzinfo=UTC)
SINCE = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def se_site(org_a: Organization) -> Site:  # noqa: F811
    return SiteFactory(organization=org_a, name="sto-1", pue=Decimal("1.00"), currency="SEK", grid_zone="")


@pytest.fixture
def se_node(se_site: Site) -> Node:
    LedgerSettings.objects.create(organization=se_site.organization, model_host_power=False)
    node = NodeFactory(site=se_site, fleet__organization=se_site.organization, hostname="sto-a", commissioned_at=SINCE)
    gpu = GpuFactory(node=node, index=0, uuid="GPU-tax-0")
    NodePriceFactory(node=node, rate_per_h=Decimal("2.00"), rate_per=NodePrice.RatePer.NODE, valid_from=SINCE)
    SiteTariffFactory(site=se_site, flat_price_per_kwh=Decimal("1.25"), prices_include_vat=True, valid_from=SINCE)
    GpuHourUsage.objects.create(
        gpu=gpu, hour_start=HOUR, energy_j=36_000_000.0, energy_counter_j=36_000_000.0, energy_integrated_j=0.0,
        energy_method="counter", observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0, mean_util_pct=50.0,
        reset_count=0, computed_at=HOUR,
    )  # fmt: skip
    return node


def tax_body(site: Site, **changes: object) -> dict[str, object]:
    body = {"site": site.pk, "vat_rate": "0.25", "energy_tax_per_kwh": "0.439", "valid_from": SINCE.isoformat()}
    return body | changes


def line(node: Node) -> NodeHourLedger:
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[HOUR])
    return NodeHourLedger.objects.get(node=node, hour_start=HOUR)


def test_a_gross_tariff_is_made_net_and_the_hour_carries_energy_tax_and_recoverable_vat(
    finance: APIClient,  # noqa: F811
    se_site: Site,
    se_node: Node,
) -> None:
    created = finance.post("/api/v1/site-taxes/", tax_body(se_site), format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["vat_recoverable"] is True

    row = line(se_node)

    assert row.facility_kwh == Decimal("10")
    assert row.tariff_price_per_kwh == Decimal("1.00")  # 1.25 / 1.25
    assert row.electricity_cost == Decimal("10.00")
    assert row.rent_cost == Decimal("2.00")
    assert row.energy_tax_cost == Decimal("4.39")  # 10 kWh x 0.439
    assert row.vat_amount == Decimal("3.00")  # 25 % of 10.00 electricity + 2.00 rent
    assert row.vat_cost == Decimal("0")  # recoverable: a receivable, not a cost
    assert row.cost == Decimal("16.39")  # 2.00 + 10.00 + 4.39
    assert (row.tax_id, row.vat_unknown) == (f"tax-{created.json()['id']}", False)


def test_non_recoverable_vat_is_in_cost(finance: APIClient, se_site: Site, se_node: Node) -> None:  # noqa: F811
    created = finance.post("/api/v1/site-taxes/", tax_body(se_site, vat_recoverable=False), format="json")
    assert created.status_code == 201

    row = line(se_node)

    assert (row.vat_amount, row.vat_cost) == (Decimal("3.00"), Decimal("3.00"))
    assert row.cost == Decimal("19.39")  # 2.00 + 10.00 + 4.39 + 3.00


def test_a_gross_price_with_no_tax_in_force_is_kept_as_it_is_and_counted_vat_unknown(se_node: Node) -> None:
    row = line(se_node)

    assert row.electricity_cost == Decimal("12.50")  # 10 kWh x 1.25, VAT not taken out
    assert (row.vat_unknown, row.vat_amount, row.energy_tax_cost, row.tax_id) == (True, 0, 0, "")
    assert row.cost == Decimal("14.50")


def test_a_gross_rent_is_made_net_at_the_sites_vat(se_site: Site, se_node: Node) -> None:
    NodePrice.objects.filter(node=se_node).update(rate_per_h=Decimal("2.50"), prices_include_vat=True)
    SiteTax.objects.create(site=se_site, vat_rate=Decimal("0.25"), valid_from=SINCE)

    row = line(se_node)

    assert row.rent_cost == Decimal("2.00")  # 2.50 / 1.25
    assert row.vat_amount == Decimal("3.00")
    assert row.energy_tax_cost == 0


def test_power_in_the_rent_carries_no_energy_tax(se_site: Site, se_node: Node) -> None:
    NodePrice.objects.filter(node=se_node).update(includes_power=True)
    SiteTax.objects.create(
        site=se_site, vat_rate=Decimal("0.25"), energy_tax_per_kwh=Decimal("0.439"), valid_from=SINCE
    )

    row = line(se_node)

    assert (row.electricity_cost, row.energy_tax_cost, row.vat_amount) == (0, 0, Decimal("0.50"))


# --- the API: refusals, roles, locks, the trail ---------------------------------------------------------


def test_bad_tax_values_are_refused_naming_the_field(finance: APIClient, site_a: Site) -> None:  # noqa: F811
    negative = finance.post("/api/v1/site-taxes/", tax_body(site_a, energy_tax_per_kwh="-0.1"), format="json")
    above_one = finance.post("/api/v1/site-taxes/", tax_body(site_a, vat_rate="1.5"), format="json")

    assert negative.status_code == 400 and "energy_tax_per_kwh" in str(negative.json())
    assert above_one.status_code == 400 and "vat_rate" in str(above_one.json())
    assert SiteTax.objects.count() == 0


def test_a_viewer_cannot_write_taxes_and_a_change_is_audited(
    client_as: Callable[..., APIClient],
    finance: APIClient,  # noqa: F811
    site_a: Site,  # noqa: F811
    node_a: Node,  # noqa: F811
) -> None:
    viewer = client_as(Role.VIEWER)
    assert viewer.post("/api/v1/site-taxes/", tax_body(site_a), format="json").status_code == 403
    created = finance.post("/api/v1/site-taxes/", tax_body(site_a, valid_from=JAN_1.isoformat()), format="json")
    assert (created.status_code, created.json()["ledger_hours_reopened"]) == (201, 48)
    changed = finance.patch(f"/api/v1/site-taxes/{created.json()['id']}/", {"vat_rate": "0.19"}, format="json")
    assert changed.status_code == 200
    entries = AuditEntry.objects.filter(subject="site_tax").order_by("id")
    assert [(entry.action, Decimal(entry.after["vat_rate"])) for entry in entries] == [
        ("create", Decimal("0.25")),
        ("update", Decimal("0.19")),
    ]
    assert viewer.get("/api/v1/site-taxes/").json()[0]["vat_rate"] == "0.190000"


def test_a_tax_change_in_a_locked_period_is_refused(
    finance: APIClient,  # noqa: F811
    admin_a: APIClient,  # noqa: F811
    site_a: Site,  # noqa: F811
    node_a: Node,  # noqa: F811
) -> None:
    lock = {"start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z", "reason": "Jan 1 closed"}
    admin_a.post("/api/v1/locked-periods/", lock, format="json")

    refused = finance.post("/api/v1/site-taxes/", tax_body(site_a, valid_from=JAN_1.isoformat()), format="json")

    assert refused.status_code == 409 and "Jan 1 closed" in refused.json()["detail"]
    assert SiteTax.objects.count() == 0


def test_tariffs_and_prices_say_net_or_gross_through_the_api(
    finance: APIClient,  # noqa: F811
    site_a: Site,  # noqa: F811
    node_a: Node,  # noqa: F811
) -> None:
    body = {
        "site": site_a.pk, "flat_price_per_kwh": "0.30", "prices_include_vat": True, "fixed_per_month": "300",
        "demand_per_kw_month": "50", "valid_from": JAN_1.isoformat(),
    }  # fmt: skip
    tariff = finance.post("/api/v1/site-tariffs/", body, format="json")
    assert tariff.status_code == 201, tariff.json()
    assert (tariff.json()["prices_include_vat"], tariff.json()["fixed_per_month"]) == (True, "300.000000")
    refused = finance.post("/api/v1/site-tariffs/", body | {"demand_per_kw_month": "-1"}, format="json")
    assert refused.status_code == 400 and "demand_per_kw_month" in str(refused.json())
    price = {"fleet": node_a.fleet_id, "node": node_a.pk, "kind": "rented", "rate_per_h": "2.50",
             "prices_include_vat": True, "valid_from": JAN_1.isoformat()}  # fmt: skip
    created = finance.post("/api/v1/node-prices/", price, format="json")
    assert (created.status_code, created.json()["prices_include_vat"]) == (201, True)
    ledger_recompute()
    assert NodeHourLedger.objects.filter(node=node_a, vat_unknown=True).count() == 48


# --- the arithmetic alone (``accounting.ledger.tax``), no database ----------------------------------------


def test_net_of_vat_takes_vat_out_of_a_gross_price_only() -> None:
    from accounting.ledger.tax import SiteTaxRates, net_of_vat

    tax = SiteTaxRates(Decimal("0.25"), True, Decimal("0.439"), "tax-1")

    assert net_of_vat(Decimal("1.25"), includes_vat=True, tax=tax).amount == Decimal("1.00")
    assert net_of_vat(Decimal("1.25"), includes_vat=False, tax=tax).amount == Decimal("1.25")
    unknown = net_of_vat(Decimal("1.25"), includes_vat=True, tax=None)
    assert (unknown.amount, unknown.vat_unknown) == (Decimal("1.25"), True)


def test_line_taxes_put_energy_tax_and_only_non_recoverable_vat_in_cost() -> None:
    from accounting.ledger.tax import SiteTaxRates, line_taxes

    recoverable = SiteTaxRates(Decimal("0.25"), True, Decimal("0.439"), "tax-1")
    taxes = line_taxes(tax=recoverable, facility_kwh=Decimal(10), energy_taxed=True, vat_base=Decimal("12.00"))
    assert (taxes.energy_tax_cost, taxes.vat_amount, taxes.vat_cost, taxes.in_cost) == (
        Decimal("4.390"), Decimal("3.0000"), 0, Decimal("4.390"),
    )  # fmt: skip
    kept = SiteTaxRates(Decimal("0.25"), False, Decimal(0), "tax-2")
    in_rent = line_taxes(tax=kept, facility_kwh=Decimal(10), energy_taxed=False, vat_base=Decimal("2.00"))
    assert (in_rent.energy_tax_cost, in_rent.vat_cost, in_rent.in_cost) == (0, Decimal("0.5000"), Decimal("0.5000"))
    with pytest.raises(ValueError, match="vat_rate"):
        SiteTaxRates(Decimal("1.5"), True, Decimal(0), "tax-3")
