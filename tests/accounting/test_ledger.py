"""The ledger, with values worked by hand in the comments."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.ledger import (
    AmortizationMethod,
    CurrencyMismatchError,
    ElectricityStatus,
    EmbodiedAsset,
    EmbodiedKg,
    EnergyMethod,
    IntensityFactor,
    LedgerInputError,
    LedgerPolicy,
    LedgerTotals,
    NodeHourInput,
    NodeHourLine,
    OwnedPricing,
    RatePer,
    RentedPricing,
    build_node_hour_line,
    embodied_co2e_g,
    embodied_rate_g_per_h,
    facility_kwh,
    hardware_cost,
    hours_held,
    kwh_from_j,
    money_quantize,
)
from accounting.ledger.totals import MARKET_FACTOR, carbon_per_token_complete, carbon_per_token_gaps
from accounting.tariff import TariffPrice
from tests.helpers.ledger_inputs import (
    CARD,
    FOUR_YEARS_H,
    HOUR,
    RENT_PER_GPU,
    RENT_PER_NODE_WITH_POWER,
    gpu,
    node,
)

# --- energy, electricity, hardware -----------------------------------------------------------


def test_energy_is_converted_at_3_6_megajoules_per_kwh_and_scaled_by_pue() -> None:
    # 8 GPUs x 2,520,000 J = 20,160,000 J = 5.6 kWh; x PUE 1.25 = 7 kWh
    line = build_node_hour_line(node())

    assert line.it_kwh == D("5.6")
    assert line.facility_kwh == D("7.00")
    assert line.energy_method is EnergyMethod.GPU_SUM


def test_rented_node_whose_price_includes_power_has_no_electricity_line() -> None:
    # given a node rented at 24.00/h including power, with a tariff in force
    line = build_node_hour_line(node(pricing=RENT_PER_NODE_WITH_POWER))

    # then electricity is shown as included (0), not priced at the tariff
    assert line.electricity_status is ElectricityStatus.INCLUDED
    assert line.electricity_cost == 0
    assert line.tariff_price_id is None
    assert line.tariff_price_per_kwh is None
    assert line.hardware_cost == D("24.00")
    assert line.cost == D("24.00")
    # carbon still counts the energy: 7 kWh x 200 g = 1,400 g; x 50 g = 350 g
    assert line.location_co2e_g == D(1400)
    assert line.market_co2e_g == D(350)
    assert line.pricing_price_id == "rent-3"


def test_rented_per_gpu_multiplies_the_rate_by_gpus_and_adds_electricity() -> None:
    # 2.50 x 8 GPUs x 1 h = 20.00; 7 kWh x 0.30 = 2.10; total 22.10
    line = build_node_hour_line(node())

    assert line.hardware_cost == D("20.00")
    assert line.electricity_cost == D("2.10")
    assert line.cost == D("22.10")
    assert line.electricity_status is ElectricityStatus.PRICED
    assert (line.tariff_price_id, line.tariff_price_per_kwh) == ("tariff-1:peak", D("0.30"))
    assert (line.location_source, line.market_source) == ("electricitymaps:live", "contract:ppa-7")


def test_owned_node_mid_lifetime_pays_depreciation_and_opex_per_hour() -> None:
    # capex 262,800 over 35,040 h = 7.50/h, + opex 1.25/h = 8.75/h
    # 4 GPUs x 1,440,000 J = 1.6 kWh; the node meter says 7,200,000 J = 2.0 kWh (host 0.4 kWh)
    # x PUE 1.5 = 3.0 kWh x 0.20 = 0.60; cost 9.35
    owned = OwnedPricing(D(262_800), FOUR_YEARS_H, D("1.25"), price_id="capex-9")
    hour = node(
        gpus=tuple(gpu(i, energy_j=D(1_440_000)) for i in range(4)),
        node_energy_j=D(7_200_000),
        pue=D("1.5"),
        tariff=TariffPrice(D("0.20"), "flat-2"),
        pricing=owned,
    )

    line = build_node_hour_line(hour)

    assert line.energy_method is EnergyMethod.NODE_METER
    assert line.it_kwh == D(2)
    assert line.facility_kwh == D(3)
    assert line.hardware_cost == D("8.75")
    assert line.electricity_cost == D("0.60")
    assert line.cost == D("9.35")
    # a 30-day month of such hours: 720 x 9.35 = 6,732.00
    month = LedgerTotals.sum(
        build_node_hour_line(replace(hour, hour_start=HOUR + timedelta(hours=h))) for h in range(720)
    )
    assert month.hardware_cost == D("6300.00")
    assert month.cost == D("6732.00")


def test_node_decommissioned_mid_month_stops_paying_when_it_is_no_longer_held() -> None:
    # commissioned 1 June 00:00, decommissioned 10 June 12:30 UTC:
    # 9 days x 24 h + 12 h = 228 full hours, then half of the 12:00 hour: 228.5 h held
    commissioned = datetime(2024, 6, 1, tzinfo=UTC)
    decommissioned = datetime(2024, 6, 10, 12, 30, tzinfo=UTC)
    rent = RentedPricing(D("4.00"), RatePer.NODE, includes_power=False)
    hours = [commissioned + timedelta(hours=h) for h in range(720)]

    lines = [
        build_node_hour_line(
            node(hour_start=h, held_h=hours_held(h, commissioned, decommissioned), pricing=rent, tariff=None)
        )
        for h in hours
    ]
    month = LedgerTotals.sum(lines)

    assert hours_held(datetime(2024, 6, 10, 12, tzinfo=UTC), commissioned, decommissioned) == D("0.5")
    assert month.held_h == D("228.5")
    assert month.hardware_cost == D("914.000")  # 228.5 h x 4.00
    assert month.gpu_h == D("1828.0")  # 228.5 h x 8 GPUs


def test_hours_held_is_zero_outside_the_holding_period_and_partial_at_its_edges() -> None:
    start = datetime(2024, 6, 1, 10, 15, tzinfo=UTC)

    assert hours_held(datetime(2024, 6, 1, 9, tzinfo=UTC), start, None) == 0
    assert hours_held(datetime(2024, 6, 1, 10, tzinfo=UTC), start, None) == D("0.75")
    assert hours_held(datetime(2024, 6, 1, 11, tzinfo=UTC), start, None) == 1
    assert hours_held(datetime(2024, 6, 1, 10, tzinfo=UTC), start, start + timedelta(minutes=6)) == D("0.1")
    with pytest.raises(LedgerInputError):
        hours_held(datetime(2024, 6, 1, 10, tzinfo=UTC), datetime(2024, 6, 1), None)  # noqa: DTZ001 - naive


def test_no_tariff_leaves_electricity_unpriced_not_free() -> None:
    line = build_node_hour_line(node(tariff=None))
    totals = LedgerTotals.sum([line])

    assert line.electricity_status is ElectricityStatus.UNPRICED
    assert line.electricity_cost is None
    assert line.cost == D("20.00")  # hardware only; the status says electricity is missing
    assert totals.unpriced_facility_kwh == D("7.00")


def test_unknown_intensity_is_none_and_counted_as_uncovered_energy() -> None:
    line = build_node_hour_line(node(location=None, market=None))
    totals = LedgerTotals.sum([line])

    assert line.location_co2e_g is None
    assert line.market_co2e_g is None
    assert totals.location_unknown_facility_kwh == D("7.00")
    assert totals.market_unknown_facility_kwh == D("7.00")
    assert totals.facility_kwh_by_location_source == {}


# --- embodied --------------------------------------------------------------------------------


def test_new_card_amortizes_embodied_over_its_expected_life() -> None:
    # 175.2 kg x 1000 / 35,040 h = 5 g/h (low 2 g/h, high 8 g/h)
    rate = embodied_rate_g_per_h(CARD)

    assert (rate.low, rate.central, rate.high) == (D(2), D(5), D(8))


def test_second_hand_card_spreads_what_is_left_over_its_own_remaining_life() -> None:
    # bought after 2 of 4 years: half (87.6 kg) is ours, spread over the 17,520 h left: 5 g/h
    second_hand = replace(CARD, prior_use_h=D(17_520))
    # kept 3 years instead: 87.6 kg over 26,280 h = 3.333... g/h
    kept_longer = replace(second_hand, own_life_h=D(26_280))
    # bought past its expected life: nothing left to allocate
    worn_out = replace(CARD, prior_use_h=D(40_000))

    assert embodied_rate_g_per_h(second_hand).central == D(5)
    assert abs(embodied_rate_g_per_h(kept_longer).central - D(10) / D(3)) < D("1e-25")
    assert embodied_rate_g_per_h(worn_out).central == 0


def test_line_embodied_adds_each_gpu_and_the_host_share_over_held_hours() -> None:
    # 8 cards x 5 g/h + host 350.4 kg / 35,040 h = 10 g/h; held 0.5 h: (40 + 10) / 2 = 25 g
    host = EmbodiedAsset(EmbodiedKg(D("350.4"), D("350.4"), D("350.4")), FOUR_YEARS_H)
    line = build_node_hour_line(node(host_embodied=host, held_h=D("0.5")))

    assert line.embodied_co2e_g.central == D(25)
    assert line.embodied_co2e_g.low == D(13)  # (8 x 2 + 10) / 2
    assert line.embodied_unknown_gpu_h == 0


def test_a_life_that_ends_inside_the_hour_carries_embodied_carbon_only_up_to_its_end() -> None:
    # one card's life ends at :15 (0.25 h of 5 g/h), seven cards' do not (7 x 5 g/h), and the host share's
    # (10 g/h) at :30: 1.25 + 35 + 5 = 41.25 g; rent and idle still count the whole hour held
    host = EmbodiedAsset(EmbodiedKg(D("350.4"), D("350.4"), D("350.4")), FOUR_YEARS_H)
    gpus = (gpu(0, embodied_h=D("0.25")), *(gpu(i) for i in range(1, 8)))
    line = build_node_hour_line(node(gpus=gpus, host_embodied=host, host_embodied_h=D("0.5")))

    assert line.embodied_co2e_g.central == D("41.25")
    assert line.embodied_unknown_gpu_h == 0
    assert line.gpu_h == 8


@pytest.mark.parametrize(
    "changes",
    [
        {"gpus": (gpu(0, installed_h=D("0.5"), embodied_h=D("0.75")),)},  # more life than installed time
        {"host_embodied_h": D("1.5")},
        {"held_h": D("0.5"), "host_embodied_h": D("0.75")},
    ],
)
def test_hours_inside_a_life_never_exceed_the_hours_held(changes: dict[str, object]) -> None:
    with pytest.raises(LedgerInputError):
        node(**changes)


def test_gpu_of_unknown_model_is_reported_not_weighed_as_zero() -> None:
    gpus = (gpu(0), gpu(1, embodied=None))
    line = build_node_hour_line(node(gpus=gpus))

    assert line.embodied_co2e_g.central == D(5)
    assert line.embodied_unknown_gpu_h == D(1)


def test_utilization_weighted_amortization_charges_only_the_used_share() -> None:
    # 5 g/h x 40 % utilization = 2 g
    policy = LedgerPolicy(amortization=AmortizationMethod.UTILIZATION)
    line = build_node_hour_line(node(gpus=(gpu(0, util=D(40)),)), policy)

    assert line.embodied_co2e_g.central == D(2)
    assert line.amortization is AmortizationMethod.UTILIZATION


# --- idle ------------------------------------------------------------------------------------


def idle_node(**kw: object) -> NodeHourInput:
    # 4 GPUs: two serving (1,800,000 J = 0.5 kWh each), one idle (360,000 J), one busy without
    # tokens at 30 % (not idle). Node meter 7,200,000 J: host = 7.2 - 5.76 = 1.44 MJ, 0.36 MJ per GPU.
    gpus = (
        gpu(0, energy_j=D(1_800_000)),
        gpu(1, energy_j=D(1_800_000)),
        gpu(2, energy_j=D(360_000), tokens=0, util=D(2)),
        gpu(3, energy_j=D(1_800_000), tokens=0, util=D(30)),
    )
    rent = RentedPricing(D(10), RatePer.NODE, includes_power=False)
    values: dict[str, object] = {
        "gpus": gpus,
        "node_energy_j": D(7_200_000),
        "pue": D("1.2"),
        "tariff": TariffPrice(D("0.25"), "t"),
        "pricing": rent,
    }
    values.update(kw)
    return node(**values)


def test_idle_gpu_carries_its_hardware_share_and_its_electricity() -> None:
    # idle GPU: own 0.36 MJ + host share 0.36 MJ = 0.2 kWh x 1.2 = 0.24 kWh x 0.25 = 0.06
    # hardware share 10 / 4 = 2.50; idle cost 2.56
    line = build_node_hour_line(idle_node())

    assert line.idle_gpu_h == 1
    assert line.idle_facility_kwh == D("0.24")
    assert line.idle_cost == D("2.56")
    assert line.cost == D("10.60")  # 2.0 kWh x 1.2 = 2.4 kWh x 0.25 = 0.60 + 10


def test_idle_hours_follow_hours_held_and_unknown_utilization_is_judged_by_tokens() -> None:
    gpus = (gpu(0, tokens=0, util=None), gpu(1, tokens=5, util=D(0)))
    line = build_node_hour_line(idle_node(gpus=gpus, node_energy_j=None, held_h=D("0.5")))

    assert line.idle_gpu_h == D("0.5")


def test_when_every_gpu_is_idle_idle_cost_is_the_whole_cost() -> None:
    gpus = tuple(replace(g, tokens_served=0, mean_util_pct=D(0)) for g in idle_node().gpus)
    line = build_node_hour_line(idle_node(gpus=gpus))

    assert line.idle_cost == line.cost
    assert line.idle_facility_kwh == line.facility_kwh
    assert LedgerTotals.sum([line]).idle_share == 1


def test_idle_threshold_is_a_policy() -> None:
    line = build_node_hour_line(idle_node(), LedgerPolicy(idle_util_threshold_pct=D(50)))

    assert line.idle_gpu_h == 2  # the 30 % GPU is now idle too


# --- totals and metrics ----------------------------------------------------------------------


def test_per_token_metrics() -> None:
    # 400,000 tokens; cost 22.10 -> 55.25 per 1M tokens; IT 20,160,000 J -> 50.4 J/token
    # SCI: (1,400 g + 8 x 5 g) / 400,000 x 1000 = 3.6 g per 1k tokens
    totals = LedgerTotals.sum([build_node_hour_line(node())])

    assert totals.tokens == 400_000
    assert totals.cost_per_1m_tokens == D("55.25")
    assert totals.it_j_per_token == D("50.4")
    assert totals.facility_j_per_token == D("63")
    assert totals.sci_g_per_1k_tokens == D("3.6")
    assert totals.market_g_per_1k_tokens == D("0.975")  # (350 + 40) / 400
    assert totals.coverage == 1


def test_per_token_metrics_are_none_without_tokens() -> None:
    totals = LedgerTotals.sum([build_node_hour_line(node(prompt_tokens=0, generation_tokens=0))])

    assert totals.cost_per_1m_tokens is None
    assert totals.it_j_per_token is None
    assert totals.facility_j_per_token is None
    assert totals.sci_g_per_1k_tokens is None
    assert totals.market_g_per_1k_tokens is None


def _with_unknowns(**unknown: D) -> LedgerTotals:
    # 10 kWh, 3,000 g location-based, 300 g market-based, 600 g embodied; 800,000 + 400,000 tokens
    return LedgerTotals(
        facility_kwh=D(10), location_co2e_g=D(3000), market_co2e_g=D(300), embodied_co2e_g_low=D(200),
        embodied_co2e_g_central=D(600), embodied_co2e_g_high=D(900), prompt_tokens=800_000,
        generation_tokens=400_000, **unknown,
    )  # fmt: skip


def test_carbon_per_token_is_stated_only_where_every_part_of_it_is_known() -> None:
    known = _with_unknowns()
    assert (known.sci_g_per_1k_tokens, known.location_g_per_1m_output_tokens) == (D(3), D(7500))
    assert (known.sci_complete, known.sci_gaps) == (True, ())

    # 2 of the 10 kWh without a grid intensity: every location-based figure per token withheld, not 3,000 g over
    # every token (understated); the embodied part alone and the market-based figure are whole
    dark = _with_unknowns(location_unknown_facility_kwh=D(2))
    assert dark.sci_g_per_1k_tokens is dark.sci_g_per_1k_output_tokens is dark.location_g_per_1m_output_tokens is None
    assert dark.embodied_g_per_1m_output_tokens() == D(1500)
    assert dark.market_g_per_1k_tokens == D("0.75")  # (300 + 600) / 1,200
    assert dark.sci_gaps == ("intensity coverage incomplete: 2 of 10 facility kWh have no grid intensity",)
    assert dark.location_co2e_g == D(3000)  # the total keeps the known part

    # a GPU-hour of a model without an embodied figure: every figure with embodied carbon in it withheld
    unmodelled = _with_unknowns(embodied_unknown_gpu_h=D("0.5"))
    assert unmodelled.sci_g_per_1k_tokens is unmodelled.market_g_per_1k_tokens is None
    assert unmodelled.embodied_g_per_1m_output_tokens("high") is None
    assert unmodelled.location_g_per_1m_output_tokens == D(7500)
    assert unmodelled.sci_gaps == (
        "embodied coverage incomplete: 0.5 GPU-hours are of models without an embodied figure",
    )

    # kWh without a market factor: the market-based figure alone withheld
    assert _with_unknowns(market_unknown_facility_kwh=D(1)).market_g_per_1k_tokens is None


def test_the_rule_and_its_reasons_are_one_function_for_every_figure() -> None:
    assert carbon_per_token_complete() and carbon_per_token_complete(unknown_intensity_kwh=D(0))
    assert not carbon_per_token_complete(unknown_intensity_kwh=D("0.001"))
    assert not carbon_per_token_complete(embodied_unknown_gpu_h=D(1))
    assert carbon_per_token_gaps(facility_kwh=D(4), unknown_intensity_kwh=D(1), factor=MARKET_FACTOR) == (
        "intensity coverage incomplete: 1 of 4 facility kWh have no market factor",
    )


def test_empty_totals_have_no_ratios() -> None:
    totals = LedgerTotals.sum([])

    assert totals.currency is None
    assert (totals.idle_share, totals.idle_cost_share, totals.coverage) == (None, None, None)


def test_money_is_rounded_once_for_display_not_per_line() -> None:
    # three hours at 0.004 each: 0.012 -> 0.01 when rounded once; 0.00 if each line were rounded
    cheap = RentedPricing(D("0.004"), RatePer.NODE, includes_power=True)
    lines = [build_node_hour_line(node(pricing=cheap, hour_start=HOUR + timedelta(hours=h))) for h in range(3)]
    totals = LedgerTotals.sum(lines)

    assert totals.cost == D("0.012")
    assert money_quantize(totals.cost, "USD") == D("0.01")
    assert sum(money_quantize(line.cost, "USD") for line in lines) == 0


@pytest.mark.parametrize(
    ("value", "currency", "shown"),
    [
        (D("2.345"), "USD", D("2.35")),  # half up
        (D("2.344"), "EUR", D("2.34")),
        (D("1234.5"), "JPY", D(1235)),  # no minor unit
        (D("1.23456"), "KWD", D("1.235")),  # three decimals
    ],
)
def test_money_quantize(value: D, currency: str, shown: D) -> None:
    assert money_quantize(value, currency) == shown
    assert str(money_quantize(value, currency)) == str(shown)


def test_totals_in_different_currencies_are_not_added() -> None:
    usd = LedgerTotals.sum([build_node_hour_line(node())])
    eur = LedgerTotals.sum([build_node_hour_line(node(currency="EUR"))])

    with pytest.raises(CurrencyMismatchError):
        usd.merge(eur)


def test_roll_ups_merge_and_record_energy_per_intensity_source() -> None:
    a = LedgerTotals.sum([build_node_hour_line(node())])
    b = LedgerTotals.sum([build_node_hour_line(node(location=IntensityFactor(D(300), "ember:annual-2023")))])

    fleet = a.merge(b)

    assert fleet.lines == 2
    assert fleet.cost == D("44.20")
    assert fleet.location_co2e_g == D(3500)  # 7 x 200 + 7 x 300
    assert fleet.facility_kwh_by_location_source == {"electricitymaps:live": D(7), "ember:annual-2023": D(7)}


# --- refused inputs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"hour_start": datetime(2024, 6, 3, 14)},  # noqa: DTZ001 - naive on purpose
        {"hour_start": HOUR + timedelta(minutes=5)},
        {"held_h": D("1.5")},
        {"pue": D("0.9")},
        {"node_energy_j": D(-1)},
    ],
)
def test_inputs_the_ledger_refuses(changes: dict[str, object]) -> None:
    with pytest.raises(LedgerInputError):
        node(**changes)


def test_node_meter_below_its_gpus_is_refused() -> None:
    with pytest.raises(LedgerInputError, match="node meter"):
        build_node_hour_line(node(node_energy_j=D(1)))


def test_negative_gpu_energy_and_out_of_range_utilization_are_refused() -> None:
    with pytest.raises(LedgerInputError):
        gpu(energy_j=D(-5))
    with pytest.raises(LedgerInputError):
        gpu(util=D(101))


# --- properties ------------------------------------------------------------------------------

TOLERANCE = D("1e-15")
energies = st.integers(min_value=0, max_value=5_000_000_000).map(D)
held = st.decimals(min_value=0, max_value=1, places=4)
hour_inputs = st.lists(st.tuples(energies, st.integers(0, 10**7), held), min_size=1, max_size=24)


def _lines(hours: list[tuple[D, int, D]]) -> list[NodeHourLine]:
    return [
        build_node_hour_line(
            node(
                gpus=(gpu(0, energy_j=energy),),
                held_h=held_h,
                prompt_tokens=tokens,
                generation_tokens=0,
                hour_start=HOUR + timedelta(hours=i),
            )
        )
        for i, (energy, tokens, held_h) in enumerate(hours)
    ]


@settings(max_examples=60, deadline=None)
@given(hours=hour_inputs)
def test_sum_of_lines_equals_the_line_of_summed_inputs_where_linear(hours: list[tuple[D, int, D]]) -> None:
    totals = LedgerTotals.sum(_lines(hours))
    energy_j = sum((energy for energy, _, _ in hours), D(0))
    held_h = sum((h for _, _, h in hours), D(0))
    summed_facility = facility_kwh(kwh_from_j(energy_j), D("1.25"))

    assert abs(totals.facility_kwh - summed_facility) <= TOLERANCE
    assert abs(totals.electricity_cost - summed_facility * D("0.30")) <= TOLERANCE
    assert abs(totals.location_co2e_g - summed_facility * 200) <= TOLERANCE
    assert abs(totals.hardware_cost - hardware_cost(RENT_PER_GPU, held_h, held_h)) <= TOLERANCE  # one GPU
    assert abs(totals.embodied_co2e_g.central - embodied_co2e_g(CARD, held_h).central) <= TOLERANCE
    assert totals.tokens == sum(tokens for _, tokens, _ in hours)


@settings(max_examples=60, deadline=None)
@given(rates=st.lists(st.decimals(min_value=0, max_value=100, places=5), min_size=1, max_size=30))
def test_totals_keep_full_precision_and_round_once(rates: list[D]) -> None:
    lines = [
        build_node_hour_line(node(pricing=RentedPricing(rate, RatePer.NODE, includes_power=True))) for rate in rates
    ]
    totals = LedgerTotals.sum(lines)

    assert totals.cost == sum(rates, D(0))
    assert money_quantize(totals.cost, "USD") == money_quantize(sum(rates, D(0)), "USD")


@settings(max_examples=60, deadline=None)
@given(
    energies=st.lists(st.integers(0, 3_000_000).map(D), min_size=1, max_size=8),
    idle_flags=st.lists(st.booleans(), min_size=8, max_size=8),
    host_j=st.integers(0, 2_000_000).map(D),
)
def test_idle_cost_never_exceeds_the_line_cost(energies: list[D], idle_flags: list[bool], host_j: D) -> None:
    gpus = tuple(
        gpu(i, energy_j=e, tokens=0 if idle else 1, util=D(0))
        for i, (e, idle) in enumerate(zip(energies, idle_flags[: len(energies)], strict=True))
    )
    line = build_node_hour_line(node(gpus=gpus, node_energy_j=sum(energies, host_j)))

    assert 0 <= line.idle_cost <= line.cost + TOLERANCE
    if all(idle_flags[: len(energies)]):
        assert abs(line.idle_cost - line.cost) <= TOLERANCE
