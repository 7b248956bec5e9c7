"""A scenario's carbon per token follows the reports' one rule (``carbon_per_token_complete``): withheld while
any of its kWh has no intensity or, where embodied carbon is part of it, any GPU-hour has no embodied figure,
with the reason beside it; totals keep the known part.

Hand-built rows (no database) as test_replay's: fleet 1, 2 h100-sxm nodes x 2 hours, each node-hour 6 facility
kWh, 2,400 gCO2e (400 g/kWh), embodied 80 / 200 / 320 g, 1M output tokens: 24 kWh, 9,600 g, 4M output tokens.
Fleet 2 (consumer): 1 node x 2 hours, 3 kWh, 1,200 g, 0.5M output tokens each. Then the reports' enterprise
fleet in the database, beside the comparison report for the same period.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Gpu, Node, Role
from scenarios.changes import changes_parse
from scenarios.models import Scenario
from scenarios.replay import LEDGER_COLUMNS, Replay, ReplayInputs
from scenarios.result import result_json
from scenarios.services import scenario_create, scenario_run_claim
from scenarios.tasks import scenario_run_task
from tests.helpers.factories import MembershipFactory
from tests.helpers.reports import END, HOURS, START, h100_node, h100_usage, live_grid, no_intensity_in_h3

D = Decimal
H0 = datetime(2026, 1, 5, tzinfo=UTC)
TWO_HOURS = (H0, H0 + timedelta(hours=1))
NO_INTENSITY_IN_H1 = "intensity coverage incomplete: 12 of 24 facility kWh have no grid intensity"
CARBON_PER_TOKEN = (
    "location_gco2e_per_1m_output_tokens",
    "embodied_gco2e_per_1m_output_tokens",
    "embodied_gco2e_per_1m_output_tokens_range",
    "total_gco2e_per_1m_output_tokens",
)

ENTERPRISE = {
    "fleet_id": 1, "site_id": 10, "gpu_model": "h100-sxm", "pue": D("1.50"), "held_h": D(1), "gpu_h": D(8),
    "it_kwh": D(4), "facility_kwh": D(6), "electricity_status": "priced", "electricity_cost": D("1.5"),
    "hardware_cost": D(20), "location_co2e_g": D(2400), "embodied_co2e_g_low": D(80),
    "embodied_co2e_g_central": D(200), "embodied_co2e_g_high": D(320), "prompt_tokens": 2_000_000,
    "generation_tokens": 1_000_000, "rent_cost": D(20), "depreciation_cost": D(0), "opex_cost": D(0),
    "energy_tax_cost": D(0), "vat_amount": D(0), "vat_cost": D(0), "embodied_unknown_gpu_h": D(0),
}  # fmt: skip
CONSUMER = ENTERPRISE | {
    "fleet_id": 2, "site_id": 20, "gpu_model": "rtx-4090", "it_kwh": D(2), "facility_kwh": D(3),
    "electricity_cost": D("0.75"), "hardware_cost": D(8), "rent_cost": D(8), "location_co2e_g": D(1200),
    "embodied_co2e_g_low": D(100), "embodied_co2e_g_central": D(100), "embodied_co2e_g_high": D(100),
    "prompt_tokens": 1_000_000, "generation_tokens": 500_000,
}  # fmt: skip
# A node of a GPU model without an embodied figure: its 8 GPU-hours carry no embodied carbon.
NO_EMBODIED = ENTERPRISE | {
    "gpu_model": "mystery-9000", "embodied_co2e_g_low": D(0), "embodied_co2e_g_central": D(0),
    "embodied_co2e_g_high": D(0), "embodied_unknown_gpu_h": D(8),
}  # fmt: skip
USAGE = (  # fleet, hour, model, kind, prompt, output tokens, requests, TTFT bounds, per-bucket counts, GPU-hours
    *((1, hour, "llama-8b", "vllm", 4_000_000, 2_000_000, 500, [0.1, 1.0], [500, 0, 0], D(16)) for hour in TWO_HOURS),
    *((2, hour, "llama-8b", "vllm", 1_000_000, 500_000, 500, [0.1, 1.0], [0, 500, 0], D(8)) for hour in TWO_HOURS),
)


def row(hour: datetime, figures: dict[str, Any], **changed: Any) -> tuple:
    """The node-hour as the stored ledger's ``LEDGER_COLUMNS`` give it to the replay (no node)."""
    values = figures | {"hour_start": hour} | changed
    return tuple(values[name] for name in LEDGER_COLUMNS[:-1])


