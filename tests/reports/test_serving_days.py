"""The fleet comparison reads whole final node-days from the ledger's serving days, and gives what the hours give.

Two fleets (conftest's H100 and RTX nodes' kind) serve every hour from 2026-11-01 12:00 to 11-04 06:00 UTC
(66 hours: half a day, two whole days, a quarter day), the ledger computed for each. Day 11-02's hours carry
another TTFT layout, prefix-cache counts and inter-token latency; on 11-03 the RTX's cards are swapped (its
lines from then on keyed by the new GPU model). Every comparison (per fleet, per GPU model, per LLM model) must
equal the same comparison read from the hours alone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import RequestFactory

from accounting.admin import NodeHourLedgerAdmin
from accounting.models import LedgerServingDay, NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute, ledger_pending_run
from accounting.serving_days import serving_days_fill
from accounting.site_hours import site_hours_check, site_hours_rebuild
from reports.selectors import fleet_comparison
from reports.selectors import serving_days as split_module
from telemetry.models import EndpointHourUsage, UsageChanged
from tests.helpers.factories import UserFactory
from tests.helpers.reports import H100_BOUNDS, H100_TTFT_PER_HOUR, h100_node, hour_usage, live_grid, rtx_node

FIRST = datetime(2026, 11, 1, 12, tzinfo=UTC)
HOURS = [FIRST + timedelta(hours=i) for i in range(66)]
START, END = FIRST, FIRST + timedelta(hours=66)
NOV_2, NOV_3 = datetime(2026, 11, 2, tzinfo=UTC), datetime(2026, 11, 3, tzinfo=UTC)
NOW = datetime(2026, 12, 1, tzinfo=UTC)
OTHER_BOUNDS, OTHER_COUNTS = [0.1, 0.5, 1.0], [90, 6, 3, 1]

pytestmark = pytest.mark.django_db


@pytest.fixture
def served(org_a: Any) -> Any:
    live_grid(hours=tuple(HOURS))
    h100, rtx = h100_node(org_a), rtx_node(org_a)  # the RTX's own three report hours are outside this period
    for hour in HOURS:
        for node, gpus in ((h100, 1), (rtx, 3)):
            bounds, counts = (
                (OTHER_BOUNDS, OTHER_COUNTS) if NOV_2 <= hour < NOV_3 else (H100_BOUNDS, H100_TTFT_PER_HOUR)
            )
            hour_usage(
                node, hour, energies_j=(1_800_000.0,) * node.gpus.count(), utils=(70.0,) * node.gpus.count(),
                tokens=(400_000 + hour.hour, 200_000 + 7 * hour.hour), serving_gpus=gpus, ttft=(bounds, counts),
            )  # fmt: skip
    on_nov_2 = EndpointHourUsage.objects.filter(hour_start__gte=NOV_2, hour_start__lt=NOV_3)
    on_nov_2.filter(node=h100).update(cached_prompt_tokens=1_000, itl_bucket_bounds_s=[0.02], itl_bucket_counts=[9, 1])
    on_nov_2.filter(node=rtx, hour_start__hour__lt=6).update(ttft_sum_s=3.5)
    ledger_node_hours_compute(node_id=h100.pk, hour_starts=HOURS)
    ledger_node_hours_compute(node_id=rtx.pk, hour_starts=[hour for hour in HOURS if hour < NOV_3])
    rtx.gpus.update(name="NVIDIA RTX A6000")  # the cards swapped on 11-03: its lines from then on are keyed by them
    ledger_node_hours_compute(node_id=rtx.pk, hour_starts=[hour for hour in HOURS if hour >= NOV_3])
    return h100, rtx


def comparisons(org: Any, *, start: datetime = START, end: datetime = END, now: datetime = NOW) -> list[Any]:
    grouped = ({}, {"by_model": True}, {"by_llm_model": True})
    return [
        [row.stats for row in fleet_comparison(organization_ids=[org.pk], start=start, end=end, now=now, **by)]
        for by in grouped
    ]


def from_hours(monkeypatch: Any, org: Any, **period: Any) -> list[Any]:
    """The same comparisons with no serving day read: from the hours alone."""
    with monkeypatch.context() as patched:
        patched.setattr(split_module, "serving_days_in_use", lambda: False)
        return comparisons(org, **period)


def test_the_ledger_sums_each_endpoint_day_it_computes(served):
    h100, _ = served
    rows = LedgerServingDay.objects.filter(node=h100).order_by("day_start")
    assert [(row.day_start.day, row.endpoint_hours) for row in rows] == [(1, 12), (2, 24), (3, 24), (4, 6)]
    nov_2 = rows.get(day_start=NOV_2)
    assert nov_2.generation_tokens == sum(200_000 + 7 * h for h in range(24))
    assert nov_2.requests == 24 * sum(OTHER_COUNTS)
    assert nov_2.ttft_bucket_bounds_s == OTHER_BOUNDS
    assert nov_2.ttft_bucket_counts == [24 * count for count in OTHER_COUNTS]
    assert (nov_2.cached_prompt_tokens, nov_2.itl_bucket_counts) == (24_000, [24 * 9, 24])
    assert rows.get(day_start=NOV_3).cached_prompt_tokens is None
    assert site_hours_check() == []


def test_the_comparison_from_the_serving_days_equals_the_hours(served, org_a, monkeypatch):
    stored = comparisons(org_a)
    assert stored == from_hours(monkeypatch, org_a)
    per_model = {(row.fleet_name, row.gpu_model): row.serving for row in stored[1]}
    assert len(per_model) == 3  # the RTX fleet's two GPU models apart
    h100 = next(row.serving for row in stored[0] if row.fleet_name == "enterprise")
    assert h100.generation_tokens == sum(200_000 + 7 * hour.hour for hour in HOURS)
    assert h100.cached_prompt_tokens == 24_000
    assert h100.ttft is not None and h100.ttft.total == 66 * 100


@pytest.mark.parametrize(
    "period",
    [
        {"start": FIRST + timedelta(hours=5), "end": END - timedelta(hours=2)},
        {"now": NOV_3 + timedelta(hours=4, minutes=30)},  # 11-03 in progress: its final hours read one by one
        {"start": NOV_2, "end": NOV_3},
        {"start": NOV_2 + timedelta(hours=1), "end": NOV_3 - timedelta(hours=1)},
    ],
)
def test_part_days_and_the_day_in_progress_are_read_from_the_hours(served, org_a, monkeypatch, period):
    assert comparisons(org_a, **period) == from_hours(monkeypatch, org_a, **period)


def test_a_rewritten_hour_is_read_from_the_hours_until_the_ledger_sums_its_day_again(served, org_a, monkeypatch):
    h100, _ = served
    before = comparisons(org_a)[0]
    hour = NOV_2 + timedelta(hours=9)
    # As the rollup rewrites a node-hour: the usage and its mark, in one transaction.
    EndpointHourUsage.objects.filter(node=h100, hour_start=hour).update(generation_tokens=5_000_000)
    UsageChanged.objects.create(node=h100, hour_start=hour, changed_at=NOW - timedelta(days=1))
    marked = comparisons(org_a)
    assert marked == from_hours(monkeypatch, org_a)  # the marked hour left out, the rest of its day from the hours
    tokens = next(row.serving.generation_tokens for row in marked[0] if row.fleet_name == "enterprise")
    was = next(row.serving.generation_tokens for row in before if row.fleet_name == "enterprise")
    assert tokens == was - (200_000 + 7 * 9)
    ledger_pending_run(now=NOW)
    recomputed = comparisons(org_a)
    assert recomputed == from_hours(monkeypatch, org_a)
    tokens = next(row.serving.generation_tokens for row in recomputed[0] if row.fleet_name == "enterprise")
    assert tokens == was - (200_000 + 7 * 9) + 5_000_000
    assert site_hours_check() == []


def test_a_line_deleted_in_the_admin_leaves_its_hour_without_a_gpu_model(served, org_a, monkeypatch):
    h100, _ = served
    request = RequestFactory().post("/admin/")
    request.user = UserFactory(is_superuser=True, is_staff=True)
    lines = NodeHourLedger.objects.filter(node=h100, hour_start=NOV_2 + timedelta(hours=3))
    NodeHourLedgerAdmin(NodeHourLedger, None).delete_queryset(request, lines)
    unlined = LedgerServingDay.objects.get(node=h100, day_start=NOV_2, gpu_model__isnull=True)
    assert unlined.endpoint_hours == 1
    assert comparisons(org_a) == from_hours(monkeypatch, org_a)
    assert site_hours_check() == []


def test_the_check_names_a_tampered_day_and_the_rebuild_sums_it_again(served, org_a, monkeypatch):
    h100, _ = served
    LedgerServingDay.objects.filter(node=h100, day_start=NOV_2).update(generation_tokens=1)
    problems = site_hours_check()
    assert len(problems) == 1 and "generation_tokens 1 != hours'" in problems[0] and "2026-11-02" in problems[0]
    site_hours_rebuild()
    assert site_hours_check() == []
    assert comparisons(org_a) == from_hours(monkeypatch, org_a)


def test_the_migration_fills_the_days_of_the_stored_hours(served):
    LedgerServingDay.objects.all().delete()
    assert serving_days_fill(EndpointHourUsage, NodeHourLedger, LedgerServingDay) == LedgerServingDay.objects.count()
    assert LedgerServingDay.objects.count() > 0
    assert site_hours_check() == []
