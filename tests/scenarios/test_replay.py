"""The replay's arithmetic on hand-built ledger rows (no database): each change against hand-worked figures.

Fleet 1 (enterprise, site 10, h100-sxm, PUE 1.5): 2 nodes x 2 hours; each node-hour 8 GPU-hours,
4 kWh IT, 6 kWh facility priced at 0.25 (1.50), hardware 20.00 (rent), no tax, 400 gCO2e/kWh
(2,400 g), embodied 80 / 200 / 320 g, 2M prompt and 1M output tokens. So per 1M output tokens: 21.50 USD, 2,400 g
operational, 200 g embodied (80 to 320); 16 kWh x 3.6e6 J / 4M tokens = 14.4 J per output token.
Fleet 2 (consumer, rtx-4090): 1 node x 2 hours; 8 GPU-hours, 2 kWh IT, 3 kWh facility (0.75),
hardware 8.00 (rent), 1,200 g, embodied 100 g, 0.5M output tokens each: 17.50 per 1M output tokens.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from scenarios.changes import ChangeInvalid, changes_parse
from scenarios.replay import Replay, ReplayError, ReplayInputs, lifetime_factor
from scenarios.result import ClassSpec, result_json

H0 = datetime(2026, 1, 5, tzinfo=UTC)
HOURS = [H0, H0 + timedelta(hours=1)]
D = Decimal


NO_TAX = (D(0), D(0), D(0))  # energy tax, VAT, VAT in cost
EMBODIED_KNOWN = D(0)  # GPU-hours of models without an embodied figure


def enterprise_row(hour):
    return (1, 10, "h100-sxm", D("1.50"), hour, D(1), D(8), D(4), D(6), "priced", D("1.5"), D(20), D(2400),
            D(80), D(200), D(320), 2_000_000, 1_000_000, D(20), D(0), D(0), *NO_TAX, EMBODIED_KNOWN)  # fmt: skip


def consumer_row(hour):
    return (2, 20, "rtx-4090", D("1.50"), hour, D(1), D(8), D(2), D(3), "priced", D("0.75"), D(8), D(1200),
            D(100), D(100), D(100), 1_000_000, 500_000, D(8), D(0), D(0), *NO_TAX, EMBODIED_KNOWN)  # fmt: skip


def replayed(changes, *, consumer=False, usage=(), **inputs):
    replay = Replay()
    for hour in HOURS:
        replay.add(enterprise_row(hour))
        replay.add(enterprise_row(hour))
        if consumer:
            replay.add(consumer_row(hour))
    for row in usage:
        replay.add_usage(row)
    parsed = changes_parse(changes)
    outcome = replay.run(ReplayInputs(parsed, **inputs))
    return result_json(
        outcome, changes=parsed, period_h=D(2), currency="USD", fleet_names={1: "enterprise", 2: "consumer"}
    )


LIVES = {"h100-sxm": D(4), "rtx-4090": D(4)}


def test_the_actual_side_is_what_the_ledger_rows_say():
    result = replayed([{"kind": "move", "fleet": 1, "pue": "1.5"}])

    actual = result["total"]["actual"]
    assert actual["cost_per_1m_output_tokens"] == "21.50"
    assert actual["location_gco2e_per_1m_output_tokens"] == "2400"
    assert actual["embodied_gco2e_per_1m_output_tokens"] == "200.0"
    assert actual["embodied_gco2e_per_1m_output_tokens_range"] == ["80.00", "320.0"]
    assert actual["j_per_output_token"] == "14.40"
    assert actual["output_tokens"] == "4000000"
    assert actual["yearly_cost"] == str(D(86) * 8760 / 2) + ".00"  # the period's 86.00 x 8760 / 2 h
    assert result["total"]["scenario"] == actual  # the same PUE changes nothing
    assert result["node_hours_replayed"] == 4
    assert result["embodied_range"].startswith("range")


def test_keeping_cards_8_years_instead_of_4_halves_embodied_per_token_and_leaves_operational_alone():
    result = replayed([{"kind": "lifetime", "fleet": 1, "extra_years": 4}], lifetime_years=LIVES)

    scenario = result["total"]["scenario"]
    assert scenario["embodied_gco2e_per_1m_output_tokens"] == "100.0"  # 200 x 4 / 8
    assert scenario["embodied_gco2e_per_1m_output_tokens_range"] == ["40.00", "160.0"]
    assert scenario["location_gco2e_per_1m_output_tokens"] == "2400"
    assert scenario["cost_per_1m_output_tokens"] == "21.50"
    assert "fleet 1: hardware cost as measured" in result["notes"][0]


def test_the_lifetime_curve_shows_embodied_per_token_falling_year_by_year_beside_a_flat_operational_figure():
    result = replayed([{"kind": "lifetime", "fleet": 1, "extra_years": 4}], lifetime_years=LIVES)

    (curve,) = result["lifetime"]
    assert curve["fleet"] == "enterprise"
    points = [(p["extra_years"], p["embodied_gco2e_per_1m_output_tokens"]) for p in curve["points"]]
    assert points == [("0", "200.0"), ("1", "160.0"), ("2", "133.3"), ("3", "114.3"), ("4", "100.0")]  # 200 x 4/(4+k)
    assert {p["location_gco2e_per_1m_output_tokens"] for p in curve["points"]} == {"2400"}


def test_second_hand_cards_cost_their_price_over_the_years_left_and_carry_the_same_rate():
    # Bought at 3 years old for 8,760 per card, kept to 4 + 2 = 6 years: 3 years left, 1/3 per GPU-hour.
    change = {"kind": "lifetime", "fleet": 1, "extra_years": 2, "purchase_price_per_gpu": 8760, "prior_use_years": 3}
    result = replayed([change], lifetime_years=LIVES)

    scenario = result["total"]["scenario"]
    assert scenario["embodied_gco2e_per_1m_output_tokens"] == "133.3"  # 200 x 4 / 6
    # hardware 32 GPU-h / 3 = 10.6667 + electricity 6.00 = 16.67 over 4M output tokens
    assert scenario["cost"] == "16.67"
    assert round(lifetime_factor(D(4), changes_parse([change])[0]), 12) == round(D(4) / D(6), 12)


def test_a_card_with_its_own_expected_life_is_extended_from_the_life_the_ledger_used():
    # Node 7's cards (4-year catalog life) are expected to serve us 2 years: the ledger amortised them at 1/2
    # a year. Kept 4 years longer they serve 6: 1/6 a year, a factor (1/6) / (1/2) = 1/3 (not 4 / 8 = 1/2).
    change = changes_parse([{"kind": "lifetime", "fleet": 1, "extra_years": 4}])[0]
    assert round(lifetime_factor(D(4), change, ((D(0), D(2)),)), 12) == round(D(1) / D(3), 12)
    # Second-hand at 2 years with no own life given: the rest of its life, 2 years, at half its embodied
    # (1/4 a year, as new); +4 years: (1 - 2/8) / 6 = 1/8 a year, a factor of 1/2.
    assert round(lifetime_factor(D(4), change, ((D(2), None),)), 12) == D(1) / D(2)
    # A node of both cards: (1/6 + 1/8) / (1/2 + 1/4) = 7/18
    assert round(lifetime_factor(D(4), change, ((D(0), D(2)), (D(2), None))), 12) == round(D(7) / D(18), 12)
    replay = Replay(node_lives={7: ((D(0), D(2)),)})
    for hour in HOURS:
        replay.add((*enterprise_row(hour), 7))
        replay.add((*enterprise_row(hour), 8))  # no asset: the catalog life, 4 / 8
    outcome = replay.run(ReplayInputs((change,), lifetime_years=LIVES))
    # embodied 2 x 200 x 1/3 + 2 x 200 x 1/2 = 333.3 g over 4M output tokens
    assert round(outcome.scenario[1].embodied_co2e_g_central, 9) == round(D(400) / 3 + D(200), 9)
    (curve,) = outcome.lifetime_curves.values()
    assert round(curve[-1].embodied_co2e_g, 9) == round(D(400) / 3 + D(200), 9)
    assert curve[0].embodied_co2e_g == D(800)


def test_a_zone_move_changes_location_carbon_by_the_ratio_of_intensities():
    zone = {1: dict.fromkeys(HOURS, D(100))}
    result = replayed([{"kind": "move", "fleet": 1, "zone": "FR"}], zone_intensity=zone)

    actual, scenario = result["total"]["actual"], result["total"]["scenario"]
    assert scenario["location_gco2e_per_1m_output_tokens"] == "600.0"  # 2400 x 100 / 400
    assert D(scenario["location_co2e_kg"]) / D(actual["location_co2e_kg"]) == D(100) / D(400)
    assert scenario["embodied_gco2e_per_1m_output_tokens"] == "200.0"


def test_a_zone_with_hours_unknown_leaves_their_kwh_without_location_carbon():
    zone = {1: {HOURS[0]: D(100), HOURS[1]: None}}
    result = replayed([{"kind": "move", "fleet": 1, "zone": "FR"}], zone_intensity=zone)

    assert result["total"]["scenario"]["location_unknown_facility_kwh"] == "12.00"
    assert result["total"]["scenario"]["location_co2e_kg"] == "1.200"


def test_pue_and_tariff_of_a_move():
    result = replayed([{"kind": "move", "fleet": 1, "pue": "1.2", "price_per_kwh": "0.10"}])

    scenario = result["total"]["scenario"]
    assert scenario["facility_kwh"] == "19.20"  # 16 kWh x 1.2
    assert scenario["cost"] == "81.92"  # 80.00 hardware + 19.2 kWh x 0.10
    assert scenario["location_co2e_kg"] == "7.680"  # 9.6 kg x 1.2 / 1.5


def test_adding_two_nodes_to_a_fleet_of_two_doubles_its_figures_and_keeps_per_token_ones():
    result = replayed([{"kind": "nodes", "fleet": 1, "gpu_model": "h100-sxm", "nodes": 2}])

    scenario = result["total"]["scenario"]
    assert (scenario["cost"], scenario["output_tokens"]) == ("172.00", "8000000")
    assert scenario["cost_per_1m_output_tokens"] == "21.50"


def test_removing_one_node_of_two_halves_the_fleet():
    result = replayed([{"kind": "nodes", "fleet": 1, "gpu_model": "h100-sxm", "nodes": -1}])

    assert result["total"]["scenario"]["cost"] == "43.00"


def test_nodes_of_a_gpu_model_the_fleet_never_measured_are_refused():
    with pytest.raises(ReplayError, match="no measured node-hours of GPU model 'rtx-4090'"):
        replayed([{"kind": "nodes", "fleet": 1, "gpu_model": "rtx-4090", "nodes": 2}])


def test_renting_with_power_included_instead_of_owning():
    result = replayed([{"kind": "tenure", "fleet": 1, "mode": "rent", "rate_per_gpu_h": "3", "includes_power": True}])

    scenario = result["total"]["scenario"]
    assert scenario["cost"] == "96.00"  # 32 GPU-hours x 3.00, no electricity line
    assert scenario["cost_per_1m_output_tokens"] == "24.00"
    assert scenario["unpriced_facility_kwh"] == "0"


def test_owning_cards_whose_rent_included_power_leaves_their_kwh_unpriced_and_says_so():
    rented = replayed([{"kind": "tenure", "fleet": 1, "mode": "rent", "rate_per_gpu_h": 3, "includes_power": True}])
    assert not rented["notes"]
    change = {"kind": "tenure", "fleet": 1, "mode": "own", "capex_per_gpu": 26280, "lifetime_years": 3}
    replay = Replay()
    for hour in HOURS:
        row = list(enterprise_row(hour))
        row[9], row[10] = "included", D(0)  # the rent paid the power
        replay.add(tuple(row))
    parsed = changes_parse([change])
    result = result_json(replay.run(ReplayInputs(parsed)), changes=parsed, period_h=D(2), currency="USD",
                         fleet_names={})  # fmt: skip

    assert result["total"]["scenario"]["unpriced_facility_kwh"] == "12.00"
    assert result["total"]["scenario"]["cost"] == "16.00"  # 16 GPU-hours x 1.00, the power unpriced
    assert "12.00 facility kWh of the scenario have no electricity price" in result["notes"][0]


def test_owning_instead_of_renting():
    # 26,280 per card over 3 years (26,280 h) is 1.00 per GPU-hour, + 0.50 opex: 32 x 1.50 + 6.00 electricity
    change = {"kind": "tenure", "fleet": 1, "mode": "own", "capex_per_gpu": 26280, "lifetime_years": 3,
              "opex_per_gpu_h": "0.5"}  # fmt: skip
    result = replayed([change])

    assert not result["notes"]  # the electricity stays priced
    assert result["total"]["scenario"]["cost"] == "54.00"
    assert result["total"]["scenario"]["cost_per_1m_output_tokens"] == "13.50"


USAGE = (  # fleet, hour, model, kind, prompt, output tokens, requests, TTFT bounds, per-bucket counts, GPU-hours
    *((1, hour, "llama-8b", "vllm", 4_000_000, 2_000_000, 500, [0.1, 1.0], [500, 0, 0], D(16)) for hour in HOURS),
    *((2, hour, "llama-8b", "vllm", 1_000_000, 500_000, 500, [0.1, 1.0], [0, 500, 0], D(8)) for hour in HOURS),
)


def test_routing_half_of_a_models_output_costs_it_with_the_target_fleets_per_token_figures():
    change = {"kind": "routing", "llm_model": "llama-8b", "from_fleet": 1, "to_fleet": 2, "share": "0.5"}
    result = replayed([change], consumer=True, usage=USAGE)

    total, fleets = result["total"], {f["fleet"]: f for f in result["fleets"]}
    assert total["actual"]["cost_per_1m_output_tokens"] == "20.70"  # (86.00 + 17.50) / 5M
    # enterprise keeps 2M tokens at 21.50 (43.00); consumer serves 3M at 17.50 (52.50): 95.50 / 5M
    assert (fleets["enterprise"]["scenario"]["cost"], fleets["consumer"]["scenario"]["cost"]) == ("43.00", "52.50")
    assert total["scenario"]["cost_per_1m_output_tokens"] == "19.10"
    assert total["scenario"]["output_tokens"] == "5000000"
    model = result["llm_models"][0]
    assert (model["actual_output_tokens"], model["scenario_output_tokens"]) == ("5000000", "5000000")


def test_routing_all_of_a_model_to_a_slower_fleet_takes_its_measured_p99_ttft():
    change = {"kind": "routing", "llm_model": "llama-8b", "from_fleet": 1, "to_fleet": 2, "share": 1}
    result = replayed([change], consumer=True, usage=USAGE)

    model = result["llm_models"][0]
    assert model["actual_p99_ttft_s"] == 0.982  # [1000, 1000, 0]: rank 1980 at 98 % of (0.1, 1]
    assert model["scenario_p99_ttft_s"] == 0.991  # all in the consumer fleet's shape: 99 % of (0.1, 1]


def test_routed_requests_count_as_many_as_the_scaled_source_served():
    # Enterprise doubled (8M output tokens, 2,000 requests), half routed: 1,000 requests stay in its shape,
    # 1,000 move in the consumer's beside its own 1,000: [1000, 2000, 0], rank 2970 at 98.5 % of (0.1, 1].
    changes = [
        {"kind": "nodes", "fleet": 1, "gpu_model": "h100-sxm", "nodes": 2},
        {"kind": "routing", "llm_model": "llama-8b", "from_fleet": 1, "to_fleet": 2, "share": "0.5"},
    ]
    model = replayed(changes, consumer=True, usage=USAGE)["llm_models"][0]

    assert model["scenario_output_tokens"] == "9000000"
    assert model["scenario_p99_ttft_s"] == 0.9865


def curve_usage(enterprise_requests):
    """Consumer measured at 0.5 req/s per GPU (fast) in hour 0 and 2.0 (slow) in hour 1; 8 GPU-hours each."""
    return (
        *((1, h, "llama-8b", "vllm", 4_000_000, 2_000_000, enterprise_requests, [0.1, 1.0], [enterprise_requests, 0, 0],
           D(16))
          for h in HOURS),
        (2, HOURS[0], "llama-8b", "vllm", 1_000_000, 500_000, 14400, [0.1, 1.0], [14400, 0, 0], D(8)),
        (2, HOURS[1], "llama-8b", "vllm", 1_000_000, 500_000, 57600, [0.1, 1.0], [0, 57600, 0], D(8)),
    )  # fmt: skip


def test_routed_requests_take_the_targets_measured_ttft_at_each_hours_new_load():
    # A quarter of enterprise's 43,200 requests an hour moves: 10,800. Hour 0: (14,400 + 10,800) / 28,800 =
    # 0.875 req/s per GPU, above the fast band's highest measured load (0.5) and below the slow band: read on
    # the slow band (as the advisor reads it: never extrapolated past a measured load): 25,200 slow. Hour 1:
    # 2.375, above the 2.0 measured: beyond, on the slow band: 68,400 slow. Enterprise keeps 0.75 x 86,400 =
    # 64,800 fast. [64,800, 93,600, 0]: rank 156,816 at 98.3 % of (0.1, 1].
    change = {"kind": "routing", "llm_model": "llama-8b", "from_fleet": 1, "to_fleet": 2, "share": "0.25"}
    result = replayed([change], consumer=True, usage=curve_usage(43200))

    assert result["llm_models"][0]["scenario_p99_ttft_s"] == 0.9848
    assert "llama-8b: 1 hours of routed load beyond any load measured" in result["notes"][-1]


def test_the_fleet_requests_leave_is_read_at_its_lower_load_too():
    # Enterprise (16 GPU-hours an hour) is slow at 1.0 req/s per GPU (hour 0) and fast at 0.25 (hour 1).
    # Three quarters leave: hour 0 falls to 0.25, the fast band. The consumer takes them in its fast 2.0 band.
    usage = (
        (1, HOURS[0], "llama-8b", "vllm", 4_000_000, 2_000_000, 57600, [0.1, 1.0], [0, 57600, 0], D(16)),
        (1, HOURS[1], "llama-8b", "vllm", 4_000_000, 2_000_000, 14400, [0.1, 1.0], [14400, 0, 0], D(16)),
        (2, HOURS[0], "llama-8b", "vllm", 1_000_000, 500_000, 14400, [0.1, 1.0], [14400, 0, 0], D(8)),
        (2, HOURS[1], "llama-8b", "vllm", 1_000_000, 500_000, 57600, [0.1, 1.0], [57600, 0, 0], D(8)),
    )
    change = {"kind": "routing", "llm_model": "llama-8b", "from_fleet": 1, "to_fleet": 2, "share": "0.75"}
    model = replayed([change], consumer=True, usage=usage)["llm_models"][0]

    assert model["actual_p99_ttft_s"] == 0.9775  # 57,600 slow of 144,000: rank 142,560 at 97.5 % of (0.1, 1]
    assert model["scenario_p99_ttft_s"] == 0.099  # every request in a fast band


def test_a_load_beyond_anything_measured_reads_the_highest_band_and_says_so():
    change = {"kind": "routing", "llm_model": "llama-8b", "from_fleet": 1, "to_fleet": 2, "share": 1}
    # hour 0: 114,400 / 28,800 = 3.97 req/s per GPU, hour 1: 157,600 / 28,800 = 5.5: both above the 2.0 measured
    result = replayed([change], consumer=True, usage=curve_usage(100_000))

    assert result["llm_models"][0]["scenario_p99_ttft_s"] == 0.991  # all in the slow band
    assert "llama-8b: 2 hours of routed load beyond any load measured" in result["notes"][-1]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ([], "non-empty list"),
        ([{"kind": "teleport"}], r"changes\[0\].kind"),
        ([{"kind": "routing", "llm_model": "m", "from_fleet": 1, "to_fleet": 2, "share": 2}], r"share: must be within"),
        ([{"kind": "lifetime", "fleet": 1, "extra_years": 2, "prior_use_years": 1}], "both purchase_price"),
        ([{"kind": "move", "fleet": 1}], "give a zone"),
        ([{"kind": "move", "fleet": 1, "pue": "0.9"}], r"pue: must be within 1 and 5"),
        ([{"kind": "nodes", "fleet": 1, "gpu_model": "x", "nodes": 0}], "must not be 0"),
        ([{"kind": "tenure", "fleet": 1, "mode": "lease"}], "'rent' or 'own'"),
        ([{"kind": "move", "fleet": 1, "pue": 2}, {"kind": "move", "fleet": 1, "zone": "FR"}], "second change"),
        ([{"kind": "move", "fleet": 1, "pue": 2, "colour": "red"}], "colour: not a field"),
        ([{"kind": "move", "fleet": 1, "zone": "DE; DROP"}], "zone: a grid zone key"),
        ([{"kind": "nodes", "fleet": 1, "gpu_model": "h100\x00", "nodes": 1}], "gpu_model: printable characters only"),
        ([{"kind": "routing", "llm_model": "m", "from_fleet": 1, "to_fleet": 1, "share": 1}], "must differ"),
        ([{"kind": "lifetime", "fleet": True, "extra_years": 1}], "fleet: an integer is required"),
        (
            [{"kind": "tenure", "fleet": 1, "mode": "own", "capex_per_gpu": "NaN", "lifetime_years": 3}],
            "a finite number",
        ),
    ],
)
def test_changes_are_refused_naming_the_field(changes, message):
    with pytest.raises(ChangeInvalid, match=message):
        changes_parse(changes)


def test_each_workload_class_gets_its_ttft_at_its_percentile_against_its_target():
    change = {"kind": "routing", "llm_model": "llama-8b", "from_fleet": 1, "to_fleet": 2, "share": 1}
    replay = Replay()
    for hour in HOURS:
        replay.add(enterprise_row(hour))
        replay.add(consumer_row(hour))
    for row in USAGE:
        replay.add_usage(row)
    parsed = changes_parse([change])
    classes = [ClassSpec("chat", "llama-8b", 99, 500), ClassSpec("batch", "", 50, 5000)]
    result = result_json(replay.run(ReplayInputs(parsed)), changes=parsed, period_h=D(2), currency="USD",
                         fleet_names={}, classes=classes)  # fmt: skip

    chat, batch = result["workload_classes"]
    # chat: [1000, 1000, 0] measured, P99 0.982 s; all on the consumer fleet: 0.991 s, past its 500 ms target
    assert (chat["actual_ttft_ms"], chat["scenario_ttft_ms"]) == (982.0, 991.0)
    assert (chat["actual_meets_target"], chat["scenario_meets_target"]) == (False, False)
    # batch (every model), P50: rank 1000 of [1000, 1000, 0] ends the first bucket: 100 ms; all slow: 550 ms
    assert (batch["llm_model"], batch["actual_ttft_ms"], batch["scenario_ttft_ms"]) == ("every model", 100.0, 550.0)
    assert batch["scenario_meets_target"] is True
