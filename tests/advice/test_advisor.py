"""The advisor on constructed curves: allocations worked by hand, every latency target respected."""

from __future__ import annotations

from decimal import Decimal

import pytest

from advice.advisor import AdvisorSettings, ClassSpec, advise
from tests.helpers.curves_data import FAST, SLOW, band, consumer, curve, enterprise

# Consumer capacity: 1.5 req/s per GPU x 16 GPUs x 200 tokens x 86,400 s = 414,720,000 output tokens/day.
CONSUMER_CAPACITY = 414_720_000
ENTERPRISE_CAPACITY = 1_382_400_000  # 10 x 8 x 200 x 86,400


def spec(tokens_per_day: int, *, target_ms: float = 200, weight: float = 0.0, llm: str = "llama-8b") -> ClassSpec:
    return ClassSpec(
        class_id=1, name="chat", llm_model=llm, ttft_target_ms=target_ms, ttft_percentile=99,
        output_tokens_per_day=tokens_per_day, carbon_weight=weight,
    )  # fmt: skip


def test_cheap_consumer_fleet_takes_what_it_holds_within_the_target_and_enterprise_the_rest():
    # when: 600M output tokens/day at P99 <= 200 ms
    advice = advise(spec(600_000_000), [enterprise(), consumer()])
    # then: consumer (1.00 per 1M) is filled to its latency-bound capacity, enterprise (2.00) takes the rest
    assert advice.status == "ok"
    shares = {p.fleet_name: p.output_tokens_per_day for p in advice.recommendation.placements}
    assert shares == pytest.approx({"consumer": CONSUMER_CAPACITY, "enterprise": 600_000_000 - CONSUMER_CAPACITY})
    assert advice.recommendation.placements[0].share == pytest.approx(0.6912)
    # 414.72 x 1.00 + 185.28 x 2.00 per day
    assert advice.recommendation.cost_per_day == pytest.approx(Decimal("785.28"))
    assert advice.binding == "latency"
    assert "consumer holds P99 TTFT <= 200 ms up to 1.5 req/s per GPU" in advice.explanation
    assert "P99 is 497 ms" in advice.explanation
    assert advice.hours_of_data == 96


def test_every_placement_respects_the_latency_target():
    for tokens in (10_000_000, 300_000_000, 600_000_000, 1_500_000_000):
        advice = advise(spec(tokens), [enterprise(), consumer()])
        assert advice.recommendation is not None
        for placement in advice.recommendation.placements:
            assert placement.ttft_ms is not None and placement.ttft_ms <= 200
        assert advice.recommendation.target_holds is True


def test_small_load_goes_all_to_the_cheapest_fleet_bound_by_cost():
    advice = advise(spec(100_000_000), [enterprise(), consumer()])
    (placement,) = advice.recommendation.placements
    assert (placement.fleet_name, placement.share) == ("consumer", 1.0)
    assert advice.binding == "cost"


def test_all_on_consumer_misses_the_target_and_all_on_enterprise_costs_more():
    advice = advise(spec(600_000_000), [enterprise(), consumer()])
    # consumer alone: 600e6 / 86,400 / 200 / 16 = 2.17 req/s per GPU, in the 2-4 band (P99 497 ms; 0.80 per 1M)
    assert advice.all_consumer.target_holds is False
    assert advice.all_consumer.placements[0].ttft_ms == pytest.approx(497.0)
    assert advice.all_consumer.cost_per_day == pytest.approx(Decimal("480"))
    # enterprise alone: 4.34 req/s per GPU, read on its 1-2 band: 2.00 per 1M -> 1200 a day, target held
    assert advice.all_enterprise.target_holds is True
    assert advice.all_enterprise.cost_per_day == pytest.approx(Decimal("1200"))


def test_a_carbon_weight_of_one_prefers_the_cleaner_fleet():
    cleaner = enterprise(operational_g="10000", embodied_g="5000")
    advice = advise(spec(600_000_000, weight=1.0), [cleaner, consumer()])
    (placement,) = advice.recommendation.placements
    assert placement.fleet_name == "enterprise"
    assert advice.binding == "carbon_weighted_cost"
    # 600 x 15 gCO2e per 1M output tokens = 9 kg a day
    assert advice.recommendation.kgco2e_per_day == pytest.approx(9.0)


def test_a_fleet_is_not_extrapolated_past_its_measured_range():
    # when: more than both fleets ever served within the target
    advice = advise(spec(2_000_000_000), [enterprise(), consumer()])
    # then: infeasible, with what the fleets do hold
    assert advice.status == "infeasible"
    assert advice.recommendation is None
    assert advice.binding == "capacity"
    assert f"{CONSUMER_CAPACITY + ENTERPRISE_CAPACITY:,}" in advice.explanation
    assert "enterprise holds P99 TTFT <= 200 ms up to 10 req/s per GPU" in advice.explanation
    assert "the highest load measured" in advice.explanation


