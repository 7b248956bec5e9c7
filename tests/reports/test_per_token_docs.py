"""Every per-token figure is defined in one sentence, the same in the reports doc and in the OpenAPI schema."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports.serializers import PER_TOKEN_FIGURES

REPORTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "reports.md"  # "Per-token figures"


@pytest.mark.parametrize("name", sorted(PER_TOKEN_FIGURES))
def test_the_reports_doc_defines_each_per_token_figure_in_one_sentence(name):
    lines = [line for line in REPORTS_DOC.read_text().splitlines() if line.startswith(f"- `{name}`: ")]

    assert len(lines) == 1
    definition = lines[0].removeprefix(f"- `{name}`: ").replace("\u00d7", "x").rstrip(".")
    assert definition.replace("SCI, ", "SCI: ") == PER_TOKEN_FIGURES[name]
    assert ("output (generation)" in definition) == ("output" in name or "generation" in name)


def test_the_schema_defines_each_per_token_figure_and_leads_with_output_tokens(client_a):
    schema = client_a.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    described = {
        name: field["description"]
        for component in ("UsageRow", "ComparisonRow")
        for name, field in components[component]["properties"].items()
        if name in PER_TOKEN_FIGURES
    }

    assert set(described) == set(PER_TOKEN_FIGURES)
    assert all(PER_TOKEN_FIGURES[name] in text for name, text in described.items())
    comparison = list(components["ComparisonRow"]["properties"])
    assert comparison.index("cost_per_1m_output_tokens") < comparison.index("cost_per_1m_tokens")
    assert "per output token" in schema["paths"]["/api/v1/reports/comparison/"]["get"]["description"]
