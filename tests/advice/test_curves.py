"""Load curves read from stored hourly usage and ledger lines (the dashboards' two-fleet data)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from reports.curves import load_curve_rows, load_curves
from tests.helpers.dashboard_data import period, second_model_serve, two_fleets


@pytest.fixture
def fleets(org_a):
    return two_fleets(org_a)


def test_one_curve_per_fleet_gpu_and_llm_model_with_its_band(org_a, fleets):
    start, end = period()
    curves = load_curves(organization_ids=[org_a.pk], start=start, end=end)
    assert [(c.fleet_name, c.key.gpu_model, c.gpu_class, c.gpu_count, c.hours) for c in curves] == [
        ("consumer", "rtx-4090", "consumer", 4, 3),
        ("enterprise", "h100-sxm", "enterprise", 8, 3),
    ]
    enterprise = curves[1]
    (band,) = enterprise.bands
    # 1000 requests an hour on 8 GPUs: 1000 / 28,800 = 0.03472 req/s per GPU, in the first band (0-0.25)
    assert (band.low_rps_per_gpu, band.high_rps_per_gpu) == (0.0, 0.25)
    assert band.rps_per_gpu == pytest.approx(1000 / 28_800)
    # output tokens: 3/4 of 8 x 6000 x 3600 an hour -> 4500 per s per GPU
    assert band.output_tokens_per_s_per_gpu == pytest.approx(4500)
    # counts [500, 480, 20, ...] over 10, 50, 100 ms: rank 990 is the 10th of 20 in (50, 100]: 75 ms
    assert band.ttft_quantile_bucket_s(0.99) == (0.05, 0.1)
    assert band.ttft_quantile_s(0.99) == pytest.approx(0.075)


def test_rows_give_quantiles_with_their_buckets_and_per_token_figures(org_a, fleets):
    start, end = period()
    rows = load_curve_rows(load_curves(organization_ids=[org_a.pk], start=start, end=end))
    consumer = rows[0]
    # consumer counts [0, 100, 300, 560, 30, 10] over bounds 10, 50, 100, 250, 500 ms: rank 990 of 1000 lies
    # in the (250, 500] bucket (960 < 990 <= 990): 250 + 250 x 30/30 = 500 ms
    assert consumer["ttft_p99_ms"] == Decimal("500.0")
    assert (consumer["ttft_p99_bucket_low_ms"], consumer["ttft_p99_bucket_high_ms"]) == (Decimal(250), Decimal(500))
    assert consumer["ttft_basis"] == "measured"
    assert consumer["hours"] == 3
    assert consumer["cost_per_1m_output_tokens"] is not None


def test_a_node_serving_two_models_splits_its_hour_by_output_tokens(org_a, fleets):
    enterprise = fleets[0]
    second_model_serve(enterprise)
    start, end = period()
    curves = {c.key.llm_model: c for c in load_curves(organization_ids=[org_a.pk], start=start, end=end,
                                                      fleet_ids=[enterprise.pk])}  # fmt: skip
    # tokens 3 : 1, so the node's 8 GPU-hours an hour are 6 for llama-8b and 2 for qwen-14b
    assert curves["llama-8b"].bands[0].gpu_h == pytest.approx(Decimal(18))
    assert curves["qwen-14b"].bands[0].gpu_h == pytest.approx(Decimal(6))
    assert (curves["llama-8b"].gpu_count, curves["qwen-14b"].gpu_count) == (6, 2)
    # qwen: 500 requests / (2 GPU-h x 3600) = 0.0694 req/s per GPU
    assert curves["qwen-14b"].bands[0].rps_per_gpu == pytest.approx(500 / 7200)