def test_untrusted_bands_are_skipped():
    # a consumer band of 2 hours (fewer than min_band_hours) at 8 req/s per GPU does not lift its capacity
    thin = curve(2, "consumer", "consumer", 16, [band(1, 2, max_rps=1.5, ttft=FAST, cost="1000", hours=30),
                                                 band(4, 8, max_rps=8, ttft=FAST, cost="1000", hours=2)])  # fmt: skip
    advice = advise(spec(100_000_000), [thin], AdvisorSettings(min_hours=24, min_band_hours=3))
    (fit,) = advice.fits
    assert fit.capacity_rps_per_gpu == 1.5


def test_with_no_curve_of_the_model_it_says_so():
    advice = advise(spec(1000, llm="qwen-14b"), [enterprise(), consumer()])
    assert advice.status == "insufficient_data"
    assert advice.recommendation is None
    assert advice.explanation == "No measured hours of qwen-14b on any fleet: no advice until a fleet has served it."


def test_with_too_few_hours_it_says_so_instead_of_guessing():
    advice = advise(spec(1000), [enterprise(), consumer()], AdvisorSettings(min_hours=100))
    assert advice.status == "insufficient_data"
    assert advice.recommendation is None
    assert (
        "fewer than 100 measured hours (enterprise (h100-sxm): 48 h, consumer (rtx-4090): 48 h)" in advice.explanation
    )


def test_fingerprint_changes_with_the_shares_only():
    a = advise(spec(600_000_000), [enterprise(), consumer()])
    b = advise(spec(600_000_001), [enterprise(), consumer()])
    c = advise(spec(100_000_000), [enterprise(), consumer()])
    assert a.fingerprint() == b.fingerprint() == "ok:1/h100-sxm=30%;2/rtx-4090=70%"
    assert c.fingerprint() == "ok:2/rtx-4090=100%"


def test_fleets_in_two_currencies_are_ordered_by_carbon_and_get_no_cost_total():
    from dataclasses import replace

    euro_consumer = replace(consumer(operational_g="900000"), currency="EUR")  # cheaper in number, dirtier
    advice = advise(spec(100_000_000), [enterprise(), euro_consumer])
    (placement,) = advice.recommendation.placements
    assert placement.fleet_name == "enterprise"
    assert "ordered by gCO2e alone" in advice.explanation
    assert advice.recommendation.currency == "USD"  # only the enterprise fleet is placed


def test_a_fleet_whose_bands_are_all_too_thin_gets_no_capacity():
    thin = curve(2, "consumer", "consumer", 16, [band(1, 2, max_rps=1.5, ttft=FAST, cost="1", hours=2)] * 13)
    advice = advise(spec(100_000_000), [thin, enterprise()])
    assert [p.fleet_name for p in advice.recommendation.placements] == ["enterprise"]
    fit = next(f for f in advice.fits if f.fleet_name == "consumer")
    assert (fit.binding, fit.capacity_output_tokens_per_day) == ("no_latency_data", 0)
    assert "consumer has no trusted load band with a measured TTFT histogram" in advice.explanation


def test_a_lower_bound_ttft_never_proves_all_on_consumer_holds_the_target():
    from dataclasses import replace

    from reports.bands import LOWER_BOUND

    # a TGI consumer fleet: its only histogram is queue time, a lower bound of TTFT (P99 >= 99.5 ms)
    tgi = curve(2, "consumer", "consumer", 16, [
        replace(band(1, 2, max_rps=1.5, ttft=FAST, cost="1000"), ttft_basis=LOWER_BOUND),
    ])  # fmt: skip
    advice = advise(spec(100_000_000), [enterprise(), tgi])
    # all on consumer: 100e6 / 86,400 / 200 / 16 = 0.36 req/s per GPU, read at a lower bound of 99.5 ms:
    # the real TTFT may be anything above, so whether 200 ms holds is not known (None), never True
    assert advice.all_consumer.placements[0].ttft_basis == LOWER_BOUND
    assert advice.all_consumer.target_holds is None
    assert "lower bound" in advice.all_consumer.note
    # and the recommendation never credits the TGI fleet with capacity
    assert [p.fleet_name for p in advice.recommendation.placements] == ["enterprise"]


