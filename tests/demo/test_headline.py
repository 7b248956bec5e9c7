"""One answer: the README's headline figures are what the comparison report returns for the demo's reference
day, and ``manage.py headline`` and ``seed_demo``'s summary print that same report (idle shown apart)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.test import APIClient

from demo import spec
from reports.headline import IDLE_TREATMENT, headline_ratios, ratio_text

ROOT = Path(__file__).resolve().parents[2]
# The reference day the README quotes (its command, as the README gives it).
REFERENCE = ("--hours", "24", "--end", "2026-11-25T00:00:00Z")
START, END = "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z"
COST = re.compile(
    r"costs ([\d.]+x) the enterprise's per 1M\s+output tokens on the 8B \(([\d.]+) vs ([\d.]+) USD\) and ([\d.]+x) on "
    r"the 14B \(([\d.]+) vs\s+([\d.]+) USD\)"
)
TTFT = re.compile(
    r"P99 TTFT is ([\d.]+x) the enterprise fleet's on the 8B \((\d+) vs\s+(\d+) ms\) and ([\d.]+x) on the 14B "
    r"\((\d+) vs (\d+) ms\)"
)
LLMS = {"8B": "meta-llama/Llama-3.1-8B-Instruct", "14B": "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"}

pytestmark = pytest.mark.slow


def _readme() -> str:
    return re.sub(r"\s+", " ", (ROOT / "README.md").read_text())


def test_the_readme_names_its_reference_day_and_idle_treatment():
    readme = _readme()
    assert f"seed_demo {' '.join(REFERENCE)}" in readme and IDLE_TREATMENT in readme
    assert COST.search(readme) and TTFT.search(readme)


@pytest.mark.django_db(transaction=True)
def test_the_readme_headline_figures_equal_what_the_comparison_report_returns_for_the_demo(monkeypatch, settings):
    # given: the reference day, seeded as the README says, with the product's defaults (hosts modelled, which the
    # suite's root conftest turns off; its raw samples kept past the default retention, however old it gets)
    monkeypatch.setenv("TELEMETRY_RETENTION_DAYS", "36500")
    monkeypatch.setenv("LEDGER_MODEL_HOST_POWER_DEFAULT", "1")
    settings.LEDGER_MODEL_HOST_POWER_DEFAULT = True
    summary = io.StringIO()
    call_command("seed_demo", *REFERENCE, stdout=summary)
    # when: the comparison report by LLM model, through the API as the page and any client read it
    api = APIClient()
    api.force_authenticate(get_user_model().objects.get(username=spec.USERNAME))
    query = {"organization": "demo-ai", "by": "llm_model", "start": START, "end": END}
    rows = api.get("/api/v1/reports/comparison/", query).json()["results"]
    by = {(row["fleet_name"], row["llm_model"]): row for row in rows}
    ratios = {r.llm_model: r for r in headline_ratios(rows, fleet="consumer", baseline="enterprise")}

    # then: the README's every figure is the report's
    cost, ttft = COST.search(_readme()), TTFT.search(_readme())
    assert cost is not None and ttft is not None
    for offset, size in ((0, "8B"), (3, "14B")):
        consumer, enterprise, ratio = by[("consumer", LLMS[size])], by[("enterprise", LLMS[size])], ratios[LLMS[size]]
        assert cost.groups()[offset : offset + 3] == (
            ratio_text(ratio.cost_per_1m_output_tokens),
            consumer["cost_per_1m_output_tokens"],
            enterprise["cost_per_1m_output_tokens"],
        ), size
        assert ttft.groups()[offset : offset + 3] == (
            ratio_text(ratio.ttft_p99),
            f"{consumer['ttft_p99_ms']:.0f}",
            f"{enterprise['ttft_p99_ms']:.0f}",
        ), size
    # and seed_demo's summary and manage.py headline print that same report and those ratios
    printed = io.StringIO()
    call_command("headline", "--organization", "demo-ai", "--start", START, "--end", END, stdout=printed)
    for text in (summary.getvalue(), printed.getvalue()):
        assert IDLE_TREATMENT in text and "(idle: no output tokens)" in text
        for size in ("8B", "14B"):
            row, ratio = by[("consumer", LLMS[size])], ratios[LLMS[size]]
            assert f"{row['cost_per_1m_output_tokens']:>16}" in text
            assert f"consumer costs {ratio_text(ratio.cost_per_1m_output_tokens)} enterprise's" in text