def replayed(changes, rows, *, usage=(), **inputs) -> dict[str, Any]:
    replay = Replay()
    for each in rows:
        replay.add(each)
    for each in usage:
        replay.add_usage(each)
    parsed = changes_parse(changes)
    outcome = replay.run(ReplayInputs(parsed, **inputs))
    return result_json(
        outcome, changes=parsed, period_h=D(2), currency="USD", fleet_names={1: "enterprise", 2: "consumer"}
    )


def no_intensity_in_h1(figures=ENTERPRISE) -> list[tuple]:
    """Both nodes' hours; the second hour's kWh have no grid intensity (no location carbon)."""
    return [row(h, figures, location_co2e_g=None if h == TWO_HOURS[1] else figures["location_co2e_g"])
            for h in TWO_HOURS for _ in range(2)]  # fmt: skip


def one_node_without_embodied() -> list[tuple]:
    """Each hour one node of h100-sxm and one of a model without an embodied figure: 16 GPU-hours unknown."""
    return [row(h, figures) for h in TWO_HOURS for figures in (ENTERPRISE, NO_EMBODIED)]


def withheld(figures: dict[str, Any], *keys: str) -> bool:
    return all(figures[key] is None for key in keys)


def test_an_hour_without_intensity_withholds_operational_and_total_carbon_per_token_and_says_why():
    result = replayed([{"kind": "move", "fleet": 1, "pue": "1.5"}], no_intensity_in_h1())

    actual = result["total"]["actual"]
    # never the known 4,800 g over every 4M output tokens (1,200)
    assert withheld(actual, "location_gco2e_per_1m_output_tokens", "total_gco2e_per_1m_output_tokens")
    assert (actual["embodied_gco2e_per_1m_output_tokens"], actual["embodied_gco2e_per_1m_output_tokens_range"]) == (
        "200.0",
        ["80.00", "320.0"],
    )
    assert actual["carbon_per_token_note"] == NO_INTENSITY_IN_H1
    assert actual["carbon_per_token_withheld"] == {
        "location_gco2e_per_1m_output_tokens": NO_INTENSITY_IN_H1,
        "total_gco2e_per_1m_output_tokens": NO_INTENSITY_IN_H1,
    }
    assert (actual["location_unknown_facility_kwh"], actual["embodied_unknown_gpu_h"]) == ("12.00", "0")
    # totals keep the known part: 4,800 g operational, 800 g embodied; (5,600 g x 8760 / 2 h) a year
    assert (actual["location_co2e_kg"], actual["embodied_co2e_kg"], actual["yearly_co2e_t"]) == (
        "4.800",
        "0.8000",
        "24.53",
    )
    assert result["total"]["scenario"] == actual
    (fleet,) = result["fleets"]
    assert fleet["actual"] == fleet["scenario"] == actual


def test_a_gpu_model_without_an_embodied_figure_withholds_embodied_and_total_but_states_operational():
    result = replayed([{"kind": "move", "fleet": 1, "pue": "1.5"}], one_node_without_embodied())

    actual = result["total"]["actual"]
    assert actual["location_gco2e_per_1m_output_tokens"] == "2400"  # its kWh all have an intensity
    assert withheld(actual, *CARBON_PER_TOKEN[1:])  # never 400 g over 4M output tokens (100)
    reason = "embodied coverage incomplete: 16 GPU-hours are of models without an embodied figure"
    assert actual["carbon_per_token_note"] == reason
    assert set(actual["carbon_per_token_withheld"]) == set(CARBON_PER_TOKEN[1:])
    assert actual["embodied_unknown_gpu_h"] == "16.00"
    assert actual["embodied_co2e_kg"] == "0.4000"  # the known part


