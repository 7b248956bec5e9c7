"""Prompt tokens served from the prefix cache, carried onto the ledger and into every ledger-backed report.

conftest.py's hours: the H100 endpoint serves 1,000,000 prompt tokens an hour. Here its server counted
250,000 of them as prefix-cache hits in H1 and H2 and did not say in H3 (null); the RTX endpoint never says.
"""

from __future__ import annotations

import csv
import io

import pytest

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from telemetry.models import EndpointHourUsage
from tests.helpers.reports import END, HOURS, START

pytestmark = pytest.mark.django_db
PERIOD = {"start": START.isoformat(), "end": END.isoformat()}


@pytest.fixture
def cached(fleets):
    endpoint_hours = EndpointHourUsage.objects.filter(endpoint__node=fleets.h100).order_by("hour_start")
    for hour, hits in zip(endpoint_hours, (250_000, 250_000, None), strict=True):
        hour.cached_prompt_tokens = hits
        hour.save()
    ledger_node_hours_compute(node_id=fleets.h100.pk, hour_starts=HOURS)
    return fleets


def test_each_ledger_line_keeps_the_hours_cached_prompt_tokens_or_null(cached):
    lines = NodeHourLedger.objects.filter(node=cached.h100).order_by("hour_start")
    assert [line.cached_prompt_tokens for line in lines] == [250_000, 250_000, None]
    assert set(NodeHourLedger.objects.filter(node=cached.rtx).values_list("cached_prompt_tokens", flat=True)) == {None}


def test_usage_rows_sum_them_and_say_null_where_no_server_counts_them(cached, client_a):
    body = client_a.get("/api/v1/reports/usage/", {**PERIOD, "granularity": "total", "group_by": "fleet"}).json()
    by_fleet = {row["group_label"]: row for row in body["results"]}

    enterprise, consumer = by_fleet["enterprise"], by_fleet["consumer"]
    assert (enterprise["prompt_tokens"], enterprise["cached_prompt_tokens"]) == (3_000_000, 500_000)
    assert enterprise["prefix_cache_hit_share"] == 0.25  # 500,000 of the 2,000,000 prompt tokens of H1 and H2
    assert (consumer["cached_prompt_tokens"], consumer["prefix_cache_hit_share"]) == (None, None)


def test_the_usage_csv_and_the_sustainability_report_carry_them(cached, client_a):
    response = client_a.get(
        "/api/v1/reports/usage/", {**PERIOD, "granularity": "hour", "group_by": "fleet"}, HTTP_ACCEPT="text/csv"
    )
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    enterprise = [row["cached_prompt_tokens"] for row in table if row["group_label"] == "enterprise"]
    assert enterprise == ["250000", "250000", ""]  # H3: the server did not say, not zero

    report = client_a.get("/api/v1/reports/sustainability/", PERIOD).json()
    assert (report["prompt_tokens"], report["cached_prompt_tokens"]) == (4_800_000, 500_000)


def test_the_schema_says_which_per_token_figures_include_them(client_a):
    schema = client_a.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    described = schema["components"]["schemas"]["UsageRow"]["properties"]["cached_prompt_tokens"]["description"]
    assert "within prompt_tokens" in described and "cost_per_1m_tokens" in described
    assert "in none per output token" in described
