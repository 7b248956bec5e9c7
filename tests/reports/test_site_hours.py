"""The ledger's site-hours: written with the lines, and every report read from them equals the same report
read from the lines (to the last digit on PostgreSQL), whatever moved, was deleted or was stored at once."""

from __future__ import annotations

import dataclasses
import threading
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

import accounting.site_hours
from accounting.models import LedgerServedHour, LedgerSiteHour, NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute, ledger_pending_run
from accounting.site_hours import site_hours_check, site_hours_pending, site_hours_rebuild, site_hours_settle
from common.citus import citus_coordinator
from common.periods import HOUR, Granularity
from reports.display import sustainability_output, usage_row_output
from reports.selectors import GroupBy, UsageSpec, fleet_comparison, report_rows, sustainability_report
from reports.sharing import IdleTreatment
from scope2.boundary import ElectricityScope
from scope2.inventory import electricity_filters_since
from scope2.models import NodeScope
from scope2.selectors import scope2_report
from telemetry.models import EndpointHourUsage
from tests.helpers.factories import GpuFactory, NodeFactory, NodePriceFactory, SiteFactory
from tests.helpers.reports import END, H2, H3, HOURS, LONG_AGO, START, endpoint, endpoint_hour, h100_usage

pytestmark = pytest.mark.django_db


def second_h100(fleets, *, hostname="h100-b"):
    """Another rented H100 node of the enterprise fleet at the same site: its site-hours sum two lines."""
    node = NodeFactory(
        fleet=fleets.enterprise, site=fleets.h100.site, hostname=hostname, tenure="rented", commissioned_at=LONG_AGO
    )
    for index in range(2):
        GpuFactory(node=node, index=index, name="NVIDIA H100 80GB HBM3")
    NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=LONG_AGO)
    h100_usage(node)
    return node


def from_lines(monkeypatch, read):
    """``read()`` with the site-hours out of use: every report reads the lines."""
    with monkeypatch.context() as patched:
        patched.setattr("reports.selectors.lines.site_hours_in_use", lambda: False)
        return read()


SPECS = [
    (Granularity.HOUR, GroupBy.NONE),
    (Granularity.DAY, GroupBy.FLEET),
    (Granularity.TOTAL, GroupBy.SITE),
    (Granularity.MONTH, GroupBy.GPU_MODEL),
    (Granularity.TOTAL, GroupBy.CURRENCY),
]


def usage(org, granularity, group_by):
    spec = UsageSpec(organization_ids=[org.pk], start=START, end=END, granularity=granularity, group_by=group_by)
    return report_rows(spec=spec)


def test_a_site_hour_holds_its_lines_summed(fleets, org_a):
    second_h100(fleets)

    rows = LedgerSiteHour.objects.filter(site=fleets.h100.site)
    assert sorted(rows.values_list("hour_start", "lines")) == [(hour, 2) for hour in HOURS]
    lines = NodeHourLedger.objects.filter(site=fleets.h100.site, hour_start=HOURS[0])
    row = rows.get(hour_start=HOURS[0])
    assert row.cost == sum(line.cost for line in lines)
    assert row.location_co2e_g == sum(line.location_co2e_g for line in lines)
    assert row.generation_tokens == 2 * 500_000
    assert site_hours_check() == []


def test_the_usage_report_from_site_hours_is_the_report_from_lines(fleets, org_a, monkeypatch):
    second_h100(fleets)

    for granularity, group_by in SPECS:
        read = usage(org_a, granularity, group_by)
        expected = from_lines(monkeypatch, lambda g=granularity, b=group_by: usage(org_a, g, b))

        assert read, (granularity, group_by)
        assert [usage_row_output(row) for row in read] == [usage_row_output(row) for row in expected]
        if connection.vendor == "postgresql":  # SQLite sums decimals as doubles (~15 digits)
            assert read == expected, (granularity, group_by)


