"""The hour in progress and hours still to compute: complete_through, held time up to now, figures that stay put.

One H100 node of Org A (2 GPUs rented at 2.50 per GPU-hour, tests/reports/conftest.py) serving llama-8b;
the clock is moved with time-machine.
"""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounting.models import LedgerPending, NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute, ledger_pending_run
from reports.selectors import fleet_comparison
from reports.selectors.complete import complete_through
from telemetry.models import EndpointHourUsage, GpuHourUsage, RollupPending, UsageChanged
from tests.helpers.factories import GpuFactory, NodeFactory, NodePriceFactory
from tests.helpers.reports import H1, H2, H3, endpoint, endpoint_hour, gpu_hours, h100_node, live_grid

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)
COMPARISON = "/api/v1/reports/comparison/"


def _served(node, hour, *, generation_tokens=300_000, observed_s=3600.0):
    """One node-hour of usage: both GPUs, and llama-8b's output tokens."""
    gpu_hours(node, hour, (1_800_000.0, 3_600_000.0), (80.0, 60.0))
    GpuHourUsage.objects.filter(gpu__node=node, hour_start=hour).update(observed_s=observed_s)
    llama = node.serving_endpoints.filter(model_name="llama-8b").first() or endpoint(node, "llama-8b", "vllm")
    endpoint_hour(llama, hour, prompt_tokens=600_000, generation_tokens=generation_tokens, requests=1000)
    EndpointHourUsage.objects.filter(endpoint=llama, hour_start=hour).update(observed_s=observed_s)


@pytest.fixture
def node(org_a):
    live_grid()
    return h100_node(org_a)


def test_complete_through_walks_back_over_the_hours_still_to_compute(node, org_a, org_b):
    now = H3 + HOUR + timedelta(minutes=10)  # 02:10, the 02:00 hour in progress
    ids = [org_a.pk]
    assert complete_through(organization_ids=ids, now=now) == H3 + HOUR

    UsageChanged.objects.create(node=node, hour_start=H3, changed_at=now)  # rolled up, not priced yet
    assert complete_through(organization_ids=ids, now=now) == H3
    LedgerPending.objects.create(node=node, hour_start=H2, marked_at=now)  # a price changed
    RollupPending.objects.create(node=node, hour_start=H1 - 5 * HOUR, marked_at=now)  # late samples, hours before
    assert complete_through(organization_ids=ids, now=now) == H2
    # The hour in progress is never complete, whatever is marked in it; another organization's marks are its own.
    RollupPending.objects.create(node=node, hour_start=H3 + HOUR, marked_at=now)
    other = h100_node(org_b)
    UsageChanged.objects.create(node=other, hour_start=H1, changed_at=now)
    assert complete_through(organization_ids=ids, now=now) == H2


def test_a_line_of_the_hour_in_progress_charges_held_time_up_to_now_and_is_recomputed_once_over(node, time_machine):
    time_machine.move_to(H3 + timedelta(minutes=9), tick=False)
    _served(node, H3, observed_s=540.0)

    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H3])

    line = NodeHourLedger.objects.get(node=node, hour_start=H3)
    assert line.held_h == Decimal("0.15")  # 9 minutes held so far, not the whole hour
    assert line.hardware_cost == Decimal("0.75")  # 2 GPUs x 0.15 h x 2.50
    mark = LedgerPending.objects.get(node=node, hour_start=H3)
    assert mark.marked_at == H3 + HOUR  # marked for its end

    ledger_pending_run(now=H3 + timedelta(minutes=10))  # before the end: the mark waits
    assert LedgerPending.objects.filter(node=node, hour_start=H3).exists()

    time_machine.move_to(H3 + HOUR + timedelta(minutes=1), tick=False)
    ledger_pending_run(now=H3 + HOUR + timedelta(minutes=1))

    line.refresh_from_db()
    assert line.held_h == Decimal(1)
    assert not LedgerPending.objects.filter(node=node, hour_start=H3).exists()


