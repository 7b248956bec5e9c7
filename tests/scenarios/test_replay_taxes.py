"""A scenario's cost is the ledger's, taxes included: its actual side matches the reports, and its scenario side
computes the taxes again under the changes (the stored ledger and the sites' taxes, in the database).

The reports' two fleets (tests/helpers/reports.py, worked in tests/reports/conftest.py), with the H100
site taxing 0.05 per facility kWh and 25 % VAT it cannot recover. Enterprise over the three hours: rent
15.00, electricity 5.4 kWh x 0.30 = 1.62, energy tax 5.4 x 0.05 = 0.27, VAT 25 % x 16.62 = 4.155: 21.05,
over 1.5M output tokens 14.03 per 1M. The consumer's site (sjc-2) has no tax.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from accounting.models import SiteTax
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Fleet, Node, Role
from scenarios.models import Scenario
from scenarios.replay import ReplayError
from scenarios.services import ScenarioInvalid, scenario_create, scenario_replay
from tests.helpers.factories import SiteFactory
from tests.helpers.reports import END, HOURS, LONG_AGO, START, h100_node, h100_usage, live_grid, rtx_node

pytestmark = pytest.mark.django_db


@dataclass
class Taxed:
    h100: Node
    rtx: Node

    @property
    def enterprise(self) -> Fleet:
        return self.h100.fleet


@pytest.fixture
def taxed(org_a: Any) -> Taxed:
    live_grid()
    h100 = h100_node(org_a)
    h100_usage(h100)
    rtx = rtx_node(org_a)
    SiteTax.objects.create(
        site=h100.site, valid_from=LONG_AGO, vat_rate=Decimal("0.25"), vat_recoverable=False,
        energy_tax_per_kwh=Decimal("0.05"),
    )  # fmt: skip
    ledger_node_hours_compute(node_id=h100.pk, hour_starts=HOURS)
    return Taxed(h100, rtx)


def replayed(org_a: Any, changes: list[dict[str, Any]]) -> dict[str, Any]:
    scenario = scenario_create(
        organization=org_a, user=None, name="x", period_start=START, period_end=END, changes=changes
    )
    return scenario_replay(scenario=scenario)


def enterprise_of(result: dict[str, Any], taxed: Taxed) -> dict[str, Any]:
    (fleet,) = [f for f in result["fleets"] if f["fleet_id"] == taxed.enterprise.pk]
    return fleet


def test_scenario_actual_cost_is_the_ledgers_cost(taxed, org_a, client_as):
    scenario = Scenario.objects.create(
        organization=org_a, name="x", period_start=START, period_end=END,
        changes=[{"kind": "move", "fleet": taxed.rtx.fleet_id, "pue": "1.2"}],
    )  # fmt: skip

    result = scenario_replay(scenario=scenario)

    enterprise = enterprise_of(result, taxed)
    query = {"start": START.isoformat(), "end": END.isoformat(), "granularity": "total", "group_by": "fleet"}
    usage = client_as(Role.VIEWER).get("/api/v1/reports/usage/", query).json()
    (row,) = [r for r in usage["results"] if r["group_key"] == str(taxed.enterprise.pk)]
    assert (enterprise["actual"]["cost"], row["cost"]) == ("21.05", "21.05")
    assert enterprise["actual"]["cost_per_1m_output_tokens"] == row["cost_per_1m_output_tokens"] == "14.03"
    assert enterprise["scenario"] == enterprise["actual"]  # not changed: the ledger's taxes stand


def test_a_pue_change_scales_the_energy_tax_and_the_vat_follows_the_electricity(taxed, org_a):
    result = replayed(org_a, [{"kind": "move", "fleet": taxed.enterprise.pk, "pue": "2.4"}])

    # PUE 1.2 -> 2.4: 10.8 kWh; electricity 3.24, energy tax 0.54, VAT 25 % x (15.00 + 3.24) = 4.56
    assert enterprise_of(result, taxed)["scenario"]["cost"] == "23.34"


def test_a_move_to_a_site_without_tax_drops_the_energy_tax_and_the_vat(taxed, org_a):
    result = replayed(org_a, [{"kind": "move", "fleet": taxed.enterprise.pk, "site": taxed.rtx.site_id}])

    enterprise = enterprise_of(result, taxed)
    assert (enterprise["actual"]["cost"], enterprise["scenario"]["cost"]) == ("21.05", "16.62")
    assert f"fleet {taxed.enterprise.pk}: VAT and energy tax of site sjc-2, as in force each hour" in result["notes"]


def test_a_move_is_refused_a_site_of_another_organization_or_in_another_currency(taxed, org_a, org_b):
    elsewhere = SiteFactory(organization=org_b, name="abroad")
    with pytest.raises(ScenarioInvalid, match=r"changes\[0\]\.site: no site \d+ in organization org-a"):
        replayed(org_a, [{"kind": "move", "fleet": taxed.enterprise.pk, "site": elsewhere.pk}])

    in_euro = SiteFactory(organization=org_a, name="fra-9", currency="EUR")
    with pytest.raises(ReplayError, match="site fra-9 is in EUR, the ledger in USD"):
        replayed(org_a, [{"kind": "move", "fleet": taxed.enterprise.pk, "site": in_euro.pk}])