def test_the_sustainability_report_from_site_hours_is_the_report_from_lines(mixed_grid, org_a, monkeypatch):
    second_h100(mixed_grid)

    def report():
        return sustainability_report(organization_id=org_a.pk, start=START, end=END)

    read, expected = report(), from_lines(monkeypatch, report)

    assert sustainability_output(read, org_a) == sustainability_output(expected, org_a)
    assert [(h.zone, h.hour_start, h.source, h.kind) for h in read.grid_hours] == [
        (h.zone, h.hour_start, h.source, h.kind) for h in expected.grid_hours
    ]
    assert len({h.kind for h in read.grid_hours}) == 3  # live, simulated and the annual stand-in all read
    if connection.vendor == "postgresql":
        assert read == expected
        assert dataclasses.astuple(read.quality_hours[0]) == dataclasses.astuple(expected.quality_hours[0])


def test_the_pages_show_the_same_figures_from_site_hours(fleets, org_a, client_a, monkeypatch):
    second_h100(fleets)
    query = {"start": START.date().isoformat(), "end": END.date().isoformat()}

    for path in ("/sustainability/", "/api/v1/reports/usage/", "/api/v1/reports/sustainability/"):
        read = client_a.get(path, query)
        expected = from_lines(monkeypatch, lambda path=path: client_a.get(path, query))
        assert read.status_code == expected.status_code == 200, path
        if path.startswith("/api/"):
            assert read.json() == expected.json(), path


@pytest.mark.parametrize("idle", [IdleTreatment.APART, IdleTreatment.SHARED])
def test_the_comparison_per_llm_model_from_site_hours_is_the_comparison_from_lines(fleets, org_a, monkeypatch, idle):
    """Whole lines (one sole endpoint), idle lines (no output token) and shared ones (two endpoints' output) in
    the site-hours of one site and of another: the site-hours keyed by the sole endpoint's LLM model and by whether
    the lines served output give what the lines give, the shared ones weighed from the lines either way."""
    second = second_h100(fleets)
    qwen = endpoint(second, "qwen-14b", "vllm")
    endpoint_hour(qwen, H2, prompt_tokens=40_000, requests=10)  # beside llama's output: llama's line still
    endpoint_hour(qwen, H3, prompt_tokens=100_000, generation_tokens=250_000, requests=400)  # shared
    EndpointHourUsage.objects.filter(node=fleets.rtx, hour_start=H2).update(generation_tokens=0, prompt_tokens=0)
    ledger_node_hours_compute(node_id=second.pk, hour_starts=HOURS)
    ledger_node_hours_compute(node_id=fleets.rtx.pk, hour_starts=[H2])  # idle: no output token
    rows = LedgerSiteHour.objects.filter(organization=org_a)
    assert rows.filter(sole_llm_model__isnull=False).exists() and rows.filter(no_output=True).exists()
    assert rows.filter(sole_llm_model__isnull=True, no_output=False).exists()

    def comparison():
        read = fleet_comparison(organization_ids=[org_a.pk], start=START, end=END, by_llm_model=True, idle=idle)
        return [dataclasses.replace(row.stats, trace_parts=()) for row in read]

    read, expected = comparison(), from_lines(monkeypatch, comparison)
    assert {(row.fleet_name, row.llm_model) for row in read} >= {("enterprise", "qwen-14b"), ("consumer", "unnamed")}
    assert [(row.fleet_name, row.gpu_model, row.llm_model) for row in read] == [
        (row.fleet_name, row.gpu_model, row.llm_model) for row in expected
    ]
    for mine, theirs in zip(read, expected, strict=True):
        assert mine.sums.totals.cost == pytest.approx(theirs.sums.totals.cost, abs=Decimal("1e-9"))
        assert mine.sums.totals.facility_kwh == pytest.approx(theirs.sums.totals.facility_kwh, abs=Decimal("1e-9"))
        assert mine.sums.totals.gpu_h == pytest.approx(theirs.sums.totals.gpu_h, abs=Decimal("1e-9"))
        assert mine.serving == theirs.serving
    if connection.vendor == "postgresql":
        assert read == expected


