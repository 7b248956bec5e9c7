"""``/metrics``: the ledger as Prometheus metrics, behind a token of scope metrics, tenant-scoped.

Hours as in tests/reports/conftest.py: H1, H2, H3, each priced and weighed by the real ledger. A scrape
ten minutes into H3 sees H1 and H2 complete (the counters) and H2 as the last complete hour (the gauges).
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounting.models import LedgerPending
from fleets.models import Fleet, TokenScope
from fleets.services import credential_issue
from reports.exposition_api import FIGURES, LAST_HOUR, PREFIX
from reports.selectors import fleet_comparison
from tests.helpers.exposition import INTO_THE_HOUR, METRICS, Series, bearer, parsed, scrape, scraped, scraper, series
from tests.helpers.factories import FleetFactory
from tests.helpers.reports import H1, H2, H3, h100_node, h100_usage

pytestmark = pytest.mark.django_db


@pytest.fixture
def scraper_a(viewer_a: Any) -> APIClient:
    return scraper(viewer_a)


def total(found: Series, name: str, **labels: str) -> float:
    return sum(series(found, name, **labels).values())


# --- who may scrape -----------------------------------------------------------------


def test_without_a_token_the_metrics_are_refused_with_401(fleets):
    answer = APIClient().get(METRICS)

    assert answer.status_code == 401
    assert answer["WWW-Authenticate"].startswith("Bearer")


def test_an_unknown_token_is_refused_with_401(fleets):
    assert bearer("wlp_not-a-token").get(METRICS).status_code == 401


def test_a_reports_token_is_refused_with_403(fleets, viewer_a):
    answer = scraper(viewer_a, TokenScope.REPORTS).get(METRICS)

    assert answer.status_code == 403  # a valid credential, of another scope: re-sending it cannot help
    assert answer["Content-Type"].startswith("application/json")


def test_a_node_token_is_refused_with_403(fleets):
    assert bearer(credential_issue(node=fleets.h100)).get(METRICS).status_code == 403


def test_a_metrics_token_reads_no_report(fleets, scraper_a):
    assert scraper_a.get("/api/v1/reports/comparison/?period=2026-Q4").status_code == 403
    assert scraper_a.get("/api/v1/tokens/").status_code == 403


def test_a_session_is_not_a_metrics_credential(fleets, client_a):
    assert client_a.get(METRICS).status_code == 401


# --- tenancy ------------------------------------------------------------------------


def test_another_organizations_series_never_appear(fleets, scraper_a, user_b):
    mine, theirs = scraped(scraper_a, H3 + INTO_THE_HOUR), scraped(scraper(user_b), H3 + INTO_THE_HOUR)

    assert {value for _, labels in mine for key, value in labels if key == "organization"} == {"org-a"}
    assert {value for _, labels in theirs for key, value in labels if key == "organization"} == {"org-b"}
    other_fleet = str(fleets.other_org_node.fleet_id)
    assert not [labels for _, labels in mine if ("fleet_id", other_fleet) in labels]
    assert total(theirs, "wattledger_cost_total") == total(mine, "wattledger_cost_total", fleet="enterprise")


# --- the counters are the ledger ------------------------------------------------------


def _cost_per_1m_output_tokens(earlier: Series, later: Series, **labels: str) -> float:
    """As the documented PromQL: increase(cost) / increase(output tokens) * 1e6 between two scrapes."""
    cost = total(later, "wattledger_cost_total", **labels) - total(earlier, "wattledger_cost_total", **labels)
    tokens = total(later, "wattledger_output_tokens_total", **labels) - total(
        earlier, "wattledger_output_tokens_total", **labels
    )
    return cost / tokens * 1e6


def test_the_counters_increase_over_an_hour_divided_as_documented_is_the_comparisons_cost_per_1m_output_tokens(
    fleets, scraper_a, org_a
):
    # given two scrapes: H1 complete, then H1 and H2
    earlier, later = scraped(scraper_a, H2 + INTO_THE_HOUR), scraped(scraper_a, H3 + INTO_THE_HOUR)

    # when the comparison report is asked for H2
    rows = fleet_comparison(organization_ids=[org_a.pk], start=H2, end=H3, now=H3 + INTO_THE_HOUR)

    # then each fleet's figure is the counters' ratio
    assert len(rows) == 2
    for row in rows:
        expected = row.stats.cost_per_1m_output_tokens
        assert expected is not None
        got = _cost_per_1m_output_tokens(earlier, later, fleet_id=str(row.stats.fleet_id))
        assert got == pytest.approx(float(expected), rel=1e-12)


def test_per_llm_model_the_counters_follow_the_comparisons_allocation(two_models, scraper_a, org_a):
    H0 = H1 - timedelta(hours=1)
    earlier, later = scraped(scraper_a, H0 + INTO_THE_HOUR), scraped(scraper_a, H2 + INTO_THE_HOUR)

    rows = fleet_comparison(organization_ids=[org_a.pk], start=H1, end=H2, by_llm_model=True, now=H2)

    served = [row for row in rows if row.stats.llm_model is not None]
    assert {row.stats.llm_model for row in served} == {"llama-8b", "qwen-14b"}
    for row in served:
        got = _cost_per_1m_output_tokens(earlier, later, llm_model=row.stats.llm_model)
        assert got == pytest.approx(float(row.stats.cost_per_1m_output_tokens), rel=1e-12)
    assert total(later, "wattledger_cost_total") == pytest.approx(sum(float(r.stats.sums.totals.cost) for r in rows))


def test_hours_that_served_no_output_token_are_series_without_an_llm_model(two_models, scraper_a, org_a):
    found = scraped(scraper_a, H3 + INTO_THE_HOUR)  # H1 served by two LLM models, H2 by none

    costs = series(found, "wattledger_cost_total")
    models = sorted(dict(labels).get("llm_model", "") for labels in costs)
    assert models == ["", "llama-8b", "qwen-14b"]
    rows = fleet_comparison(organization_ids=[org_a.pk], start=H1, end=H3, by_llm_model=True, now=H3)
    idle = next(row for row in rows if row.stats.llm_model is None)
    idle_cost = next(value for labels, value in costs.items() if "llm_model" not in dict(labels))
    assert idle_cost == pytest.approx(float(idle.stats.sums.totals.cost))
    _promtool_passes(scrape(scraper_a, H3 + INTO_THE_HOUR).content.decode())


def test_the_gauges_are_the_last_complete_hour(fleets, scraper_a, org_a):
    found = scraped(scraper_a, H3 + INTO_THE_HOUR)

    rows = fleet_comparison(organization_ids=[org_a.pk], start=H2, end=H3, now=H3 + INTO_THE_HOUR)

    for row in rows:
        fleet = {"fleet_id": str(row.stats.fleet_id)}
        totals = row.stats.sums.totals
        assert total(found, "wattledger_last_hour_cost", **fleet) == pytest.approx(float(totals.cost))
        assert total(found, "wattledger_last_hour_output_tokens", **fleet) == totals.generation_tokens
        joules = float(totals.facility_kwh * Decimal("3.6e6"))
        assert total(found, "wattledger_last_hour_facility_energy_joules", **fleet) == pytest.approx(joules)
    assert total(found, "wattledger_complete_through_timestamp_seconds") == H3.timestamp()


def test_the_counters_never_go_down_and_step_only_when_an_hour_completes(fleets, scraper_a):
    times = [H2 + INTO_THE_HOUR, H2 + 5 * INTO_THE_HOUR, H3 + INTO_THE_HOUR, H3 + 2 * timedelta(hours=1)]
    scrapes = [scraped(scraper_a, at) for at in times]

    counters = [f"{PREFIX}{figure.name}_total" for figure in FIGURES]
    for earlier, later in itertools.pairwise(scrapes):
        for name in counters:
            for labels, value in series(earlier, name).items():
                assert series(later, name)[labels] >= value, (name, labels)
    assert scrapes[0] == scrapes[1]  # within one hour, nothing moves


def test_a_re_opened_hour_keeps_its_stored_line_in_the_counters_until_it_is_recomputed(fleets, scraper_a):
    at = H3 + 2 * timedelta(hours=1)
    before = scraped(scraper_a, at)

    # a price change re-opens H1 on the H100 node: its line waits to be recomputed
    LedgerPending.objects.create(node=fleets.h100, hour_start=H1, marked_at=H3)

    assert scraped(scraper_a, at) == before  # no dip, so no counter reset for Prometheus


def test_money_is_labelled_by_currency_and_nothing_else_is(fleets, scraper_a):
    found = scraped(scraper_a, H3 + INTO_THE_HOUR)

    for (name, labels), _ in found.items():
        has_currency = any(key == "currency" for key, _ in labels)
        assert has_currency == name.removeprefix(PREFIX).removeprefix(LAST_HOUR).startswith(("cost", "idle_cost"))
    assert {value for _, labels in found for key, value in labels if key == "currency"} == {"USD"}


# --- cardinality and cost -------------------------------------------------------------


def test_the_organization_endpoint_has_no_per_gpu_or_per_node_series(fleets, scraper_a):
    found = scraped(scraper_a, H3 + INTO_THE_HOUR)

    keys = {key for _, labels in found for key, _ in labels}
    assert keys == {"organization", "fleet_id", "fleet", "gpu_model", "llm_model", "currency"}


def test_per_node_series_only_with_the_flag(fleets, scraper_a):
    found = scraped(scraper_a, H3 + INTO_THE_HOUR, f"{METRICS}?per_node=true")

    nodes = {value for _, labels in found for key, value in labels if key == "node"}
    assert nodes == {fleets.h100.hostname, fleets.rtx.hostname}
    assert not {key for _, labels in found for key, _ in labels} & {"gpu", "gpu_index", "gpu_uuid"}


def test_a_bad_flag_is_a_400_in_json(fleets, scraper_a):
    answer = scraper_a.get(f"{METRICS}?per_node=maybe")

    assert answer.status_code == 400
    assert "per_node" in answer.json()


def _more_fleets(org: Any, count: int, site: Any) -> Iterator[Fleet]:
    for _ in range(count):
        node = h100_node(org, site=site, fleet=FleetFactory(organization=org))
        h100_usage(node)
        yield node.fleet


# The token and its user, the organizations, complete_through (one per queue), the idle and allocated
# sums since enrolment and of the last hour, the labels: whatever the number of fleets, nodes and hours.
QUERIES = 11


def test_a_scrape_costs_a_bounded_number_of_queries(fleets, scraper_a, org_a, django_assert_max_num_queries):
    with django_assert_max_num_queries(QUERIES):
        scrape(scraper_a, H3 + INTO_THE_HOUR)
    list(_more_fleets(org_a, 3, fleets.h100.site))
    with django_assert_max_num_queries(QUERIES):
        found = parsed(scrape(scraper_a, H3 + INTO_THE_HOUR).content.decode())
    assert len(series(found, "wattledger_cost_total")) == 5


# --- the formats ----------------------------------------------------------------------


def test_the_text_format_by_default(fleets, scraper_a):
    answer = scrape(scraper_a, H3 + INTO_THE_HOUR)

    assert answer["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = answer.content.decode()
    assert "# TYPE wattledger_facility_energy_joules_total counter\n" in text
    assert "# TYPE wattledger_last_hour_cost gauge\n" in text


PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


def test_openmetrics_when_accept_asks_for_it(fleets, scraper_a):
    answer = scrape(scraper_a, H3 + INTO_THE_HOUR, HTTP_ACCEPT=PROMETHEUS_ACCEPT)

    assert answer["Content-Type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
    text = answer.content.decode()
    assert text.endswith("# EOF\n")
    assert "# TYPE wattledger_facility_energy_joules counter\n" in text
    assert "# UNIT wattledger_facility_energy_joules joules\n" in text
    assert parsed(text.removesuffix("# EOF\n")) == scraped(scraper_a, H3 + INTO_THE_HOUR)


def test_label_values_are_escaped(fleets, scraper_a):
    name = 'rack "7" \\ west\nrow 2'
    Fleet.objects.filter(pk=fleets.enterprise.pk).update(name=name)

    text = scrape(scraper_a, H3 + INTO_THE_HOUR).content.decode()

    assert 'fleet="rack \\"7\\" \\\\ west\\nrow 2"' in text
    assert series(parsed(text), "wattledger_cost_total", fleet=name)
    _promtool_passes(text)


def _promtool_passes(text: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not on the PATH (Debian: apt-get install prometheus)")
    checked = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, check=False)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
    assert checked.stdout.decode() + checked.stderr.decode() == ""  # no lint warning either


@pytest.mark.parametrize("path", [METRICS, f"{METRICS}?per_node=true"])
def test_promtool_check_metrics_passes(fleets, scraper_a, path):
    _promtool_passes(scrape(scraper_a, H3 + INTO_THE_HOUR, path).content.decode())
