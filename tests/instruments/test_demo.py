"""The demo's instruments: a solar PPA at dc-sjc for 80 % of its energy, hydro GOs at home-sto for all of it.

Two days, one node per site with 1 kWh of facility energy every hour in the ledger: 48 kWh per site.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from accounting.instruments.demo import demo_instruments_seed
from accounting.instruments.models import ContractualInstrument
from accounting.instruments.selectors import scope2_report
from fleets.models import Organization
from tests.factories import NodeFactory, OrganizationFactory, SiteFactory
from tests.instruments.conftest import ledger_hours

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
