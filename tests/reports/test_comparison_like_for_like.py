"""Per LLM model: ratios like-for-like, and idle node-hours shown apart or shared, worked by hand.

conftest's ``two_models``: the "enterprise" fleet's H100 node serves llama-8b (300,000 output tokens
in H1) and qwen-14b (200,000); H2 served no output token (the idle row: cost 5.072, 2 GPU-hours).
Added here, the "consumer" fleet's RTX node (conftest's figures) serves llama-8b in H1-H3 and
mistral-7b in H1, which the enterprise fleet does not serve.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from accounting.node_hour_lines import ledger_node_hours_compute
from accounting.site_hours import site_hours_rebuild
from reports.metrics import BaselineBasis
from reports.selectors import fleet_comparison
from reports.selectors.load import comparison_load_bands
from reports.sharing import IdleTreatment, idle_shares, whole_parts
from telemetry.models import ServingEndpoint
from tests.helpers.reports import END, H1, START, endpoint_hour, rtx_node

URL = "/api/v1/reports/comparison/"
pytestmark = pytest.mark.django_db


@pytest.fixture
def consumer(two_models, org_a):
    node = rtx_node(org_a)
    ServingEndpoint.objects.filter(node=node).update(model_name="llama-8b")
    site_hours_rebuild()  # the endpoint renamed by hand after the ledger: its site-hours keyed by the name again
    mistral = ServingEndpoint.objects.create(
        node=node, url="http://127.0.0.1:8001/metrics", kind="vllm", model_name="mistral-7b"
    )
    mistral.gpus.set(node.gpus.all())
    endpoint_hour(mistral, H1, prompt_tokens=50_000, generation_tokens=100_000, requests=100)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H1])
    return node.fleet


def _rows(org_a, **asked):
    rows = fleet_comparison(organization_ids=[org_a.pk], start=START, end=END, **asked)
    return {(row.stats.fleet_name, row.stats.llm_model): row for row in rows}


def test_each_llm_model_is_compared_with_the_same_llm_model_on_the_baseline_fleet(consumer, two_models, org_a):
    baseline = two_models.fleet.pk

    rows = _rows(org_a, baseline_fleet_id=baseline, by_llm_model=True)

    llama, baseline_llama = rows[("consumer", "llama-8b")], rows[("enterprise", "llama-8b")]
    cost = "cost_per_1m_output_tokens"
    expected = float(llama.stats.cost_per_1m_output_tokens / baseline_llama.stats.cost_per_1m_output_tokens)
    assert llama.baseline_basis is BaselineBasis.SAME_LLM_MODEL
    assert llama.vs_baseline[cost] == pytest.approx(expected)
    assert llama.vs_baseline["it_j_per_output_token"] == pytest.approx(
        float(llama.stats.it_j_per_output_token / baseline_llama.stats.it_j_per_output_token)
    )
    assert rows[("enterprise", "qwen-14b")].vs_baseline[cost] == pytest.approx(1.0)  # itself
    assert rows[("enterprise", None)].baseline_basis is BaselineBasis.SAME_LLM_MODEL  # the idle row: idle rows
    # The baseline fleet serves no mistral-7b: no ratio, and the row says why.
    mistral = rows[("consumer", "mistral-7b")]
    assert mistral.baseline_basis is BaselineBasis.NO_BASELINE_ROW
    assert set(mistral.vs_baseline.values()) == {None}


def test_per_fleet_the_ratios_stay_fleet_over_baseline_fleet(consumer, two_models, org_a):
    rows = _rows(org_a, baseline_fleet_id=two_models.fleet.pk)

    fleet, baseline = rows[("consumer", None)], rows[("enterprise", None)]
    assert fleet.baseline_basis is BaselineBasis.FLEET
    assert fleet.vs_baseline["cost_per_1m_output_tokens"] == pytest.approx(
        float(fleet.stats.cost_per_1m_output_tokens / baseline.stats.cost_per_1m_output_tokens)
    )


def test_the_api_and_the_page_say_no_baseline_row(consumer, two_models, client_a):
    asked = {"start": START.isoformat(), "end": END.isoformat(), "by": "llm_model", "baseline": two_models.fleet.pk}

    results = client_a.get(URL, asked).json()["results"]
    html = client_a.get(
        f"/compare/?start=2026-10-31&end=2026-11-01&by=llm_model&baseline={two_models.fleet.pk}"
    ).content.decode()

    basis = {(row["fleet_name"], row["llm_model"]): row["baseline_basis"] for row in results}
    assert basis[("consumer", "mistral-7b")] == "no_baseline_row"
    assert basis[("consumer", "llama-8b")] == "same_llm_model"
    assert '<span class="no-baseline-row">consumer · mistral-7b: no baseline row.</span>' in html
    assert "figures compare each LLM model with the same LLM model on enterprise." in html
    per_fleet = client_a.get(URL, {**asked, "by": "fleet"}).json()["results"]
    assert {row["baseline_basis"] for row in per_fleet} == {"baseline_fleet"}


def test_idle_shared_goes_to_the_llm_models_by_their_output_tokens_and_still_adds_up(two_models, org_a):
    apart = _rows(org_a, by_llm_model=True)
    shared = _rows(org_a, by_llm_model=True, idle=IdleTreatment.SHARED)
    (whole,) = _rows(org_a).values()

    assert list(shared) == [("enterprise", "llama-8b"), ("enterprise", "qwen-14b")]  # no idle row left
    llama, qwen = (shared[("enterprise", m)].stats.sums.totals for m in ("llama-8b", "qwen-14b"))
    # 300,000 : 200,000 output tokens over the period: 0.6 and 0.4 of the idle row's 5.072 and 2 GPU-hours.
    assert round(llama.cost, 6) == Decimal("3.324") + Decimal("3.0432") == Decimal("6.3672")
    assert round(qwen.cost, 6) == Decimal("4.2448")
    assert [round(t.gpu_h, 6) for t in (llama, qwen)] == [Decimal("2.4"), Decimal("1.6")]
    assert [round(t.idle_gpu_h, 6) for t in (llama, qwen)] == [Decimal("1.2"), Decimal("0.8")]
    assert round(llama.cost + qwen.cost, 9) == round(whole.stats.sums.totals.cost, 9)
    assert [t.generation_tokens for t in (llama, qwen)] == [300_000, 200_000]  # tokens stay each model's own
    assert shared[("enterprise", "llama-8b")].stats.cost_per_1m_output_tokens == pytest.approx(
        Decimal("6.3672") / Decimal("0.3")
    )
    assert apart[("enterprise", None)].stats.sums.totals.cost == pytest.approx(Decimal("5.072"))


def test_the_idle_shares_are_output_token_shares_and_counts_split_in_whole_numbers():
    assert idle_shares({"a": 300, "b": 100, "c": 0}) == {"a": Decimal("0.75"), "b": Decimal("0.25")}
    assert idle_shares({"a": 0}) is None  # no model served an output token: the idle row stays apart
    assert whole_parts(10, {"a": Decimal(1) / 3, "b": Decimal(2) / 3}) == {"a": 3, "b": 7}
    assert sum(whole_parts(7, {"a": Decimal(1) / 3, "b": Decimal(1) / 3, "c": Decimal(1) / 3}).values()) == 7


def test_the_api_takes_idle_echoes_it_and_refuses_anything_else(two_models, client_a):
    asked = {"start": START.isoformat(), "end": END.isoformat(), "by": "llm_model"}

    shared = client_a.get(URL, {**asked, "idle": "shared"}).json()
    apart = client_a.get(URL, asked).json()
    refused = client_a.get(URL, {**asked, "idle": "spread"})

    assert (shared["idle_treatment"], apart["idle_treatment"]) == ("shared", "apart")
    assert [row["llm_model"] for row in shared["results"]] == ["llama-8b", "qwen-14b"]
    assert [row["cost"] for row in shared["results"]] == ["6.37", "4.24"]
    assert [row["llm_model"] for row in apart["results"]] == ["llama-8b", "qwen-14b", None]
    assert refused.status_code == 400
    assert refused.json() == {"idle": ['idle must be "apart" or "shared", not "spread"']}


def test_schema_documents_the_idle_treatment(client_a):
    schema = client_a.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    operation = schema["paths"]["/api/v1/reports/comparison/"]["get"]
    idle = next(p for p in operation["parameters"] if p["name"] == "idle")
    assert idle["schema"]["enum"] == ["apart", "shared"]
    assert "share idle" in idle["description"]
    output = schema["components"]["schemas"]["FleetComparison"]["properties"]
    assert {"idle_treatment", "complete_through", "includes_open_hours"} <= set(output)


def test_the_page_switches_idle_between_apart_and_shared(two_models, client_a):
    page = "/compare/?start=2026-10-31&end=2026-11-01&by=llm_model"

    apart = client_a.get(page).content.decode()
    shared = client_a.get(page + "&idle=shared").content.decode()
    ignored = client_a.get(page + "&idle=bogus")

    assert '<option value="shared" selected>' in shared
    assert '<option value="apart" selected>' in apart
    assert 'data-allocation="no_output_tokens"' in apart
    assert 'data-allocation="no_output_tokens"' not in shared
    assert re.search(r'<span id="idle-note">Idle shared: ', shared)
    assert re.search(r'href="/api/v1/reports/comparison/\?[^"]*idle=shared', shared)  # the export asks alike
    assert ignored.status_code == 200  # a hand-edited value shows the default


def test_at_like_load_each_llm_model_band_is_compared_with_the_same_model_on_the_baseline_fleet(
    consumer, two_models, org_a
):
    scope = {"organization_ids": [org_a.pk], "start": START, "end": END}
    baseline = two_models.fleet.pk
    rows = fleet_comparison(**scope, baseline_fleet_id=baseline, by_llm_model=True)

    bands = comparison_load_bands(rows, **scope, by="llm_model", baseline_fleet_id=baseline)

    keyed = {(row.stats.fleet_name, row.stats.llm_model): found for row, found in zip(rows, bands, strict=True)}
    (enterprise_llama,) = keyed[("enterprise", "llama-8b")]
    consumer_llama = keyed[("consumer", "llama-8b")]
    assert consumer_llama and {band.band.low_rps_per_gpu for band in consumer_llama} == {
        enterprise_llama.band.low_rps_per_gpu
    }
    assert consumer_llama[0].baseline == enterprise_llama.band  # llama-8b's band, not the fleet's all-model band
    assert all(band.baseline is None for band in keyed[("consumer", "mistral-7b")])
