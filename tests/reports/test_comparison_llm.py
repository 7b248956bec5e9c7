"""The comparison per LLM model: two models on one H100 node, worked by hand.

One node of conftest's "enterprise" fleet (2 x H100 rented at 2.50 per GPU-hour, PUE 1.20,
tariff 0.30/kWh, grid 200 g/kWh), two LLM models on it, both served from both GPUs:

- H1: GPUs 1.8 + 3.6 MJ = IT 1.5 kWh, facility 1.8 kWh: cost 5.00 + 0.54 = 5.54, location
  360 g. "llama-8b" (vLLM) makes 300,000 output tokens, "qwen-14b" (TGI) 200,000: shares
  0.6 and 0.4, so llama takes cost 3.324, IT 0.9 kWh, 1.2 GPU-hours; qwen 2.216, 0.6 kWh, 0.8.
- H2: no output token at all, GPUs at 1 %: IT 0.2 kWh, facility 0.24 kWh, cost 5.072, both
  GPUs idle. It is no model's: it stays with the fleet x GPU model as the idle row.
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from accounting.models import LedgerPending, LedgerSettings
from governance.models import AuditEntry, LockedPeriod
from reports.display import ITL_NOT_EXPOSED
from reports.latency import ShareWithin, TimeSum, share_within
from reports.selectors import fleet_comparison
from reports.serving import ServingSums
from telemetry.histogram import Histogram
from tests.helpers.reports import (
    END,
    H100_EMBODIED_G_PER_H,
    QWEN_QUEUE,
    START,
)

URL = "/api/v1/reports/comparison/"
pytestmark = pytest.mark.django_db


def test_two_llm_models_share_a_node_hour_by_output_tokens(two_models, org_a):
    rows = [row.stats for row in fleet_comparison(organization_ids=[org_a.pk], start=START, end=END, by_llm_model=True)]
    (whole,) = [row.stats for row in fleet_comparison(organization_ids=[org_a.pk], start=START, end=END)]

    assert [(s.fleet_name, s.gpu_model, s.llm_model, s.allocation.value) for s in rows] == [
        ("enterprise", "h100-sxm", "llama-8b", "output_token_share"),
        ("enterprise", "h100-sxm", "qwen-14b", "output_token_share"),
        ("enterprise", "h100-sxm", None, "no_output_tokens"),
    ]
    llama, qwen, idle = (s.sums.totals for s in rows)
    assert [round(t.cost, 6) for t in (llama, qwen, idle)] == [Decimal("3.324"), Decimal("2.216"), Decimal("5.072")]
    assert [round(t.it_kwh, 6) for t in (llama, qwen, idle)] == [Decimal("0.9"), Decimal("0.6"), Decimal("0.2")]
    assert [round(t.gpu_h, 6) for t in (llama, qwen, idle)] == [Decimal("1.2"), Decimal("0.8"), Decimal("2")]
    assert [round(t.idle_gpu_h, 6) for t in (llama, qwen, idle)] == [0, 0, Decimal("2")]
    assert [(t.prompt_tokens, t.generation_tokens) for t in (llama, qwen, idle)] == [
        (600_000, 300_000), (100_000, 200_000), (0, 0),
    ]  # fmt: skip
    # The rows add up to the fleet: nothing lost, nothing counted twice.
    assert round(llama.cost + qwen.cost + idle.cost, 9) == round(whole.sums.totals.cost, 9) == Decimal("10.612")
    assert round(llama.location_co2e_g + qwen.location_co2e_g + idle.location_co2e_g, 6) == Decimal("408")


def test_llm_model_rows_by_hand(two_models, client_a):
    body = client_a.get(URL, {"start": START.isoformat(), "end": END.isoformat(), "by": "llm_model"}).json()

    assert body["by"] == "llm_model"
    llama, qwen, idle = body["results"]
    # Per output token: both models pay the same hour's cost per output token (11.08 = 3.324 / 0.3M).
    assert (llama["cost"], llama["cost_per_1m_output_tokens"], qwen["cost"], qwen["cost_per_1m_output_tokens"]) == (
        "3.32", "11.08", "2.22", "11.08",
    )  # fmt: skip
    assert (llama["it_j_per_output_token"], llama["it_j_per_1m_output_tokens"]) == (10.8, 10_800_000.0)
    assert llama["location_gco2e_per_1m_output_tokens"] == 720.0  # 216 g / 0.3M
    embodied = H100_EMBODIED_G_PER_H * Decimal("0.6") / Decimal("0.3")
    assert llama["embodied_gco2e_per_1m_output_tokens"] == pytest.approx(float(embodied), rel=5e-4)
    # While serving: H1 only (3,600 s), both GPUs: 7,200 GPU-seconds.
    assert (llama["requests"], llama["requests_per_s"], llama["requests_per_gpu_s"]) == (1000, 0.2778, 0.1389)
    assert (llama["generation_tokens_per_s"], llama["generation_tokens_per_gpu_s"]) == (83.33, 41.67)
    # TTFT [500, 300, 150, 45, 5] on (100, 250, 500, 1000 ms): mean 250 s / 1000 requests;
    # P50 rank 500 ends (0, 100]; P90 rank 900 is 100/150 into (250, 500]; P99 rank 990 is 40/45 into (500, 1000].
    assert (llama["ttft_basis"], llama["ttft_mean_ms"], llama["ttft_p50_ms"]) == ("measured", 250.0, 100.0)
    assert (llama["ttft_p90_ms"], llama["ttft_p90_bucket_low_ms"], llama["ttft_p90_bucket_high_ms"]) == (
        416.667, 250.0, 500.0,
    )  # fmt: skip
    assert (llama["ttft_p99_ms"], llama["ttft_p99_bucket_low_ms"], llama["ttft_p99_bucket_high_ms"]) == (
        944.444, 500.0, 1000.0,
    )  # fmt: skip
    # Goodput at the organization's 300 ms: 800 surely within, 950 possibly; 800 + 150 x 50/250 = 830.
    assert [llama[k] for k in ("goodput_ttft_target_ms", "goodput_share", "goodput_share_certain")] == [
        300.0,
        0.83,
        0.8,
    ]
    assert [llama[k] for k in ("goodput_share_possible", "goodput_bucket_low_ms", "goodput_bucket_high_ms")] == [
        0.95, 250.0, 500.0,
    ]  # fmt: skip
    # Inter-token latency: 6,000 s / 300,000 = 20 ms; P50 rank 150,000 is 1/3 into (10, 25];
    # P99 rank 297,000 is 7/9 into (50, 100].
    assert (llama["itl_tokens"], llama["itl_note"], llama["itl_mean_ms"], llama["itl_p50_ms"]) == (
        300_000,
        None,
        20.0,
        15.0,
    )
    assert (llama["itl_p99_ms"], llama["itl_p99_bucket_low_ms"], llama["itl_p99_bucket_high_ms"]) == (
        88.889,
        50.0,
        100.0,
    )
    # TGI: its queue time is a lower bound of TTFT, and it has no inter-token latency histogram.
    assert (qwen["ttft_basis"], qwen["ttft_mean_ms"], qwen["goodput_share"]) == ("lower_bound", 100.0, 0.8625)
    assert [qwen[k] for k in ("itl_tokens", "itl_mean_ms", "itl_p50_ms", "itl_p99_ms")] == [None] * 4
    assert qwen["itl_note"] == ITL_NOT_EXPOSED
    # The idle hour: no model's, its cost and idle GPU-hours beside the models so the rows add up.
    assert (idle["llm_model"], idle["ledger_allocation"], idle["cost"], idle["idle_gpu_h"]) == (
        None, "no_output_tokens", "5.07", 2.0,
    )  # fmt: skip
    assert (idle["cost_per_1m_output_tokens"], idle["requests_per_s"], idle["ttft_p50_ms"]) == (None, None, None)


def test_llm_model_rows_as_csv(two_models, client_a):
    response = client_a.get(
        URL, {"start": START.isoformat(), "end": END.isoformat(), "by": "llm_model"}, HTTP_ACCEPT="text/csv"
    )

    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert response.status_code == 200
    assert [(r["llm_model"], r["ledger_allocation"], r["cost"], r["cost_per_1m_output_tokens"]) for r in table] == [
        ("llama-8b", "output_token_share", "3.32", "11.08"),
        ("qwen-14b", "output_token_share", "2.22", "11.08"),
        ("", "no_output_tokens", "5.07", ""),
    ]
    assert (table[0]["goodput_share_certain"], table[1]["itl_note"]) == ("0.8", ITL_NOT_EXPOSED)


def test_the_fleet_row_is_unchanged_by_the_llm_split(two_models, client_a):
    (row,) = client_a.get(URL, {"start": START.isoformat(), "end": END.isoformat()}).json()["results"]

    assert (row["llm_model"], row["ledger_allocation"], row["cost"], row["requests"]) == (None, "whole", "10.61", 1400)
    assert row["ttft_basis"] == "measured"  # TGI's lower bound is never merged into measured TTFT
    assert row["ttft_lower_bound_requests_left_out"] == 400


def test_schema_documents_the_llm_model_grouping(client_a):
    schema = client_a.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    operation = schema["paths"]["/api/v1/reports/comparison/"]["get"]
    by = next(p for p in operation["parameters"] if p["name"] == "by")
    assert by["schema"]["enum"] == ["fleet", "gpu_model", "llm_model"]
    assert "allocated by output-token share" in operation["description"]


HISTOGRAM = Histogram((0.1, 0.25, 0.5, 1.0), (500, 300, 150, 45, 5))


def test_goodput_inside_a_bucket_is_interpolated_between_its_exact_bounds():
    assert share_within(HISTOGRAM, 0.3) == pytest.approx(ShareWithin(0.8, 0.95, 0.83, 0.25, 0.5))


def test_goodput_on_a_bucket_bound_is_exact():
    assert share_within(HISTOGRAM, 0.25) == ShareWithin(0.8, 0.8, 0.8, None, None)


def test_goodput_above_the_last_bound_cannot_be_interpolated():
    assert share_within(HISTOGRAM, 2.0) == ShareWithin(0.995, 1.0, 0.995, 1.0, None)
    assert share_within(Histogram((0.1,), (0, 0)), 0.3) is None


def test_the_goodput_target_must_be_positive(org_a):
    with pytest.raises(ValidationError):
        LedgerSettings(organization=org_a, goodput_ttft_target_ms=0).full_clean()
    assert LedgerSettings(organization=org_a).goodput_ttft_target_ms == 500


USAGE = "/api/v1/reports/usage/"


def test_the_hourly_usage_report_groups_by_llm_model(two_models, client_a):
    body = client_a.get(
        USAGE, {"start": START.isoformat(), "end": END.isoformat(), "granularity": "hour", "group_by": "llm_model"}
    ).json()

    assert body["count"] == 3
    assert [
        (r["period_start"][11:16], r["group_key"], r["cost"], r["generation_tokens"], r["gpu_h"], r["idle_gpu_h"])
        for r in body["results"]
    ] == [
        ("23:00", "llama-8b", "3.32", 300_000, 1.2, 0.0),
        ("23:00", "qwen-14b", "2.22", 200_000, 0.8, 0.0),
        ("00:00", None, "5.07", 0, 2.0, 2.0),
    ]
    assert body["results"][2]["group_label"] == "no output tokens (idle, attributed to no LLM model)"
    assert body["results"][0]["it_kwh"] == 0.9


def test_usage_by_llm_model_pages_and_streams_as_csv(two_models, client_a):
    period = {"start": START.isoformat(), "end": END.isoformat(), "granularity": "total", "group_by": "llm_model"}

    page = client_a.get(USAGE, {**period, "limit": 1, "offset": 1}).json()
    response = client_a.get(USAGE, period, HTTP_ACCEPT="text/csv")

    assert (page["count"], [r["group_key"] for r in page["results"]]) == (3, ["qwen-14b"])
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["group_key"], r["cost"], r["cost_per_1m_output_tokens"]) for r in table] == [
        ("llama-8b", "3.32", "11.08"), ("qwen-14b", "2.22", "11.08"), ("", "5.07", ""),
    ]  # fmt: skip


def test_mean_and_quantiles_of_ttft_and_no_itl_without_a_histogram():
    served = ServingSums(ttft=HISTOGRAM, ttft_sum=TimeSum(250.0, 1000))

    # Mean 250 s / 1000; P50 rank 500 ends (0, 100]; P90 rank 900 is 100/150 into (250, 500].
    assert served.ttft_mean_s == 0.25
    assert (served.ttft_quantile_s(0.5), served.ttft_quantile_bucket_s(0.5)) == (0.1, (0.0, 0.1))
    assert served.ttft_quantile_s(0.9) == pytest.approx(0.25 + 0.25 * 100 / 150)
    assert served.ttft_quantile_bucket_s(0.99) == (0.5, 1.0)
    assert (served.itl_shown, served.itl_quantile_s(0.5), served.itl_quantile_bucket_s(0.99)) == (None, None, None)


def test_changing_only_the_goodput_target_in_the_admin_is_audited_and_reopens_no_line(
    two_models, org_a, user_a, client
):
    # given: a closed period holding both node-hours (the ledger's own settings may not change in it)
    LockedPeriod.objects.create(organization=org_a, start=START, end=END, locked_at=END)
    client.force_login(user_a)
    settings = LedgerSettings.objects.get(organization=org_a)
    change = f"/admin/accounting/ledgersettings/{settings.pk}/change/"
    form = {"organization": org_a.pk, "amortization": "time", "idle_util_threshold_pct": "5", "_save": "Save"}

    response = client.post(change, {**form, "goodput_ttft_target_ms": 200})

    assert response.status_code == 302
    assert LedgerSettings.objects.get(pk=settings.pk).goodput_ttft_target_ms == 200
    assert LedgerPending.objects.count() == 0  # the reports read it; no ledger line weighs on it
    entry = AuditEntry.objects.get(subject="ledger_settings")
    assert (entry.before["goodput_ttft_target_ms"], entry.after["goodput_ttft_target_ms"]) == (300, 200)
    client.post(change, {**form, "goodput_ttft_target_ms": 0})
    assert LedgerSettings.objects.get(pk=settings.pk).goodput_ttft_target_ms == 200  # refused: must be positive
    assert client.post(change, {**form, "goodput_ttft_target_ms": ""}).status_code == 302  # left empty: kept
    assert LedgerSettings.objects.get(pk=settings.pk).goodput_ttft_target_ms == 200
    client.post(change, {**form, "idle_util_threshold_pct": "6", "goodput_ttft_target_ms": 200})
    assert LedgerSettings.objects.get(pk=settings.pk).idle_util_threshold_pct == 5  # the ledger's: locked


def test_the_page_shows_each_llm_model_and_the_idle_hours_apart(two_models, client_a):
    html = client_a.get("/compare/?start=2026-10-31&end=2026-11-01&by=llm_model&columns=all").content.decode()

    rows = re.findall(r'<tr data-fleet="enterprise" data-llm-model="([^"]*)" data-allocation="([^"]*)">', html)
    assert rows == [("llama-8b", "output_token_share"), ("qwen-14b", "output_token_share"), ("", "no_output_tokens")]
    assert "no output tokens (idle, attributed to no model)" in html
    assert "USD 5.07" in html  # the idle hours' cost, beside the models' 3.32 and 2.22
    assert "≤ 86.2 %" in html  # TGI's goodput from a lower bound of TTFT is an upper bound


def test_goodput_on_tgi_queue_time_proves_no_request_met_the_target():
    # TGI only: queue time (a lower bound of TTFT) 300 within 0.1 s, 90 in (0.1, 0.5], 10 above; target 0.3 s.
    # A request queued 0.05 s may still take longer than 0.3 s to its first token: nothing is surely within
    # (certain 0); at most those queued within 0.3 s are (possible: 390 / 400 = 0.975)
    serving = ServingSums(ttft_lower_bound=Histogram(*map(tuple, QWEN_QUEUE)))
    within = serving.ttft_within(0.3)
    assert within.certain == 0.0
    assert within.possible == pytest.approx(0.975)
    # the interpolated share of queue times, (300 + 90 x 0.5) / 400 = 0.8625, is an upper bound of goodput
    assert within.estimate == pytest.approx(0.8625)
    # measured TTFT keeps its exact lower bound
    measured = ServingSums(ttft=HISTOGRAM).ttft_within(0.3)
    assert measured.certain == pytest.approx(0.8)


def test_a_ttft_ratio_never_divides_tgi_queue_time_by_a_measured_ttft():
    from reports.bands import LOWER_BOUND, MEASURED, CurveBand
    from reports.display import load_band_output
    from reports.metrics import ComparisonRow, ComparisonStats, LedgerSums, UtilizationSums
    from reports.selectors.load import LoadBand

    def stats(serving: ServingSums) -> ComparisonStats:
        return ComparisonStats(fleet_id=1, fleet_name="f", gpu_model="h100-sxm", gpu_class=None, sums=LedgerSums(),
                               serving=serving, utilization=UtilizationSums())  # fmt: skip

    measured = stats(ServingSums(ttft=HISTOGRAM))  # P99 = 0.5 + 0.5 x (990 - 950) / 45 = 0.9444 s
    tgi = stats(ServingSums(ttft_lower_bound=HISTOGRAM))  # the same numbers, but queue time: a lower bound
    # measured against measured: 1; queue time against measured TTFT: no ratio (not the same quantity)
    assert ComparisonRow(measured, measured).vs_baseline["ttft_p99_s"] == pytest.approx(1.0)
    assert ComparisonRow(tgi, measured).vs_baseline["ttft_p99_s"] is None
    assert ComparisonRow(tgi, measured).vs_baseline["ttft_mean_s"] is None
    assert ComparisonRow(tgi, tgi).vs_baseline["ttft_p50_s"] == pytest.approx(1.0)

    def band(basis: str) -> CurveBand:
        return CurveBand(low_rps_per_gpu=0.0, high_rps_per_gpu=0.25, hours=3, max_rps_per_gpu=0.2, requests=1000,
                         generation_tokens=10**6, gpu_h=Decimal(8), cost=Decimal(10), it_kwh=Decimal(4),
                         facility_kwh=Decimal(6), operational_co2e_g=Decimal(2400), embodied_co2e_g=Decimal(200),
                         ttft=HISTOGRAM, ttft_basis=basis)  # fmt: skip

    shown = load_band_output(LoadBand(band(LOWER_BOUND), "USD", band(MEASURED), "USD"))
    assert shown["ttft_p99_vs_baseline"] is None
    assert shown["it_j_per_output_token_vs_baseline"] == 1.0
    assert load_band_output(LoadBand(band(MEASURED), "USD", band(MEASURED), "USD"))["ttft_p99_vs_baseline"] == 1.0
