"""The Grafana dashboard (deploy/grafana/*.json) asks only for series that exist: the ones ``/metrics``
exposes, dcgm-exporter's (``DCGM_FI_*``) and vLLM's (``vllm:*``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import time_machine

from fleets.models import TokenScope
from fleets.personal_tokens import personal_token_create
from tests.helpers.reports import H3

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "deploy" / "grafana").glob("*.json"))

# PromQL's words that are not metric names: functions are followed by "(", these are not always.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless"}
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPINGS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_WORD = re.compile(r"(?<![\w:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])(?!\s*\()")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or a Grafana ``label_values(...)`` query) reads."""
    if expr.startswith("label_values("):
        expr = expr.removeprefix("label_values(").rsplit(",", 1)[0]
    text = _STRINGS.sub(" ", expr)
    text = _MATCHERS.sub(" ", text)
    text = _RANGES.sub(" ", text)
    text = _GROUPINGS.sub(" ", text)
    text = re.sub(r"\$\w+", " ", text)
    return {word for word in _WORD.findall(text) if word not in KEYWORDS and not re.fullmatch(r"\d\w*", word)}


def test_the_name_reader_reads_promql():
    expr = (
        'sum by (fleet, currency) (increase(wattledger_cost_total{fleet=~"$fleet"}[$window]))'
        " / ignoring(currency) group_left sum(rate(vllm:generation_tokens_total[5m])) * 1e6"
    )
    assert metric_names(expr) == {"wattledger_cost_total", "vllm:generation_tokens_total"}
    assert metric_names('label_values(wattledger_cost_total{organization=~"$organization"}, fleet)') == {
        "wattledger_cost_total"
    }


def _queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            yield variable["name"], query["query"] if isinstance(query, dict) else query


def _exposed(viewer_a: Any, fleets: Any) -> set[str]:
    from rest_framework.test import APIClient

    _, token = personal_token_create(user=viewer_a, name="grafana", scope=TokenScope.METRICS)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    with time_machine.travel(H3, tick=False):
        text = client.get("/metrics?per_node=true").content.decode()
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


def test_there_is_a_dashboard_and_its_provisioning():
    assert DASHBOARDS
    assert (ROOT / "deploy/grafana/provisioning/dashboards/wattledger.yml").exists()
    assert (ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").exists()


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.name)
def test_every_panel_reads_only_series_that_exist(path, fleets, viewer_a):
    exposed = _exposed(viewer_a, fleets)
    dashboard = json.loads(path.read_text())

    unknown = {
        (where, name)
        for where, expr in _queries(dashboard)
        for name in metric_names(expr)
        if name not in exposed and not name.startswith(("DCGM_FI_", "vllm:"))
    }

    assert unknown == set()
    read = {name for _, expr in _queries(dashboard) for name in metric_names(expr)}
    assert {"wattledger_cost_total", "wattledger_output_tokens_total", "wattledger_last_hour_idle_cost"} <= read
    assert any(name.startswith("DCGM_FI_") for name in read) and any(name.startswith("vllm:") for name in read)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.name)
def test_every_panel_reads_the_provisioned_datasource(path):
    dashboard = json.loads(path.read_text())

    assert {panel["datasource"]["uid"] for panel in dashboard["panels"]} == {"prometheus"}
    assert "uid: prometheus" in (ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text()
