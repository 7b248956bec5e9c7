"""The curve arithmetic on hand-built hours: GPUs serving, coverage of known carbon, unpriced hours."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from reports.bands import CurveKey, EndpointHour, NodeHour, curves_build, load_hours

H0 = datetime(2026, 11, 2, tzinfo=UTC)


def line(node_id, hour, *, gpu_h="1", cost="2", facility_kwh="1", co2e="400", **extra):
    return NodeHour(
        node_id=node_id, hour_start=H0 + timedelta(hours=hour), fleet_id=1, gpu_model="rtx-4090", currency="USD",
        gpu_h=Decimal(gpu_h), cost=Decimal(cost), it_kwh=Decimal(facility_kwh), facility_kwh=Decimal(facility_kwh),
        operational_co2e_g=None if co2e is None else Decimal(co2e), embodied_co2e_g=Decimal(10), **extra,
    )  # fmt: skip


def usage(node_id, hour, model, tokens, requests=100):
    return EndpointHour(node_id, H0 + timedelta(hours=hour), model, requests, tokens)


def build(endpoint_hours, node_hours):
    return {c.key.llm_model: c for c in curves_build(load_hours(endpoint_hours, node_hours), fleet_names={1: "f"},
                                                     gpu_classes={})}  # fmt: skip


def test_a_shared_gpu_counts_as_its_share_not_rounded_to_nothing():
    # one GPU-hour shared 2 : 2 : 1 by output tokens: 0.4, 0.4 and 0.2 GPU-hours; round() gave 0 GPUs
    curves = build(
        [usage(1, 0, "a", 400), usage(1, 0, "b", 400), usage(1, 0, "c", 200)],
        [line(1, 0)],
    )
    assert curves["a"].gpu_count == pytest.approx(0.4)
    assert curves["c"].gpu_count == pytest.approx(0.2)


def test_half_gpu_hours_are_not_rounded_to_even():
    # 2.5 GPU-hours in the busiest hour (a node of 5 GPUs shared 1 : 1): round() gave 2
    curves = build([usage(1, 0, "a", 500), usage(1, 0, "b", 500), usage(1, 1, "a", 500)],
                   [line(1, 0, gpu_h="5"), line(1, 1, gpu_h="1")])  # fmt: skip
    assert curves["a"].gpu_count == pytest.approx(2.5)
    assert CurveKey(1, "rtx-4090", "a") == curves["a"].key


def test_an_hour_with_no_known_intensity_leaves_the_known_part_with_its_coverage_and_no_carbon_per_token():
    # two hours in one band: 1 kWh at 400 g known, 3 kWh with no intensity; 100 + 100 requests on 1 GPU-h each
    curves = build(
        [usage(1, 0, "a", 1000), usage(1, 1, "a", 1000)],
        [line(1, 0, facility_kwh="1"), line(1, 1, facility_kwh="3", co2e=None)],
    )
    (band,) = curves["a"].bands
    assert band.operational_co2e_g == Decimal(400)  # the known part, not None
    assert band.unknown_intensity_kwh == Decimal(3)
    assert band.operational_coverage == pytest.approx(0.25)  # 1 of 4 kWh
    # per output token: withheld, neither 400 g over all 2000 tokens nor scaled up by the coverage (an estimate)
    assert band.operational_gco2e_per_1m_output_tokens is band.gco2e_per_1m_output_tokens is None
    assert band.embodied_gco2e_per_1m_output_tokens == pytest.approx(20 / 2000 * 1e6)  # its GPU-hours all known
    assert band.carbon_per_token_gaps == ("intensity coverage incomplete: 3 of 4 facility kWh have no grid intensity",)
    # no hour known at all: unknown (None), coverage 0
    (dark,) = build([usage(1, 0, "a", 1000)], [line(1, 0, co2e=None)])["a"].bands
    assert (dark.operational_co2e_g, dark.operational_coverage, dark.gco2e_per_1m_output_tokens) == (None, 0.0, None)


def test_every_kwh_known_gives_carbon_per_output_token_and_no_gap():
    (band,) = build([usage(1, 0, "a", 1000), usage(1, 1, "a", 1000)], [line(1, 0), line(1, 1)])["a"].bands
    # 800 g + 20 g embodied over 2000 output tokens
    assert band.operational_gco2e_per_1m_output_tokens == pytest.approx(400_000)
    assert band.gco2e_per_1m_output_tokens == pytest.approx(410_000)
    assert band.carbon_per_token_gaps == ()


def test_gpu_hours_without_an_embodied_figure_withhold_the_carbon_per_output_token_with_embodied_in_it():
    # one of two GPU-hours of a model without an embodied figure, shared 1 : 1 by two LLM models
    curves = build(
        [usage(1, 0, "a", 500), usage(1, 0, "b", 500), usage(1, 1, "a", 1000)],
        [line(1, 0, embodied_unknown_gpu_h=Decimal(1)), line(1, 1)],
    )
    (band,) = curves["a"].bands
    assert band.embodied_unknown_gpu_h == Decimal("0.5")  # its share of the unknown GPU-hour
    assert band.gco2e_per_1m_output_tokens is band.embodied_gco2e_per_1m_output_tokens is None
    assert band.operational_gco2e_per_1m_output_tokens == pytest.approx(600 / 1500 * 1e6)  # its kWh all known
    assert band.carbon_per_token_gaps == (
        "embodied coverage incomplete: 0.5 GPU-hours are of models without an embodied figure",
    )


def test_unpriced_node_hours_are_counted_per_band_and_on_shared_hours_per_model():
    curves = build(
        [usage(1, 0, "a", 500), usage(1, 0, "b", 500), usage(1, 1, "a", 1000), usage(2, 1, "a", 1000)],
        [line(1, 0, unpriced=True), line(1, 1), line(2, 1, unpriced=True)],
    )
    assert sum(b.unpriced_node_hours for b in curves["a"].bands) == 2
    assert curves["a"].whole.unpriced_node_hours == 2
    assert curves["b"].whole.unpriced_node_hours == 1