def test_the_hour_in_progress_is_asked_for_says_so_and_never_counts_its_future_as_missing(node, client_a, time_machine):
    time_machine.move_to(H3 + timedelta(minutes=9), tick=False)
    _served(node, H3, observed_s=540.0)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H3])
    hour = {"start": H3.isoformat(), "end": (H3 + HOUR).isoformat()}

    usage = client_a.get("/api/v1/reports/usage/", {**hour, "granularity": "total"}).json()
    sustainability = client_a.get("/api/v1/reports/sustainability/", hour).json()

    assert (usage["complete_through"], usage["includes_open_hours"]) == ("2026-11-01T01:00:00Z", True)
    assert sustainability["includes_open_hours"] is True
    assert usage["results"][0]["coverage"] == 1.0
    assert (sustainability["held_h"], sustainability["missing_h"]) == (0.15, 0.0)


def test_two_requests_a_minute_apart_give_the_same_figures_while_the_hour_in_progress_fills(
    node, client_a, time_machine
):
    for hour in (H1, H2):
        _served(node, hour)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H1, H2])
    time_machine.move_to(H3 + timedelta(minutes=20), tick=False)
    _served(node, H3, observed_s=1200.0)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H3])
    asked = {"start": H1.isoformat(), "end": (H3 + HOUR).isoformat(), "by": "llm_model"}

    first = client_a.get(COMPARISON, asked).json()
    # A minute later the hour in progress has more tokens, a new model and a recomputed line.
    time_machine.move_to(H3 + timedelta(minutes=21), tick=False)
    EndpointHourUsage.objects.filter(hour_start=H3).update(generation_tokens=900_000)
    qwen = node.serving_endpoints.create(url="http://127.0.0.1:8001/metrics", kind="vllm", model_name="qwen-14b")
    endpoint_hour(qwen, H3, generation_tokens=50_000, requests=10)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H3])
    second = client_a.get(COMPARISON, asked).json()
    default = client_a.get(COMPARISON, {"by": "llm_model"}).json()

    assert first["results"] == second["results"]
    assert [row["llm_model"] for row in second["results"]] == ["llama-8b"]  # no row of the hour in progress
    assert second["results"][0]["gpu_h"] == 4.0  # H1 and H2, 2 GPUs each
    assert (second["complete_through"], second["includes_open_hours"]) == ("2026-11-01T01:00:00Z", True)
    assert default["end"] == default["complete_through"] == "2026-11-01T01:00:00Z"
    assert default["includes_open_hours"] is False
    assert default["results"] == second["results"]


def test_a_comparison_leaves_out_hours_the_ledger_has_not_priced_since_their_usage_changed(node, org_a):
    for hour in (H1, H2):
        _served(node, hour)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H1, H2])
    # The rollup rewrote H2 (late samples: three times the tokens) and the ledger has not caught up.
    EndpointHourUsage.objects.filter(hour_start=H2).update(generation_tokens=900_000)
    UsageChanged.objects.create(node=node, hour_start=H2, changed_at=H3)

    rows = fleet_comparison(organization_ids=[org_a.pk], start=H1, end=H3, by_llm_model=True, now=H3 + 2 * HOUR)

    (llama,) = rows
    assert llama.stats.sums.totals.gpu_h == Decimal(2)  # H1 alone, never more than its share
    assert llama.stats.sums.totals.generation_tokens == llama.stats.serving.generation_tokens == 300_000


def test_every_page_carries_complete_through(node, client_a, time_machine):
    _served(node, H1)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H1])
    time_machine.move_to(H3 + timedelta(minutes=5), tick=False)
    UsageChanged.objects.create(node=node, hour_start=H2, changed_at=H3)

    for page in ("/finance/", "/compare/", "/nodes/"):
        context = client_a.get(page).context
        assert context["complete_through"] == H2, page
        assert context["period"].end == H2, page
        assert context["includes_open_hours"] is False, page
    compare = client_a.get("/compare/?start=2026-10-31&end=2026-11-01").content.decode()
    assert "Complete through 2026-11-01 00:00 UTC; later hours are left out" in compare


