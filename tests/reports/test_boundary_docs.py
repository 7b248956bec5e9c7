"""Every energy boundary is defined in one sentence, in the accounting doc and in the OpenAPI schema."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.reports import END, START

ACCOUNTING_DOC = Path(__file__).resolve().parents[2] / "docs" / "accounting.md"  # "Energy boundaries"


def test_the_accounting_doc_defines_each_boundary_in_one_sentence():
    text = " ".join(ACCOUNTING_DOC.read_text().split())
    paragraph = text[text.index("**Energy boundaries.**") + len("**Energy boundaries.** ") :]
    sentences = re.split(r"(?<=\.) (?=[A-Z*`])", paragraph[: paragraph.index("### ")])
    gpu = [s for s in sentences if s.startswith("The *GPU boundary*")]
    node = [s for s in sentences if s.startswith("The *node boundary*")]
    assert len(gpu) == len(node) == 1
    assert "NVML" in gpu[0] and "meter" in node[0]
    assert any("`modelled`" in s and "never measured" in s for s in sentences)  # the modelled host, labelled


def test_the_schema_says_each_energy_figures_boundary_and_method(client_a):
    schema = client_a.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    for component in ("UsageRow", "ComparisonRow", "SustainabilityReport"):
        properties = components[component]["properties"]
        it_kwh, gpu_kwh = properties["it_kwh"]["description"], properties["gpu_kwh"]["description"]
        assert "node boundary" in it_kwh and "GPU boundary" in it_kwh and "modelled" in it_kwh, component
        assert gpu_kwh.startswith("GPU-boundary energy"), component
    usage = components["UsageRow"]["properties"]
    assert "GPU-boundary" in usage["gpu_j_per_token"]["description"]
    assert "node boundary" in usage["it_j_per_token"]["description"]
    assert "modelled" in usage["node_modelled_energy_share"]["description"]


def test_comparison_rows_give_j_per_token_at_the_gpu_boundary_beside_the_it_figure(fleets, client_a):
    period = {"start": START.isoformat(), "end": END.isoformat()}
    rows = {r["fleet_name"]: r for r in client_a.get("/api/v1/reports/comparison/", period).json()["results"]}

    enterprise = rows["enterprise"]
    # the H100 node: 3 h x 5.4 MJ of GPU boards = 16.2 MJ (4.5 kWh); 4,500,000 tokens of which 1,500,000 output
    assert (enterprise["gpu_kwh"], enterprise["gpu_j_per_token"], enterprise["gpu_j_per_output_token"]) == (
        4.5, 3.6, 10.8,
    )  # fmt: skip
    # no node meter and no modelled host: IT energy is the GPU boundary's
    assert (enterprise["it_j_per_token"], enterprise["node_meter_energy_share"]) == (3.6, 0.0)