def test_a_load_between_two_measured_bands_is_not_read_on_the_lighter_one():
    # consumer measured at light load (up to 0.2 req/s per GPU, P99 99.5 ms) and at 2-4 req/s (P99 497 ms);
    # nothing between 0.2 and 2 was measured
    gap = curve(2, "consumer", "consumer", 16, [
        band(0, 0.25, max_rps=0.2, ttft=FAST, cost="1000"),
        band(2, 4, max_rps=3.5, ttft=SLOW, cost="800"),
    ])  # fmt: skip
    # all on consumer: 276,480,000 / 86,400 / 200 / 16 = 1.0 req/s per GPU, between the two
    advice = advise(spec(276_480_000), [enterprise(), gap])
    (placement,) = advice.all_consumer.placements
    assert placement.rps_per_gpu == pytest.approx(1.0)
    # read on the band measured above that load (497 ms, 0.80 per 1M: 221.18 a day), never on the lighter one,
    # and since 497 ms is only an upper bound there, whether 200 ms holds is not known
    assert placement.band_rps_per_gpu == (2, 4)
    assert placement.ttft_ms == pytest.approx(497.0)
    assert advice.all_consumer.cost_per_day == pytest.approx(Decimal("221.184"))
    assert advice.all_consumer.target_holds is None
    # the recommendation credits the consumer fleet only up to what it was measured to hold: 0.2 req/s per GPU
    fit = next(f for f in advice.fits if f.fleet_name == "consumer")
    assert fit.capacity_output_tokens_per_day == pytest.approx(0.2 * 16 * 200 * 86_400)


def test_a_deferrable_run_is_as_long_as_the_recommended_fleet_and_gpu_model_need():
    from advice.services import run_hours

    # fleet 1 holds H100s (2.00 per 1M) and, dearer, A100s (9.00 per 1M) with the same capacity
    a100 = curve(1, "enterprise", "enterprise", 8, [
        band(1, 2, max_rps=1.9, ttft=FAST, cost="9000"),
        band(8, 16, max_rps=10.0, ttft=FAST, cost="9000"),
    ], gpu_model="a100")  # fmt: skip
    advice = advise(spec(100_000_000), [enterprise(), a100])
    (placement,) = advice.recommendation.placements
    assert (placement.fleet_name, placement.gpu_model) == ("enterprise", "h100-sxm")
    # only the H100s run it: 1,382,400,000 a day = 57.6M an hour, so 100M output tokens take 2 hours
    # (not 1, as if the A100s of the same fleet, never recommended, ran it too)
    assert run_hours(advice, output_tokens_per_day=100_000_000, deadline_h=24) == 2
    assert run_hours(advice, output_tokens_per_day=100_000_000, deadline_h=1) == 1


def _with_gaps(fleet, *, unknown_kwh="0", unpriced=0):
    from dataclasses import replace

    bands = tuple(replace(b, unknown_intensity_kwh=Decimal(unknown_kwh), unpriced_node_hours=unpriced)
                  for b in fleet.bands)  # fmt: skip
    return replace(fleet, bands=bands)


def test_a_fleet_with_some_hours_of_unknown_intensity_is_not_ranked_cleaner_on_its_known_part_and_says_so():
    # consumer: 40 kg known over half its kWh (600 of 1200 per band unknown): its known part alone (40 + 20
    # embodied = 60 gCO2e per 1M output tokens) or scaled by its coverage (100) would rank it below enterprise's
    # 100 + 20 = 120; withheld, it counts as the worst, and enterprise, known, goes first at the same score
    consumer_gaps = _with_gaps(consumer(operational_g="40000"), unknown_kwh="600")
    advice = advise(spec(100_000_000, weight=1.0), [enterprise(), consumer_gaps])
    (placement,) = advice.recommendation.placements
    assert placement.fleet_name == "enterprise"
    fit = next(f for f in advice.fits if f.fleet_name == "consumer")
    assert (fit.gco2e_per_1m_output_tokens, fit.operational_coverage) == (None, 0.5)
    assert fit.score == next(f for f in advice.fits if f.fleet_name == "enterprise").score == 1.0
    assert (
        "consumer: 0.9000 USD and gCO2e per 1M output tokens not stated (intensity coverage incomplete: 1200 of "
        "2400 facility kWh have no grid intensity; counted as the worst for carbon)"
    ) in advice.explanation


def test_a_placement_on_a_band_of_withheld_carbon_has_no_carbon_per_day():
    consumer_gaps = _with_gaps(consumer(operational_g="40000"), unknown_kwh="600")
    advice = advise(spec(100_000_000), [consumer_gaps])  # cost alone: consumer takes it all
    (placement,) = advice.recommendation.placements
    assert placement.operational_kgco2e_per_day is None
    assert placement.embodied_kgco2e_per_day == pytest.approx(2.0)  # 100 x 20 g per 1M output tokens
    assert advice.recommendation.kgco2e_per_day is None


def test_a_fleet_with_unpriced_hours_gives_its_cost_as_a_lower_bound():
    advice = advise(spec(100_000_000), [enterprise(), _with_gaps(consumer(), unpriced=3)])
    fit = next(f for f in advice.fits if f.fleet_name == "consumer")
    assert fit.unpriced_node_hours == 6  # 3 in each of its two bands
    assert "consumer: at least 0.9000 USD (6 node-hours unpriced, their cost missing)" in advice.explanation
    assert "enterprise: 2.000 USD and" in advice.explanation