def test_the_usage_report_by_llm_model_allocates_final_node_hours_only(node, client_a):
    for hour in (H1, H2):
        _served(node, hour)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H1, H2])
    EndpointHourUsage.objects.filter(hour_start=H2).update(generation_tokens=900_000)
    UsageChanged.objects.create(node=node, hour_start=H2, changed_at=H3)
    asked = {"start": H1.isoformat(), "end": H3.isoformat(), "granularity": "total"}

    (llama,) = client_a.get("/api/v1/reports/usage/", {**asked, "group_by": "llm_model"}).json()["results"]

    assert (llama["group_key"], llama["generation_tokens"]) == ("llama-8b", 300_000)
    assert llama["cost"] == "5.54"  # H1's line alone, whole: 5.00 rent + 0.54 electricity


@pytest.mark.parametrize("marks_listed", [200, 0], ids=["marks named", "past the list: looked up per row"])
def test_a_comparison_leaves_out_every_queue_s_marked_hours_however_many_marks_there_are(
    node, org_a, monkeypatch, marks_listed
):
    monkeypatch.setattr("reports.selectors.complete.MARKS_LISTED", marks_listed)
    hours = [H1 - 2 * HOUR, H1 - HOUR, H1, H2]
    for hour in hours:
        _served(node, hour)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=hours)
    # given: one hour marked in each queue, and another node's mark on a hour this node keeps
    RollupPending.objects.create(node=node, hour_start=H1 - 2 * HOUR, marked_at=H3)
    UsageChanged.objects.create(node=node, hour_start=H1, changed_at=H3)
    LedgerPending.objects.create(node=node, hour_start=H2, marked_at=H3)
    other = NodeFactory(fleet=node.fleet, site=node.site, hostname="h100-b")
    UsageChanged.objects.create(node=other, hour_start=H1 - HOUR, changed_at=H3)

    rows = fleet_comparison(organization_ids=[org_a.pk], start=H1 - 2 * HOUR, end=H3, now=H3 + 2 * HOUR)

    # then: the one unmarked hour of this node alone
    (row,) = rows
    assert row.stats.sums.totals.held_h == Decimal(1)
    assert row.stats.sums.totals.generation_tokens == row.stats.serving.generation_tokens == 300_000


def test_another_organizations_backlog_leaves_a_comparison_reading_its_site_hours(node, org_a, org_b, monkeypatch):
    # given: this node's hours computed, and another organization's node with more marks than are named
    hours = [H1, H2]
    for hour in hours:
        _served(node, hour)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=hours)
    asked = {"organization_ids": [org_a.pk], "start": H1, "end": H3, "now": H3 + 2 * HOUR}
    (alone,) = fleet_comparison(**asked)
    monkeypatch.setattr("reports.selectors.complete.MARKS_LISTED", 2)
    other = h100_node(org_b)
    for back in range(3):
        UsageChanged.objects.create(node=other, hour_start=H1 - back * HOUR, changed_at=H3)

    with CaptureQueriesContext(connection) as queries:
        (row,) = fleet_comparison(**asked)

    # then: the same figures, read as without the other's marks (from the site-hours)
    assert row.stats == alone.stats
    read = " ".join(query["sql"] for query in queries.captured_queries)
    assert '"accounting_ledgersitehour"' in read
    assert complete_through(organization_ids=[org_a.pk], now=H3 + 2 * HOUR) == H3 + 2 * HOUR