def test_a_node_moved_to_another_site_leaves_its_old_site_hours(fleets, org_a):
    moved = second_h100(fleets)
    other = SiteFactory(organization=org_a, name="sjc-9", grid_zone="US-CAL-CISO", country="US", pue=Decimal("1.2"))
    moved.site = other
    moved.save()

    ledger_node_hours_compute(node_id=moved.pk, hour_starts=HOURS)

    assert sorted(LedgerSiteHour.objects.filter(site=fleets.h100.site).values_list("lines", flat=True)) == [1, 1, 1]
    assert LedgerSiteHour.objects.filter(site=other).count() == 3
    assert site_hours_check() == []


def test_a_deleted_node_takes_its_lines_out_of_its_site_hours(fleets, org_a):
    second_h100(fleets).delete()

    assert sorted(LedgerSiteHour.objects.filter(site=fleets.h100.site).values_list("lines", flat=True)) == [1, 1, 1]
    assert site_hours_check() == []


def test_the_check_finds_lines_changed_by_hand_and_the_rebuild_mends_them(fleets, org_a, capsys):
    NodeHourLedger.objects.filter(node=fleets.h100, hour_start=HOURS[1]).update(cost=Decimal("99"))

    with pytest.raises(CommandError, match="differ from their lines"):
        call_command("ledger_site_hours", "--check")
    assert "cost" in capsys.readouterr().out

    call_command("ledger_site_hours")
    call_command("ledger_site_hours", "--check")
    assert "agree with the lines" in capsys.readouterr().out
    assert site_hours_rebuild(organization_ids=[org_a.pk]) == LedgerSiteHour.objects.filter(organization=org_a).count()


def booking_held_open(node):
    """A worker booking ``node``'s hours in a transaction it holds open (its lines stored, not committed) until
    the returned event is set; returns once they are stored: the thread, the event, and its errors."""
    stored, released = threading.Event(), threading.Event()
    errors = []

    def book():
        try:
            with transaction.atomic():
                ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)
                stored.set()
                released.wait(10)
        except Exception as error:  # noqa: BLE001 - reported by the caller
            errors.append(error)
        finally:
            connections.close_all()

    worker = threading.Thread(target=book)
    worker.start()
    assert stored.wait(30)
    return worker, released, errors


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite lets one writer at a time write")
@pytest.mark.django_db(transaction=True)
def test_two_workers_storing_lines_of_one_site_hour_at_once_lose_neither(fleets, org_a):
    """One worker's transaction holds its lines uncommitted while the other stores its own: the second waits for
    the site's lock, then sums both (without the lock it would sum the first node's old line)."""
    other = second_h100(fleets)
    NodeHourLedger.objects.filter(node__in=[fleets.h100, other]).update(cost=Decimal(0))
    site_hours_rebuild()
    worker, released, errors = booking_held_open(fleets.h100)
    second = threading.Thread(target=lambda: (ledger_node_hours_compute(node_id=other.pk, hour_starts=HOURS),
                                              connections.close_all()))  # fmt: skip
    second.start()
    second.join(1.0)
    assert second.is_alive()  # waiting for the first worker's site lock
    released.set()
    worker.join(30)
    second.join(30)

    assert errors == []
    assert site_hours_check() == []
    rows = LedgerSiteHour.objects.filter(site=fleets.h100.site)
    assert sorted(rows.values_list("hour_start", "lines")) == [(hour, 2) for hour in HOURS]  # one row each
    assert all(row.cost > 0 for row in rows)


