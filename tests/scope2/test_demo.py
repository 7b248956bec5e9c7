"""The demo's instruments: a solar PPA at home-ber for 80 % of its Scope 2 energy, hydro GOs at home-sto for all
of it, and none at dc-sjc, whose rented nodes have power in the rent (the provider's Scope 2, the demo's Scope 3).

Two days, one node per site with 1 kWh of facility energy every hour in the ledger: 48 kWh per site; a rented
node with power in the rent beside them (at dc-sjc, and at home-sto) draws as much, outside Scope 2.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from accounting.models import NodeHourLedger
from accounting.site_hours import site_hours_rebuild
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


def demo_site(
    organization: Organization, name: str, zone: str, time_zone: str, *, rented_with_power: bool = False
) -> None:
    site = SiteFactory(organization=organization, name=name, grid_zone=zone, pue=Decimal(1), time_zone=time_zone)
    node = NodeFactory(fleet__organization=organization, site=site, tenure="owned")
    ledger_hours(node, HOURS, facility_kwh=Decimal(1), location_g_per_kwh=Decimal(200))
    if rented_with_power:
        rented_with_power_node(site)


def rented_with_power_node(site: Any) -> None:
    node = NodeFactory(fleet__organization=site.organization, site=site, tenure="rented")
    ledger_hours(node, HOURS, facility_kwh=Decimal(1), location_g_per_kwh=Decimal(200))
    NodeHourLedger.objects.filter(node=node).update(electricity_status="included")
    site_hours_rebuild()  # lines written by hand: their site-hours summed again


def demo_sites(organization: Organization) -> None:
    sjc = SiteFactory(organization=organization, name="dc-sjc", grid_zone="US-CAL-CISO", pue=Decimal(1))
    rented_with_power_node(sjc)
    demo_site(organization, "home-ber", "DE", "Europe/Berlin")
    demo_site(organization, "home-sto", "SE-SE3", "Europe/Stockholm", rented_with_power=True)


def test_demo_instruments_give_dual_reporting_and_a_cfe_score() -> None:
    organization = OrganizationFactory(name="Demo AI", slug="demo-ai")
    demo_sites(organization)

    demo_instruments_seed(organization=organization, start=START, end=END)
    ppa, go = demo_instruments_seed(organization=organization, start=START, end=END)  # a rerun replaces them

    assert ContractualInstrument.objects.count() == 2
    assert (ppa.site.name, go.site.name) == ("home-ber", "home-sto")  # none where the power is in the rent
    assert (ppa.kind, ppa.hours.count(), ppa.generation_zone) == ("ppa", 24, "DE")  # 12 daylight hours a day
    assert ppa.volume_mwh == pytest.approx(Decimal("0.0384"), abs=Decimal("1e-5"))  # 80 % of 48 kWh
    # the Scope 2 node's 48 kWh, not the rented box's beside it
    assert (go.kind, go.volume_mwh, go.generation_zone) == ("go", Decimal("0.048"), "SE-SE3")
    report = scope2_report(organization_id=organization.pk, start=START, end=END)
    by_site = {site.site.name: site for site in report.sites}
    assert "dc-sjc" not in by_site
    sjc, sto = by_site["home-ber"], by_site["home-sto"]
    assert sjc.annual.instruments_kwh / sjc.annual.consumption_kwh == pytest.approx(Decimal("0.8"), abs=Decimal("1e-6"))
    # Hourly: the midday surplus is lost, so less than 80 % (12 daylight hours of 24 at most 50 %).
    assert sjc.hourly.instruments_kwh / sjc.hourly.consumption_kwh < Decimal("0.5")
    assert sjc.allocation is sjc.annual  # disclosed: annual matching, the default
    # every criterion met on the evidence fields an auditor checks, not on a sentence
    uses = [use for site in report.sites for use in site.allocation.uses]
    assert all(result.met for use in uses for result in use.criteria)
    evidence = [result.detail for use in uses for result in use.criteria if result.criterion == "evidence"]
    assert evidence[1].startswith("Cesar (Energimyndigheten) SE-GO-000001 to SE-GO-000048, cancelled 2025-06-03")
    assert not ContractualInstrument.objects.filter(evidence_reference__icontains="no contract").exists()
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
    demo_sites(organization)
    demo_instruments_seed(organization=organization, start=START, end=END)
    client.force_login(MembershipFactory(organization=organization, role="viewer").user)

    html = client.get("/sustainability/", {"start": "2025-06-01", "end": "2025-06-02"}).content.decode()

    # Location-based: 48 kWh x 200 g = 9.6 kg per Scope 2 site. home-ber, no residual mix held (labelled
    # fallback): annual matching 80 % covered, 9.6 kWh x 200 g = 1.9 kg; hourly the PPA matches 21.14 kWh (44 %),
    # the midday surplus lost, 26.86 kWh x 200 g = 5.4 kg. 24/7 CFE with the grid's 64 % carbon-free share:
    # (21.14 + 0.64 x 26.86) / 48 = 79.9 %; annual (38.4 + 0.64 x 9.6) / 48 = 92.8 %. home-sto: the GOs cover
    # all of its Scope 2 energy, 0 kg, CFE 100 %. dc-sjc: no Scope 2 energy, no instrument, no row.
    sites = {row[0].split()[0]: row[1:] for row in table_cells(html, "scope2-dual")}
    assert sites["home-ber"] == ["48", "9.6", "1.9", "1.9", "5.4", "80.0 %", "0.0 %", "20.0 % no residual mix",
                                 "79.9 %", "92.8 %"]  # fmt: skip
    assert "dc-sjc" not in sites
    assert sites["home-sto"] == ["48", "9.6", "0.0", "0.0", "0.0", "100.0 %", "0.0 %", "0.0 %", "100.0 %", "100.0 %"]
    instruments = {row[0]: row[1:5] for row in table_cells(html, "scope2-instruments")}
    assert instruments == {
        "Solar PPA (demo) ppa · solar · DE 2025": ["home-ber", "annual", "38", "0"],
        "Hydro guarantees of origin (demo) go · hydro · SE-SE3 2025": ["home-sto", "annual", "48", "0"],
    }