def test_everything_known_states_every_figure_and_withholds_none():
    result = replayed([{"kind": "move", "fleet": 1, "pue": "1.5"}], [row(h, ENTERPRISE) for h in TWO_HOURS])

    actual = result["total"]["actual"]
    assert actual["location_gco2e_per_1m_output_tokens"] == "2400"
    assert actual["total_gco2e_per_1m_output_tokens"] == "2600"
    assert (actual["carbon_per_token_note"], actual["carbon_per_token_withheld"]) == (None, {})


def test_added_nodes_of_a_model_without_an_embodied_figure_add_their_unknown_gpu_hours():
    # 1 mystery node an hour, +1: x 2, 32 GPU-hours unknown
    result = replayed(
        [{"kind": "nodes", "fleet": 1, "gpu_model": "mystery-9000", "nodes": 1}], one_node_without_embodied()
    )

    scenario = result["total"]["scenario"]
    assert scenario["embodied_unknown_gpu_h"] == "32.00"
    assert withheld(scenario, *CARBON_PER_TOKEN[1:])
    assert scenario["carbon_per_token_note"] == (
        "embodied coverage incomplete: 32 GPU-hours are of models without an embodied figure"
    )
    assert scenario["location_gco2e_per_1m_output_tokens"] == "2400"


def test_a_move_to_a_zone_known_every_hour_states_what_the_ledger_withheld():
    zone = {1: dict.fromkeys(TWO_HOURS, D(100))}
    result = replayed([{"kind": "move", "fleet": 1, "zone": "FR"}], no_intensity_in_h1(), zone_intensity=zone)

    actual, scenario = result["total"]["actual"], result["total"]["scenario"]
    assert actual["location_gco2e_per_1m_output_tokens"] is None
    assert scenario["location_gco2e_per_1m_output_tokens"] == "600.0"  # 24 kWh x 100 g over 4M output tokens
    assert scenario["total_gco2e_per_1m_output_tokens"] == "800.0"
    assert (scenario["location_unknown_facility_kwh"], scenario["carbon_per_token_note"]) == ("0", None)


def test_a_move_to_a_zone_with_an_hour_unknown_withholds_its_operational_carbon_per_token():
    zone = {1: {TWO_HOURS[0]: D(100), TWO_HOURS[1]: None}}
    rows = [row(h, ENTERPRISE) for h in TWO_HOURS for _ in range(2)]
    result = replayed([{"kind": "move", "fleet": 1, "zone": "FR"}], rows, zone_intensity=zone)

    actual, scenario = result["total"]["actual"], result["total"]["scenario"]
    assert actual["location_gco2e_per_1m_output_tokens"] == "2400"
    assert withheld(scenario, "location_gco2e_per_1m_output_tokens", "total_gco2e_per_1m_output_tokens")
    assert scenario["carbon_per_token_note"] == NO_INTENSITY_IN_H1
    assert scenario["location_co2e_kg"] == "1.200"  # the known hour: 12 kWh x 100 g


@pytest.mark.parametrize(
    "second_hand", [{}, {"purchase_price_per_gpu": "10000", "prior_use_years": "2"}], ids=["kept", "second-hand"]
)
def test_a_longer_life_gives_no_embodied_figure_to_a_model_without_one(second_hand):
    lives = {"h100-sxm": D(4), "mystery-9000": D(4)}  # a life known, an embodied figure not
    change = {"kind": "lifetime", "fleet": 1, "extra_years": 4, **second_hand}
    result = replayed([change], one_node_without_embodied(), lifetime_years=lives)

    scenario = result["total"]["scenario"]
    assert scenario["embodied_unknown_gpu_h"] == "16.00"
    assert withheld(scenario, *CARBON_PER_TOKEN[1:])
    (curve,) = result["lifetime"]
    reason = "embodied coverage incomplete: 16 GPU-hours are of models without an embodied figure"
    for point in curve["points"]:
        assert point["embodied_gco2e_per_1m_output_tokens"] is None
        assert point["location_gco2e_per_1m_output_tokens"] == "2400"
        assert point["carbon_per_token_withheld"] == {"embodied_gco2e_per_1m_output_tokens": reason}