@pytest.mark.citus
@pytest.mark.site_hours_marked  # the settle runs after each real commit, as in production
@pytest.mark.django_db(transaction=True)
def test_on_a_citus_coordinator_two_workers_storing_lines_of_one_site_hour_at_once_lose_neither(fleets, org_a):
    """One worker's node transaction holds its lines and marks uncommitted while the other books its own node and
    commits, and its settle sums the site-hours without the first's lines; the first's settle, after its commit,
    sums both. No worker waits on the other's node (each transaction stays on its node's shard)."""
    if not citus_coordinator():
        pytest.skip("Citus only: one server sums in the node's transaction (the test above)")
    other = second_h100(fleets)
    site_hours_settle()
    NodeHourLedger.objects.filter(node__in=[fleets.h100, other]).update(cost=Decimal(0))
    site_hours_rebuild()
    worker, released, errors = booking_held_open(fleets.h100)
    # when: the other node is booked meanwhile (its transaction commits, its settle runs)
    second = threading.Thread(target=lambda: (ledger_node_hours_compute(node_id=other.pk, hour_starts=HOURS),
                                              connections.close_all()))  # fmt: skip
    second.start()
    second.join(30)
    assert not second.is_alive()  # it waited for no lock of the first's
    # then: the site-hours hold the second's new lines and the first's old ones, and the first's marks wait
    rows = LedgerSiteHour.objects.filter(site=fleets.h100.site)
    assert sorted(rows.values_list("hour_start", "lines")) == [(hour, 2) for hour in HOURS]
    assert site_hours_pending(organization_ids=[org_a.pk]) == set()  # the first's marks are not committed yet
    released.set()
    worker.join(30)

    # then: after the first's commit and settle, both nodes' new lines are summed, nothing is left marked
    assert errors == []
    assert site_hours_pending(organization_ids=None) == set()
    assert site_hours_check() == []
    rows = LedgerSiteHour.objects.filter(site=fleets.h100.site)
    assert sorted(rows.values_list("hour_start", "lines")) == [(hour, 2) for hour in HOURS]  # one row each
    lines = NodeHourLedger.objects.filter(site=fleets.h100.site)
    assert all(row.cost == sum(line.cost for line in lines if line.hour_start == row.hour_start) for row in rows)
    assert all(row.cost > 0 for row in rows)


@pytest.mark.parametrize("split", [False, True], ids=["every node in scope 2", "a node chosen out of scope 2"])
def test_the_scope2_report_from_site_hours_is_the_report_from_lines(fleets, org_a, monkeypatch, split):
    """Scope 2's site-hours and factor basis read site-hours where the scope follows from the electricity
    status; a node chosen into another scope (its status shared with scope 2 nodes) makes them read lines."""
    other = second_h100(fleets)
    if split:  # a rented node, as the first H100, whose electricity the organization puts in Category 8
        NodeScope.objects.create(organization=org_a, node=other, electricity="category_8")
    filters = electricity_filters_since(organization_id=org_a.pk, since=START, start=START, end=END)
    assert (filters.period_by_status[ElectricityScope.SCOPE_2] is None) is split

    def report():
        return scope2_report(organization_id=org_a.pk, start=START, end=END)

    read, expected = report(), from_lines(monkeypatch, report)

    assert [site.site.pk for site in read.sites] == [site.site.pk for site in expected.sites]
    h100_site_kwh = read.sites[0].allocation.consumption_kwh  # the H100 site's, sorted first
    assert h100_site_kwh == (1 if split else 2) * 3 * Decimal("1.8")  # 1.8 kWh a node-hour
    assert read.bases.keys() == expected.bases.keys()
    kwh = [(site.allocation.consumption_kwh, site.allocation.location_co2e_g) for site in read.sites]
    assert all(consumed > 0 for consumed, _ in kwh)
    if connection.vendor == "postgresql":
        assert read.sites == expected.sites
        assert read.bases == expected.bases


