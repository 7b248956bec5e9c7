"""Every energy boundary is defined in one sentence, in the README and in the OpenAPI schema."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_defines_each_boundary_in_one_sentence():
    text = " ".join(README.read_text().split())
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
