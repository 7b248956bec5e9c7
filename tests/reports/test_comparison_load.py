"""The comparison's load dimension: each row's figures per requests/s-per-GPU band, worked by hand.

On ``two_models`` (test_comparison_llm): in H1 one node's 2 H100s serve llama-8b (1,000 requests,
300,000 output tokens) and qwen-14b (400 requests, 200,000 output tokens); the node-hour's
2 GPU-hours, cost 5.54 and IT 1.5 kWh are shared 0.6 / 0.4 by output tokens. llama's load:
1000 / (1.2 GPU-h x 3600 s) = 0.2315 requests/s per GPU, qwen's 400 / 2880 = 0.1389: both in
the lowest band [0, 0.25). H2 served nothing: no load, no band.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest

from tests.helpers.reports import END, START, no_intensity_in_h3

URL = "/api/v1/reports/comparison/"
USAGE = "/api/v1/reports/usage/"
pytestmark = pytest.mark.django_db


def compare(client: Any, **params: Any) -> Any:
    response = client.get(URL, {"start": START.isoformat(), "end": END.isoformat(), **params})
    assert response.status_code == 200, response.content
    return response


def test_each_llm_model_row_by_load_band(two_models, client_a):
    body = compare(client_a, by="llm_model", by_load="true", baseline=two_models.fleet_id).json()
    llama, qwen, idle = body["results"]

    (band,) = llama["by_load"]
    assert (band["band_low_rps_per_gpu"], band["band_high_rps_per_gpu"], band["hours"]) == (0.0, 0.25, 1)
    assert (band["requests"], band["generation_tokens"], band["gpu_h"]) == (1000, 300_000, 1.2)
    assert band["rps_per_gpu"] == 0.2315  # 1000 / 4320 GPU-seconds
    assert band["output_tokens_per_s_per_gpu"] == 69.44  # 300,000 / 4320
    assert band["cost_per_1m_output_tokens"] == "11.08"  # 3.324 / 0.3M
    assert band["it_j_per_output_token"] == 10.8  # 0.9 kWh x 3.6 MJ / 300,000
    # TTFT [500, 300, 150, 45, 5] over (0.1, 0.25, 0.5, 1 s]: rank 990 is 40/45 into (0.5, 1] → 944.4 ms.
    assert (band["ttft_basis"], band["ttft_p99_ms"]) == ("measured", 944.444)
    assert (band["ttft_p99_bucket_low_ms"], band["ttft_p99_bucket_high_ms"]) == (500.0, 1000.0)
    # The baseline fleet's band of the same range holds both models: 5.54 / 0.5M output tokens = 11.08.
    assert band["cost_per_1m_output_tokens_vs_baseline"] == 1.0
    assert band["it_j_per_output_token_vs_baseline"] == 1.0  # 1.5 kWh / 0.5M: 10.8 J too
    assert band["output_tokens_per_s_per_gpu_vs_baseline"] == 1.0  # 500,000 / 7200 = 69.44 too
    assert band["ttft_p99_vs_baseline"] == 1.0  # the fleet's measured TTFT is llama's (qwen's is TGI's bound)

    (queued,) = qwen["by_load"]
    assert (queued["requests"], queued["rps_per_gpu"], queued["ttft_basis"]) == (400, 0.1389, "lower_bound")
    assert queued["cost_per_1m_output_tokens"] == "11.08"  # 2.216 / 0.2M
    assert idle["by_load"] == []  # the hours without output tokens have no load


def test_the_fleet_row_merges_its_models_bands(two_models, client_a):
    (row,) = compare(client_a, by_load="true").json()["results"]
    (band,) = row["by_load"]
    # llama + qwen: 1,400 requests over 2 GPU-hours = 0.1944 requests/s per GPU; one hour per model.
    assert (band["hours"], band["requests"], band["rps_per_gpu"], band["gpu_h"]) == (2, 1400, 0.1944, 2.0)
    assert band["cost_per_1m_output_tokens_vs_baseline"] is None  # no baseline named


def test_without_by_load_rows_carry_no_bands(two_models, client_a):
    assert [row["by_load"] for row in compare(client_a, by="llm_model").json()["results"]] == [None, None, None]


def test_csv_gives_a_line_per_row_and_band(two_models, client_a):
    response = compare(client_a, by="llm_model", by_load="true", format="csv")
    lines = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(line["llm_model"], line["load_band_low_rps_per_gpu"], line["load_requests"]) for line in lines] == [
        ("llama-8b", "0.0", "1000"),
        ("qwen-14b", "0.0", "400"),
        ("", "", ""),  # the idle row, once, with no band
    ]
    assert "by_load" not in lines[0]


def test_schema_documents_the_load_bands(client_a):
    schema = client_a.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    parameters = {p["name"] for p in schema["paths"][URL]["get"]["parameters"]}
    assert "by_load" in parameters
    band = schema["components"]["schemas"]["LoadBand"]["properties"]
    assert {"band_low_rps_per_gpu", "ttft_p99_bucket_high_ms", "cost_per_1m_output_tokens_vs_baseline"} <= set(band)


def test_the_page_shows_each_row_by_load_band(two_models, client_a):
    html = client_a.get("/compare/?start=2026-10-31&end=2026-11-01&by=llm_model&by_load=true").content.decode()
    assert 'id="comparison-by-load"' in html
    bands = re.findall(r'<tr data-fleet="enterprise" data-llm-model="([^"]*)" data-band-low="([^"]*)">', html)
    assert bands == [("llama-8b", "0.0"), ("qwen-14b", "0.0")]  # the idle hours have no band
    assert "by_load=true" in html  # the exports match the page
    assert 'id="comparison-by-load"' not in client_a.get("/compare/?start=2026-10-31&end=2026-11-01").content.decode()


def test_usage_rows_by_llm_model_carry_the_trace_of_the_node_rows(two_models, client_a):
    period = {"start": START.isoformat(), "end": END.isoformat(), "granularity": "hour"}
    by_model = client_a.get(USAGE, {**period, "group_by": "llm_model"}).json()["results"]
    by_node = client_a.get(USAGE, {**period, "group_by": "node"}).json()["results"]
    # One node, one GPU model, one intensity source per hour: each model's share of H1 is traced as H1 is.
    node_h1, node_h2 = by_node
    llama, qwen, idle = by_model
    for row in (llama, qwen):
        assert row["location_sources"] == node_h1["location_sources"] is not None
        assert row["location_sources"] == "electricitymaps=1.000"  # all of the model's facility kWh: never above 1
        assert row["embodied_sources"] == node_h1["embodied_sources"] is not None
        assert row["energy_counter_share"] == node_h1["energy_counter_share"] == 1.0
    assert (idle["location_sources"], idle["embodied_sources"]) == (
        node_h2["location_sources"], node_h2["embodied_sources"],
    )  # fmt: skip


def test_comparison_rows_by_llm_model_trace_their_own_share(two_models, client_a):
    llama, qwen, idle = compare(client_a, by="llm_model").json()["results"]
    # Each model's facility kWh (1.08 and 0.72 of H1's 1.8) all had one source: a share of 1, never the
    # fleet's 2.04 kWh over the model's (which read 1.889 for llama).
    assert [row["location_sources"] for row in (llama, qwen, idle)] == ["electricitymaps=1.000"] * 3
    (fleet,) = compare(client_a).json()["results"]
    assert llama["embodied_sources"] == fleet["embodied_sources"] is not None


def test_comparison_row_and_its_only_load_band_give_one_carbon_per_output_token(fleets, client_a):
    # given the H100 site with no grid intensity in H3 (nor an annual average): 1.8 of its 5.4 kWh unknown
    no_intensity_in_h3(fleets.h100)

    body = compare(client_a, fleet=fleets.enterprise.pk, by_load="true").json()

    (row,) = body["results"]
    (band,) = row["by_load"]
    assert band["generation_tokens"] == row["generation_tokens"] == 1_500_000
    # withheld by both, never the known part over every token (480) nor scaled up by coverage (720)
    assert band["location_gco2e_per_1m_output_tokens"] == row["location_gco2e_per_1m_output_tokens"] is None
    assert band["gco2e_per_1m_output_tokens"] == row["gco2e_per_1m_output_tokens"] is None
    assert row["gco2e_per_1m_tokens"] is None
    # and each says why beside it
    reason = "intensity coverage incomplete: 1.8 of 5.4 facility kWh have no grid intensity"
    assert row["carbon_per_token_note"] == band["carbon_per_token_note"] == reason
    assert row["location_unknown_facility_kwh"] == pytest.approx(1.8)
    assert band["location_intensity_coverage"] == pytest.approx(2 / 3, abs=1e-6)
    # the embodied part has every GPU-hour's figure: it is stated, and the same in both
    assert band["embodied_gco2e_per_1m_output_tokens"] == row["embodied_gco2e_per_1m_output_tokens"] is not None


def test_the_comparison_csv_leaves_a_withheld_carbon_per_token_empty(fleets, client_a):
    no_intensity_in_h3(fleets.h100)

    response = compare(client_a, fleet=fleets.enterprise.pk, format="csv")

    (row,) = csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    assert row["gco2e_per_1m_output_tokens"] == row["location_gco2e_per_1m_output_tokens"] == ""
    assert row["carbon_per_token_note"].startswith("intensity coverage incomplete")


def test_the_page_shows_a_withheld_carbon_per_token_as_withheld_with_its_reason(fleets, client_a):
    no_intensity_in_h3(fleets.h100)

    html = client_a.get("/compare/?start=2026-10-31&end=2026-11-01&by_load=true").content.decode()

    enterprise = _cell(html, "comparison", "enterprise", "g-out")
    assert 'data-value=""' in enterprise and "—" in enterprise
    assert "not stated: intensity coverage incomplete: 1.8 of 5.4 facility kWh have no grid intensity" in enterprise
    band = _cell(html, "comparison-by-load", "enterprise", "g-out")
    assert "—" in band and "not stated: intensity coverage incomplete" in band
    assert "not stated" not in _cell(html, "comparison", "consumer", "g-out")  # its kWh all have an intensity


def _cell(html: str, table: str, fleet: str, css: str) -> str:
    """The first ``<td class="css">`` of the fleet's row in the table."""
    body = html[html.index(f'id="{table}"') :]
    row = body[body.index(f'data-fleet="{fleet}"') :]
    start = row.index(f'<td class="{css}"')
    return row[start : row.index("</td>", start)]
