"""One sharing rule for a node-hour: the comparison, the usage report and the load curves give one answer.

One node of conftest's "enterprise" fleet (2 x H100, the real ledger), two LLM models on it:

- H1: llama-8b 300,000 output tokens (1,000 requests), qwen-14b 200,000 (400 requests):
  the line is shared 0.6 / 0.4.
- H2: llama-8b served 120 requests but no output token (every one failed before its
  first token): the line is no model's, the idle row's, and in no model's load band.
- H3: llama-8b alone, 100,000 output tokens (500 requests): its line whole.
"""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

from accounting.node_hour_lines import ledger_node_hours_compute
from common.periods import Granularity
from reports.bands import CurveBand, bands_merge
from reports.curves import load_curves
from reports.metrics import ComparisonStats, LedgerSums
from reports.selectors import GroupBy, UsageSpec, fleet_comparison, report_rows
from reports.sharing import output_token_share
from scenarios.replay import Replay
from scenarios.services import _usage_add
from tests.helpers.reports import END, H1, H2, H3, START, endpoint, endpoint_hour, gpu_hours, h100_node, live_grid

pytestmark = pytest.mark.django_db
PLACES = 9
FAST = ([0.1, 1.0], [90, 10, 0])


@pytest.fixture
def requests_without_tokens(org_a: Any) -> Any:
    live_grid(hours=(H1, H2, H3))
    node = h100_node(org_a)
    for hour in (H1, H2, H3):
        gpu_hours(node, hour, (1_800_000.0, 3_600_000.0), (80.0, 60.0))
    llama, qwen = endpoint(node, "llama-8b", "vllm"), endpoint(node, "qwen-14b", "vllm")
    endpoint_hour(llama, H1, prompt_tokens=600_000, generation_tokens=300_000, requests=1000, ttft=FAST)
    endpoint_hour(qwen, H1, prompt_tokens=100_000, generation_tokens=200_000, requests=400, ttft=FAST)
    endpoint_hour(llama, H2, prompt_tokens=50_000, generation_tokens=0, requests=120, ttft=FAST)
    endpoint_hour(llama, H3, prompt_tokens=200_000, generation_tokens=100_000, requests=500, ttft=FAST)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H1, H2, H3])
    return node


def ledger_figures(sums: LedgerSums) -> tuple[Decimal, ...]:
    totals = sums.totals
    return tuple(
        round(Decimal(value), PLACES)
        for value in (totals.cost, totals.gpu_h, totals.it_kwh, totals.facility_kwh, totals.generation_tokens)
    )


def band_figures(band: CurveBand) -> tuple[Decimal, ...]:
    values = (band.cost, band.gpu_h, band.it_kwh, band.facility_kwh, band.generation_tokens)
    return tuple(round(Decimal(value), PLACES) for value in values)


def comparison(org: Any, **by: bool) -> list[ComparisonStats]:
    return [row.stats for row in fleet_comparison(organization_ids=[org.pk], start=START, end=END, **by)]


def test_a_models_load_bands_add_up_to_its_comparison_row(requests_without_tokens, org_a):
    rows = {row.llm_model: row for row in comparison(org_a, by_llm_model=True)}
    curves = {curve.key.llm_model: curve for curve in load_curves(organization_ids=[org_a.pk], start=START, end=END)}

    assert set(curves) == {"llama-8b", "qwen-14b"}
    for model, curve in curves.items():
        assert band_figures(bands_merge(curve.bands)) == ledger_figures(rows[model].sums), model
    # H2 (requests, no output token) is in no band: llama's hours are H1 and H3 only.
    assert curves["llama-8b"].hours == 2
    assert curves["llama-8b"].requests == 1500


def test_llm_model_rows_with_the_idle_row_add_up_to_the_fleet(requests_without_tokens, org_a):
    (fleet,) = comparison(org_a)
    per_model = comparison(org_a, by_llm_model=True)
    idle = next(row for row in per_model if row.llm_model is None)

    added = [sum(figures) for figures in zip(*(ledger_figures(row.sums) for row in per_model), strict=True)]
    assert added == list(ledger_figures(fleet.sums))
    # The idle row is H2's line, whole: a third of the fleet's GPU-hours and cost.
    assert round(idle.sums.totals.gpu_h, PLACES) == Decimal(2)
    assert round(idle.sums.totals.cost * 3, 6) == round(fleet.sums.totals.cost, 6)


def test_the_usage_report_by_llm_model_gives_the_comparisons_rows(requests_without_tokens, org_a):
    spec = UsageSpec(
        organization_ids=[org_a.pk], start=START, end=END, granularity=Granularity.TOTAL, group_by=GroupBy.LLM_MODEL
    )
    usage = report_rows(spec=spec)
    rows = {row.llm_model: ledger_figures(row.sums) for row in comparison(org_a, by_llm_model=True)}

    assert {row.group_key: ledger_figures(row.sums) for row in usage} == rows


def test_the_rule_shares_by_output_tokens_and_leaves_a_line_without_any_to_no_model():
    assert output_token_share(300_000, 500_000) == Decimal("0.6")
    assert output_token_share(0, 500_000) == 0  # no output token: no share, whatever its requests
    assert output_token_share(0, 0) is None  # the idle row's, never shared by requests


def test_the_scenarios_load_a_model_on_its_share_of_the_gpu_hours_as_the_load_curves_do(requests_without_tokens, org_a):
    # given the scenarios' reading of the same endpoint-hours (llama: 0.6 of H1's 2 GPU-hours, H3's whole, H2's none)
    replay = Replay()
    _usage_add(replay, SimpleNamespace(organization=org_a, period_start=START, period_end=END))
    curves = {curve.key.llm_model: curve for curve in load_curves(organization_ids=[org_a.pk], start=START, end=END)}

    for model, curve in curves.items():
        bands = replay.usage[(requests_without_tokens.fleet_id, model)].bands()
        assert [(b.low_rps_per_gpu, b.max_rps_per_gpu) for b in bands] == [
            (b.low_rps_per_gpu, b.max_rps_per_gpu) for b in curve.bands
        ], model
    assert curves["llama-8b"].bands[-1].max_rps_per_gpu == pytest.approx(1000 / (1.2 * 3600))