def test_a_comparison_keeps_the_final_node_hours_of_a_site_hour_that_also_holds_a_marked_one(node, org_a, monkeypatch):
    # given: two nodes of one site serving H1 and H2, the second's H2 marked (its line to recompute)
    second = NodeFactory(fleet=node.fleet, site=node.site, hostname="h100-b", tenure="rented", commissioned_at=H1)
    for index in range(2):
        GpuFactory(node=second, index=index, name="NVIDIA H100 80GB HBM3")
    NodePriceFactory(node=second, rate_per_h=Decimal("2.50"), valid_from=H1)
    for each in (node, second):
        for hour in (H1, H2):
            _served(each, hour)
        ledger_node_hours_compute(node_id=each.pk, hour_starts=[H1, H2])
    LedgerPending.objects.create(node=second, hour_start=H2, marked_at=H3)
    asked = {"organization_ids": [org_a.pk], "start": H1, "end": H3, "now": H3 + 2 * HOUR}

    (row,) = fleet_comparison(**asked)
    monkeypatch.setattr("reports.selectors.complete.MARKS_LISTED", 0)  # every line looked up on its own
    (by_lines,) = fleet_comparison(**asked)

    # then: three node-hours, the marked one left out, the same sums whichever rows were read
    assert row.stats.sums.totals.held_h == Decimal(3)
    assert row.stats.sums.totals.generation_tokens == 900_000
    expected = NodeHourLedger.objects.exclude(node=second, hour_start=H2)
    assert row.stats.sums.totals.cost == sum(line.cost for line in expected)
    read, summed = row.stats.sums.totals, by_lines.stats.sums.totals
    for name in ("held_h", "facility_kwh", "electricity_cost", "hardware_cost", "cost", "location_co2e_g"):
        assert round(getattr(read, name), 9) == round(getattr(summed, name), 9), name  # SQLite sums as doubles
    assert read.generation_tokens == summed.generation_tokens


def _a_week_ending_with_an_hour_still_to_price(node, now):
    """Two final hours at the start of the last 7 days and one marked for the ledger at their end."""
    first, last_over = H3, H3 + timedelta(days=7)
    for hour in (first, first + HOUR, last_over):
        _served(node, hour)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[first, first + HOUR, last_over], now=now)
    LedgerPending.objects.create(node=node, hour_start=last_over, marked_at=now)


def test_the_headline_command_prints_the_figures_the_api_gives_for_its_default_period(
    node, org_a, client_a, time_machine
):
    now = H3 + timedelta(days=7, hours=1, minutes=10)
    _a_week_ending_with_an_hour_still_to_price(node, now)
    time_machine.move_to(now, tick=False)
    answer = client_a.get(COMPARISON, {"by": "llm_model"}).json()
    printed = io.StringIO()
    call_command("headline", "--organization", org_a.slug, stdout=printed)
    (row,) = [row for row in answer["results"] if row["llm_model"] == "llama-8b"]
    # the same 7 days, ending at the complete-through hour (the marked one's start), and so the same cost
    assert answer["start"] == f"{H3:%Y-%m-%dT%H:%M:%S}Z"
    assert f"{H3:%Y-%m-%d %H:%M} to {(H3 + timedelta(days=7)):%Y-%m-%d %H:%M} UTC" in printed.getvalue()
    assert f"{row['cost']} USD" in printed.getvalue(), printed.getvalue()


def test_the_focus_command_exports_the_hours_the_api_exports_for_its_default_period(
    node, org_a, token_client_a, time_machine
):
    now = H3 + timedelta(days=7, hours=1, minutes=10)
    _a_week_ending_with_an_hour_still_to_price(node, now)
    time_machine.move_to(now, tick=False)
    response = token_client_a.get("/api/v1/reports/focus/")
    exported = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    written = io.StringIO()
    call_command("focus_export", "--organization", org_a.slug, stdout=written)
    printed = list(csv.DictReader(io.StringIO(written.getvalue())))

    def periods(rows):
        return sorted({row["ChargePeriodStart"] for row in rows})

    assert periods(printed) == periods(exported)
    assert f"{H3:%Y-%m-%dT%H:%M:%S}Z" in periods(printed)  # the first final hour, inside the 7 days
    assert f"{(H3 + timedelta(days=7)):%Y-%m-%dT%H:%M:%S}Z" not in periods(printed)  # the hour still to price


def test_the_report_commands_refuse_an_organization_that_no_id_or_slug_can_name():
    for ref in ("²", "99999999999999999999999", "no such org"):
        with pytest.raises(CommandError, match="no organization"):
            call_command("headline", "--organization", ref, stdout=io.StringIO())
