"""The demo's instruments: a solar PPA at dc-sjc for 80 % of its energy, hydro GOs at home-sto for all of it.

Two days, one node per site with 1 kWh of facility energy every hour in the ledger: 48 kWh per site.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.test import Client

from fleets.models import Organization
from scope2.demo import demo_instruments_seed
from scope2.models import ContractualInstrument
from scope2.selectors import scope2_report
from tests.helpers.factories import MembershipFactory, NodeFactory, OrganizationFactory, SiteFactory
from tests.helpers.instruments import ledger_hours

pytestmark = pytest.mark.django_db

START = datetime(2025, 6, 1, tzinfo=UTC)
HOURS = [START + timedelta(hours=index) for index in range(48)]
END = START + timedelta(days=2)


def demo_site(organization: Organization, name: str, zone: str, time_zone: str) -> None:
    site = SiteFactory(organization=organization, name=name, grid_zone=zone, pue=Decimal(1), time_zone=time_zone)
    node = NodeFactory(fleet__organization=organization, site=site)
    ledger_hours(node, HOURS, facility_kwh=Decimal(1), location_g_per_kwh=Decimal(200))


def test_demo_instruments_give_dual_reporting_and_a_cfe_score() -> None:
    organization = OrganizationFactory(name="Demo AI", slug="demo-ai")
    demo_site(organization, "dc-sjc", "US-CAL-CISO", "America/Los_Angeles")
    demo_site(organization, "home-sto", "SE-SE3", "Europe/Stockholm")

    demo_instruments_seed(organization=organization, start=START, end=END)
    ppa, go = demo_instruments_seed(organization=organization, start=START, end=END)  # a rerun replaces them

    assert ContractualInstrument.objects.count() == 2
    assert (ppa.kind, ppa.hours.count()) == ("ppa", 24)  # 12 daylight hours a day, local time
    assert ppa.volume_mwh == pytest.approx(Decimal("0.0384"), abs=Decimal("1e-5"))  # 80 % of 48 kWh
    assert (go.kind, go.volume_mwh, go.generation_zone) == ("go", Decimal("0.048"), "NO")
    report = scope2_report(organization_id=organization.pk, start=START, end=END)
    by_site = {site.site.name: site for site in report.sites}
    sjc, sto = by_site["dc-sjc"], by_site["home-sto"]
    assert sjc.annual.instruments_kwh / sjc.annual.consumption_kwh == pytest.approx(Decimal("0.8"), abs=Decimal("1e-6"))
    # Hourly: the midday surplus is lost, so less than 80 % (12 daylight hours of 24 at most 50 %).
    assert sjc.allocation.instruments_kwh / sjc.allocation.consumption_kwh < Decimal("0.5")
    assert sto.allocation.instruments_kwh == 48 and sto.allocation.market_co2e_g == 0
    assert sjc.cfe_hourly.score is not None and sjc.cfe_hourly.score < sjc.cfe_annual.score  # type: ignore[operator]


def table_cells(html: str, table_id: str) -> list[list[str]]:
    table = re.search(rf'<table id="{table_id}">.*?</table>', html, re.S)
    assert table is not None, table_id
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(0).split("<tbody>")[1], re.S)
    return [[" ".join(re.sub(r"<.*?>", " ", cell).split()) for cell in re.findall(r"<td.*?>(.*?)</td>", row, re.S)]
            for row in rows]  # fmt: skip


def test_the_sustainability_page_shows_the_demo_instruments_both_ways_with_a_cfe_score(client: Client) -> None:
    organization = OrganizationFactory(name="Demo AI", slug="demo-ai")
    demo_site(organization, "dc-sjc", "US-CAL-CISO", "America/Los_Angeles")
    demo_site(organization, "home-sto", "SE-SE3", "Europe/Stockholm")
    demo_instruments_seed(organization=organization, start=START, end=END)
    client.force_login(MembershipFactory(organization=organization, role="viewer").user)

    html = client.get("/sustainability/", {"start": "2025-06-01", "end": "2025-06-02"}).content.decode()

    # Location-based: 48 kWh x 200 g = 9.6 kg per site. dc-sjc, no residual mix held (labelled fallback):
    # annual matching 80 % covered, 9.6 kWh x 200 g = 1.9 kg; hourly the PPA matches 21.12 kWh (44 %), the
    # midday surplus lost, 26.88 kWh x 200 g = 5.4 kg. 24/7 CFE with the grid's 66 % carbon-free share:
    # (21.12 + 0.66 x 26.88) / 48 = 81.0 %; annual (38.4 + 0.66 x 9.6) / 48 = 93.2 %. home-sto: the GOs cover
    # all of it, 0 kg, CFE 100 %.
    sites = {row[0].split()[0]: row[1:] for row in table_cells(html, "scope2-dual")}
    assert sites["dc-sjc"] == ["48", "9.6", "5.4", "1.9", "44.0 %", "0.0 %", "56.0 % no residual mix", "81.0 %",
                               "93.2 %"]  # fmt: skip
    assert sites["home-sto"] == ["48", "9.6", "0.0", "0.0", "100.0 %", "0.0 %", "0.0 %", "100.0 %", "100.0 %"]
    instruments = {row[0]: row[1:5] for row in table_cells(html, "scope2-instruments")}
    assert instruments == {
        "Solar PPA (demo) ppa · solar · US-CAL-CISO 2025": ["dc-sjc", "hourly", "21", "17"],
        "Hydro guarantees of origin (demo) go · hydro · NO 2025": ["home-sto", "annual", "48", "0"],
    }