def test_the_lifetime_curve_withholds_operational_carbon_per_token_where_kwh_have_no_intensity():
    result = replayed([{"kind": "lifetime", "fleet": 1, "extra_years": 1}], no_intensity_in_h1(),
                      lifetime_years={"h100-sxm": D(4)})  # fmt: skip

    (curve,) = result["lifetime"]
    assert [p["location_gco2e_per_1m_output_tokens"] for p in curve["points"]] == [None, None]
    assert [p["embodied_gco2e_per_1m_output_tokens"] for p in curve["points"]] == ["200.0", "160.0"]
    assert curve["points"][0]["carbon_per_token_note"] == NO_INTENSITY_IN_H1


def test_routing_carries_the_unknown_kwh_with_the_output_it_moves():
    # Enterprise (12 of 24 kWh unknown) sends half of llama's 4M output tokens to the consumer: half its figures
    # leave with them (6 of 12 unknown kWh stay), and the consumer serves them with its own, all known.
    change = {"kind": "routing", "llm_model": "llama-8b", "from_fleet": 1, "to_fleet": 2, "share": "0.5"}
    rows = [*no_intensity_in_h1(), *(row(h, CONSUMER) for h in TWO_HOURS)]
    result = replayed([change], rows, usage=USAGE)

    fleets = {f["fleet"]: f["scenario"] for f in result["fleets"]}
    assert fleets["enterprise"]["location_unknown_facility_kwh"] == "6.000"
    assert fleets["enterprise"]["location_gco2e_per_1m_output_tokens"] is None
    assert fleets["consumer"]["location_gco2e_per_1m_output_tokens"] == "2400"
    total = result["total"]["scenario"]
    assert total["location_gco2e_per_1m_output_tokens"] is None
    assert (
        total["carbon_per_token_note"] == "intensity coverage incomplete: 6 of 30 facility kWh have no grid intensity"
    )


# The reports' enterprise fleet (tests/helpers/reports.py), stored, beside the comparison report.


def compared(client_as, node: Node) -> dict[str, Any]:
    query = {"start": START.isoformat(), "end": END.isoformat(), "fleet": node.fleet_id}
    (row,) = client_as(Role.VIEWER).get("/api/v1/reports/comparison/", query).json()["results"]
    return row


def scenario_run(organization, node: Node, changes: list[dict[str, Any]]) -> Scenario:
    scenario = scenario_create(
        organization=organization, user=None, name="x", period_start=START, period_end=END, changes=changes
    )
    assert scenario_run_claim(scenario_id=scenario.pk, now=timezone.now())
    scenario_run_task.apply(args=[scenario.pk])
    scenario.refresh_from_db()
    assert scenario.status == Scenario.Status.DONE, scenario.error
    return scenario


def enterprise_side(scenario: Scenario, node: Node, side: str = "actual") -> dict[str, Any]:
    (fleet,) = [f for f in scenario.result["fleets"] if f["fleet_id"] == node.fleet_id]
    return fleet[side]


@pytest.fixture
def h3_without_intensity(org_a) -> Node:
    """The enterprise H100 node, its site with no grid intensity in H3: 1.8 of its 5.4 facility kWh unknown."""
    node = h100_node(org_a)
    h100_usage(node)
    no_intensity_in_h3(node)
    return node