@pytest.mark.citus
@pytest.mark.site_hours_marked
def test_on_a_citus_coordinator_a_booking_marks_its_site_hours_and_reports_read_their_lines_until_summed(
    fleets, org_a, monkeypatch
):
    if not citus_coordinator():
        pytest.skip("Citus only: one server sums the site-hours in the node's transaction")
    # given: each node's lines booked in its own transaction, which stays on the node's shard: the site-hours marked
    booked = set(NodeHourLedger.objects.filter(organization=org_a).values_list("site_id", "hour_start"))
    assert site_hours_pending(organization_ids=[org_a.pk]) == booked
    assert not LedgerSiteHour.objects.filter(organization=org_a).exists()
    assert not LedgerServedHour.objects.filter(organization_id=org_a.pk).exists()
    lines_read = [
        usage_row_output(row) for row in from_lines(monkeypatch, lambda: usage(org_a, Granularity.DAY, GroupBy.FLEET))
    ]

    # when: a report is read meanwhile
    with CaptureQueriesContext(connection) as marked_queries:
        marked_read = [usage_row_output(row) for row in usage(org_a, Granularity.DAY, GroupBy.FLEET)]
    # then: from the lines, the same figures
    assert marked_read == lines_read
    assert '"accounting_ledgersitehour"' not in " ".join(query["sql"] for query in marked_queries)

    # when: the marks are settled (after each node's commit, and at the end of every ledger run)
    assert site_hours_settle() == len(booked) + 3  # and org B's node's three hours
    # then: none is left, the rows agree with the lines, and the report reads them with the same figures
    assert site_hours_pending(organization_ids=None) == set()
    assert site_hours_check() == []
    with CaptureQueriesContext(connection) as summed_queries:
        summed_read = [usage_row_output(row) for row in usage(org_a, Granularity.DAY, GroupBy.FLEET)]
    assert '"accounting_ledgersitehour"' in " ".join(query["sql"] for query in summed_queries)
    assert summed_read == lines_read
    assert usage(org_a, Granularity.DAY, GroupBy.FLEET)[0].sums.totals.cost > 0


@pytest.mark.citus
@pytest.mark.site_hours_marked
def test_on_a_citus_coordinator_the_ledger_run_settles_marks_no_commit_settled(fleets, org_a, org_b):
    if not citus_coordinator():
        pytest.skip("Citus only: one server marks nothing")
    # given: marks left behind (a worker stopped between a node's commit and its settle)
    assert site_hours_pending(organization_ids=None)

    # when: the ledger runs, with nothing in its queue
    ledger_pending_run(now=END + 2 * HOUR)

    # then: every mark is settled and the rows agree with the lines
    assert site_hours_pending(organization_ids=None) == set()
    assert site_hours_check() == []
    assert LedgerSiteHour.objects.filter(organization=org_b).count() == len(HOURS)


@pytest.mark.citus
@pytest.mark.site_hours_marked
def test_on_a_citus_coordinator_a_site_whose_rows_fail_to_sum_keeps_its_marks_and_the_others_settle(
    fleets, org_a, org_b, monkeypatch
):
    if not citus_coordinator():
        pytest.skip("Citus only: one server marks nothing")
    failing = fleets.h100.site_id
    recompute = accounting.site_hours.site_hours_recompute

    def fails_for_one_site(site_hours):
        site_hours = list(site_hours)
        if any(site_id == failing for site_id, _ in site_hours):
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 / 0")  # a database error while that site's rows are summed
        return recompute(site_hours)

    monkeypatch.setattr("accounting.site_hours.site_hours_recompute", fails_for_one_site)
    # when: every mark is settled
    site_hours_settle()

    # then: the failing site's marks stay (its reports read its lines), the other organization's are summed
    assert {site_id for site_id, _ in site_hours_pending(organization_ids=None)} == {failing}
    assert site_hours_pending(organization_ids=[org_b.pk]) == set()
    assert LedgerSiteHour.objects.filter(organization=org_b).count() == len(HOURS)
    assert not LedgerSiteHour.objects.filter(site_id=failing).exists()
    read = [usage_row_output(row) for row in usage(org_a, Granularity.TOTAL, GroupBy.SITE)]
    assert len(read) == 2  # both sites, the failing one's from its lines
    assert read == [
        usage_row_output(row) for row in from_lines(monkeypatch, lambda: usage(org_a, Granularity.TOTAL, GroupBy.SITE))
    ]


def test_a_line_deleted_in_the_admin_leaves_its_site_hour(fleets, org_a, admin_client):
    other = second_h100(fleets)
    line = NodeHourLedger.objects.get(node=other, hour_start=HOURS[0])

    response = admin_client.post(reverse("admin:accounting_nodehourledger_delete", args=[line.pk]), {"post": "yes"})

    assert response.status_code == 302
    assert not NodeHourLedger.objects.filter(pk=line.pk).exists()
    assert LedgerSiteHour.objects.get(site=fleets.h100.site, hour_start=HOURS[0]).lines == 1
    assert site_hours_check() == []
