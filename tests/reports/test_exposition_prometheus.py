"""A real Prometheus (``/usr/bin/prometheus``) scrapes ``/metrics`` from Django's live server, as in production.

Hours as in tests/reports/conftest.py. The live server answers as if it were ten minutes into H2 (the counters
through H1), then ten minutes into H3 (through H2): the counters step once, as when an hour becomes complete,
and the documented PromQL over that step is the comparison report's cost per 1M output tokens for H2.
A second scrape job sends no token: 401, so ``up == 0`` and none of its series.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import time_machine

from accounting.ledger.units import significant
from fleets.models import TokenScope
from fleets.personal_tokens import personal_token_create
from reports.selectors import fleet_comparison
from tests.helpers.exposition import INTO_THE_HOUR
from tests.helpers.prometheus import PROMETHEUS, SKIP_REASON, PrometheusServer, prometheus_serving
from tests.helpers.reports import H2, H3

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason=SKIP_REASON),
    pytest.mark.django_db(transaction=True),  # the live server's thread reads what the test wrote
]

SCRAPES_PER_PHASE = 4
# docs/metrics.md, "Per-token figures in PromQL", per fleet (by fleet_id: a fleet's name may change).
COST_PER_1M_OUTPUT_TOKENS = (
    'sum by (fleet_id, currency) (increase(wattledger_cost_total{job="wattledger"}[1h]))'
    "  / ignoring(currency) group_left"
    ' sum by (fleet_id) (increase(wattledger_output_tokens_total{job="wattledger"}[1h]))'
    "  * 1e6"
)
SCRAPES = 'count_over_time(wattledger_complete_through_timestamp_seconds{job="wattledger"}[1h])'


def scrape_configs(target: str, token: str) -> str:
    return (
        "  - job_name: wattledger\n"
        "    metrics_path: /metrics\n"
        f"    authorization: {{type: Bearer, credentials: '{token}'}}\n"
        f"    static_configs: [{{targets: ['{target}']}}]\n"
        "  - job_name: anonymous\n"
        "    metrics_path: /metrics\n"
        f"    static_configs: [{{targets: ['{target}']}}]\n"
    )


def scrapes(prometheus: PrometheusServer) -> int:
    found = prometheus.query(SCRAPES)
    return int(float(found[0]["value"][1])) if found else 0  # type: ignore[index]


def wait_until(condition: Callable[[], bool], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.25)


@pytest.fixture
def prometheus(fleets: Any, viewer_a: Any, live_server: Any, tmp_path: Path) -> Any:
    _, token = personal_token_create(user=viewer_a, name="prometheus", scope=TokenScope.METRICS)
    with time_machine.travel(H2 + INTO_THE_HOUR, tick=True) as traveller:
        server = prometheus_serving(scrape_configs(live_server.url.removeprefix("http://"), token), tmp_path)
        try:
            wait_until(lambda: scrapes(server) >= SCRAPES_PER_PHASE, "Prometheus scraped /metrics")
            before = scrapes(server)
            traveller.move_to(H3 + INTO_THE_HOUR)  # H2 becomes complete: the counters step
            wait_until(lambda: scrapes(server) >= before + SCRAPES_PER_PHASE, "Prometheus scraped /metrics again")
            yield server
        finally:
            server.stop()


def test_prometheus_scrapes_with_the_token_and_the_documented_promql_is_the_comparison_reports_figure(
    prometheus, fleets, client_a, org_a
):
    # when Prometheus evaluates the documented query over the hour that became complete
    found = {row["metric"]["fleet_id"]: row for row in prometheus.query(COST_PER_1M_OUTPUT_TOKENS)}

    # then each fleet's figure is the comparison report's for H2, as its API shows it (4 significant digits)
    answer = client_a.get("/api/v1/reports/comparison/", {"start": H2.isoformat(), "end": H3.isoformat()})
    assert answer.status_code == 200, answer.content
    reported = {str(row["fleet_id"]): row for row in answer.json()["results"]}
    assert set(found) == set(reported) == {str(fleets.enterprise.pk), str(fleets.consumer.pk)}
    for fleet_id, row in reported.items():
        value = float(found[fleet_id]["value"][1])
        assert found[fleet_id]["metric"]["currency"] == row["currency"] == "USD"
        assert significant(Decimal(repr(value))) == Decimal(row["cost_per_1m_output_tokens"]), fleet_id
    # and the report's full-precision Decimal, as a float
    rows = fleet_comparison(organization_ids=[org_a.pk], start=H2, end=H3, now=H3 + INTO_THE_HOUR)
    for row in rows:
        expected = float(row.stats.cost_per_1m_output_tokens)
        assert float(found[str(row.stats.fleet_id)]["value"][1]) == pytest.approx(expected, rel=1e-9)

    # without the token: refused with 401, so down, and none of its series stored
    targets = {target["labels"]["job"]: target for target in prometheus.targets()}

    assert targets["wattledger"]["health"] == "up"
    assert targets["anonymous"]["health"] == "down"
    assert "401" in str(targets["anonymous"]["lastError"])
    up = {row["metric"]["job"]: row["value"][1] for row in prometheus.query("up")}
    assert up == {"wattledger": "1", "anonymous": "0"}
    assert prometheus.query('{__name__=~"wattledger_.+", job="anonymous"}') == []

    # another organization's series never reach Prometheus
    groups = prometheus.query('group by (organization) ({__name__=~"wattledger_.+"})')

    assert {row["metric"].get("organization") for row in groups} == {"org-a", None}  # None: complete_through
    other_fleet = str(fleets.other_org_node.fleet_id)
    assert prometheus.query(f'{{__name__=~"wattledger_.+", fleet_id="{other_fleet}"}}') == []
    assert prometheus.query('count({__name__=~"wattledger_.+", organization="org-b"})') == []