@pytest.mark.django_db
def test_the_scenario_withholds_the_operational_carbon_per_token_the_comparison_withholds(
    h3_without_intensity, org_a, client_as
):
    node = h3_without_intensity
    scenario = scenario_run(org_a, node, [{"kind": "move", "fleet": node.fleet_id, "pue": "2.4"}])

    actual, row = enterprise_side(scenario, node), compared(client_as, node)
    reason = "intensity coverage incomplete: 1.8 of 5.4 facility kWh have no grid intensity"
    assert actual["location_gco2e_per_1m_output_tokens"] is row["location_gco2e_per_1m_output_tokens"] is None
    assert actual["total_gco2e_per_1m_output_tokens"] is row["gco2e_per_1m_output_tokens"] is None
    assert actual["carbon_per_token_note"] == row["carbon_per_token_note"] == reason
    assert float(actual["location_unknown_facility_kwh"]) == row["location_unknown_facility_kwh"] == 1.8
    # the embodied part is known: stated by both, alike
    assert float(actual["embodied_gco2e_per_1m_output_tokens"]) == pytest.approx(
        row["embodied_gco2e_per_1m_output_tokens"], rel=1e-3
    )
    # totals keep the known part: 3.6 kWh x 200 g
    assert float(actual["location_co2e_kg"]) == row["location_kgco2e"] == 0.72
    # PUE 1.2 -> 2.4: twice the kWh, the same third of them unknown
    scenario_side = enterprise_side(scenario, node, "scenario")
    assert scenario_side["location_gco2e_per_1m_output_tokens"] is None
    assert scenario_side["carbon_per_token_note"] == (
        "intensity coverage incomplete: 3.6 of 10.8 facility kWh have no grid intensity"
    )
    assert scenario_side["location_co2e_kg"] == "1.440"


@pytest.mark.django_db
def test_the_scenario_withholds_the_embodied_carbon_per_token_the_comparison_withholds(org_a, client_as):
    live_grid()
    node = h100_node(org_a)
    Gpu.objects.filter(node=node, index=1).update(name="NVIDIA Mystery 9000")  # a model without an embodied figure
    h100_usage(node)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)
    scenario = scenario_run(org_a, node, [{"kind": "move", "fleet": node.fleet_id, "pue": "1.2"}])

    actual, row = enterprise_side(scenario, node), compared(client_as, node)
    reason = "embodied coverage incomplete: 3 GPU-hours are of models without an embodied figure"
    assert actual["carbon_per_token_note"] == row["carbon_per_token_note"] == reason
    assert actual["embodied_gco2e_per_1m_output_tokens"] is row["embodied_gco2e_per_1m_output_tokens"] is None
    assert actual["total_gco2e_per_1m_output_tokens"] is row["gco2e_per_1m_output_tokens"] is None
    assert actual["embodied_gco2e_per_1m_output_tokens_range"] is None
    assert float(actual["location_gco2e_per_1m_output_tokens"]) == pytest.approx(
        row["location_gco2e_per_1m_output_tokens"], rel=1e-3
    )
    assert float(actual["embodied_unknown_gpu_h"]) == row["embodied_unknown_gpu_h"] == 3


@pytest.mark.django_db
def test_the_scenario_page_shows_a_withheld_carbon_per_token_as_not_stated_with_its_reason(
    h3_without_intensity, org_a, client
):
    node = h3_without_intensity
    scenario = scenario_run(org_a, node, [{"kind": "move", "fleet": node.fleet_id, "pue": "2.4"}])
    client.force_login(MembershipFactory(organization=org_a, role=Role.VIEWER).user)

    html = client.get(f"/scenarios/{scenario.pk}/").content.decode()

    row = html.split('data-figure="location_gco2e_per_1m_output_tokens"')[1].split("</tr>")[0]
    actual = row.split('<td class="actual">')[1].split("</td>")[0]
    assert actual == (
        '—<br><span class="note withheld">not stated: intensity coverage incomplete: 1.8 of 5.4 facility kWh '
        "have no grid intensity</span>"
    )
    assert (
        "not stated: intensity coverage incomplete: 3.6 of 10.8 facility kWh" in row.split('<td class="scenario">')[1]
    )
    total = html.split('data-figure="total_gco2e_per_1m_output_tokens"')[1].split("</tr>")[0]
    assert total.count("—<br>") == 2 and total.count("not stated:") == 2
    embodied = html.split('data-figure="embodied_gco2e_per_1m_output_tokens"')[1].split("</tr>")[0]
    assert "not stated" not in embodied  # every GPU-hour has an embodied figure
    fleet = html.split('data-side="actual"')[1].split("</tr>")[0]
    operational = fleet.split('<td class="operational">')[1].split("</td>")[0]
    assert operational.startswith("—<br>") and "not stated: intensity coverage incomplete" in operational
