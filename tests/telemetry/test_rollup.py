"""Hourly rollup through the real path: batches posted to the ingest API, pending hours rolled up."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from fleets.services import credential_issue
from telemetry import rollup
from telemetry.collector import wire
from telemetry.energy import DEFAULT_GPU_MAX_GAP_S, DEFAULT_MAX_BRIDGE_S, DEFAULT_SERVING_MAX_GAP_S
from telemetry.models import EndpointHourUsage, GpuHourUsage, RollupPending, UsageChanged
from telemetry.rollup import rollup_node_hours, rollup_pending_run
from tests.helpers.batches import VLLM_BOUNDS, gpu_ref, make_batch
from tests.helpers.factories import GpuFactory, NodeFactory
from tests.helpers.ingest import post
from tests.helpers.rollup import HOUR_S, H, at, run, table

GIB = 2**30


def usage(gpu_index: int, hour_s: int) -> GpuHourUsage:
    return GpuHourUsage.objects.get(gpu__index=gpu_index, hour_start=at(hour_s))


def pending_hours() -> list[int]:
    return sorted(int(h.timestamp()) for h in RollupPending.objects.values_list("hour_start", flat=True))


def test_counter_rising_300_j_per_s_for_10_s_gives_3000_j_in_its_hour(client, node, token):
    post(client, make_batch(gpus=2, seconds=11, start_s=H + 600), token)

    assert run() == 1

    row = usage(0, H)
    assert (row.energy_j, row.energy_counter_j, row.energy_integrated_j, row.energy_method) == (
        3000,
        3000,
        0,
        "counter",
    )
    assert (row.observed_s, row.energy_covered_s, row.busy_s, row.reset_count) == (10, 10, 10, 0)
    assert (row.mean_power_w, row.max_power_w, row.mean_util_pct, row.mean_mem_util_pct) == (300, 300, 90, 40)
    assert (row.mean_temp_c, row.max_temp_c, row.max_mem_used_bytes) == (60, 60, 40 * GIB)
    assert (usage(1, H).energy_j, usage(1, H).max_power_w) == (3000, 301)
    assert GpuHourUsage.objects.count() == 2


def test_a_batch_crossing_an_hour_boundary_splits_by_time(client, node, token):
    post(client, make_batch(gpus=1, seconds=11, start_s=H - 5), token)

    assert run() == 2

    assert (usage(0, H - HOUR_S).energy_j, usage(0, H - HOUR_S).observed_s) == (1500, 5)
    assert (usage(0, H).energy_j, usage(0, H).observed_s) == (1500, 5)


def test_endpoint_hour_has_its_tokens_and_ttft_bucket_counts(client, node, token):
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True), token)

    run()

    row = EndpointHourUsage.objects.get()
    assert (row.prompt_tokens, row.generation_tokens, row.requests) == (10_000, 50_000, 100)
    assert row.ttft_bucket_bounds_s == VLLM_BOUNDS
    # Cumulative [0, 0, t, 2t, 10t, ...] from t=0 to t=10, per bucket, +Inf last.
    assert row.ttft_bucket_counts == [0, 0, 10, 10, 80, *[0] * 12]
    assert (row.observed_s, row.reset_count) == (10, 0)


def test_a_counter_restart_counts_the_new_reading_and_is_reported(client, node, token):
    batch = make_batch(gpus=1, seconds=0, start_s=H)
    batch["gpus"] = [gpu_ref(0, epoch="boot-1"), gpu_ref(0, epoch="boot-2")]
    samples = wire.empty_gpu_samples()
    readings = [(0, 5000.0), (0, 5300.0), (0, 5600.0), (1, 100.0), (1, 400.0)]  # (epoch, energy_j), 1 s apart
    for t, (epoch, energy_j) in enumerate(readings):
        for name, value in {"gpu": epoch, "ts": H + 60 + t, "energy_j": energy_j, "power_w": 300.0}.items():
            samples[name].append(value)
        for name in ("util_pct", "mem_util_pct", "mem_used_bytes", "temp_c"):
            samples[name].append(None)
    batch["gpu_samples"] = samples
    post(client, batch, token)

    run()

    row = usage(0, H)
    assert (row.energy_j, row.reset_count, row.mean_util_pct, row.busy_s) == (300 + 300 + 100 + 300, 1, None, 0)


def test_running_twice_gives_the_same_table(client, node, token):
    post(client, make_batch(gpus=2, seconds=30, start_s=H - 10, endpoint=True), token)
    run()
    first = table()

    rollup_node_hours(node_id=node.pk, hour_starts=[at(H - HOUR_S), at(H)])

    assert table() == first
    assert len(first) == 6


def test_a_resent_batch_marks_nothing(client, node, token):
    batch = make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True)
    post(client, batch, token)
    run()

    post(client, batch, token)

    assert RollupPending.objects.count() == 0


def test_new_samples_mark_the_hours_within_the_larger_max_gap(client, node, token, settings):
    settings.TELEMETRY_GPU_MAX_GAP_S, settings.TELEMETRY_SERVING_MAX_GAP_S = 30, 120

    post(client, make_batch(gpus=1, seconds=11, start_s=H + 100), token)
    assert pending_hours() == [H - HOUR_S, H]

    post(client, make_batch(gpus=1, seconds=11, start_s=H + 1800), token)
    assert pending_hours() == [H - HOUR_S, H]


def test_late_data_reopens_and_corrects_exactly_its_hour(client, node, token):
    late = H - 46 * HOUR_S  # 48 h ago
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600), token)
    post(client, make_batch(gpus=1, seconds=11, start_s=late + 600), token)
    run()
    recent_before = GpuHourUsage.objects.get(hour_start=at(H))

    post(client, make_batch(gpus=1, seconds=11, start_s=late + 610), token)  # its first sample is a duplicate

    assert pending_hours() == [late]
    assert run() == 1
    assert (usage(0, late).energy_j, usage(0, late).observed_s) == (6000, 20)
    recent = GpuHourUsage.objects.get(hour_start=at(H))
    assert (recent.computed_at, recent.energy_j) == (recent_before.computed_at, recent_before.energy_j)


def test_rolled_up_node_hours_are_marked_as_changed_for_accounting(client, node, token):
    post(client, make_batch(gpus=1, seconds=11, start_s=H - 5), token)
    before = timezone.now()

    run()

    changed = UsageChanged.objects.order_by("hour_start")
    assert [(c.node_id, int(c.hour_start.timestamp())) for c in changed] == [(node.pk, H - HOUR_S), (node.pk, H)]
    assert all(c.changed_at >= before for c in changed)
    assert RollupPending.objects.count() == 0


def test_an_hour_without_data_loses_its_usage_row_and_is_marked_changed(node):
    gpu = GpuFactory(node=node)
    GpuHourUsage.objects.create(
        gpu=gpu, hour_start=at(H), energy_j=1, energy_counter_j=1, energy_integrated_j=0, energy_method="counter",
        observed_s=1, energy_covered_s=1, busy_s=0, reset_count=0, computed_at=timezone.now(),
    )  # fmt: skip

    written = rollup_node_hours(node_id=node.pk, hour_starts=[at(H), at(H + HOUR_S)])

    assert written == 0
    assert GpuHourUsage.objects.count() == 0
    assert list(UsageChanged.objects.values_list("hour_start", flat=True)) == [at(H)]


def test_hours_that_are_not_whole_utc_hours_are_refused(node):
    with pytest.raises(ValueError, match="not a whole multiple"):
        rollup_node_hours(node_id=node.pk, hour_starts=[at(H + 60)])
    with pytest.raises(ValueError, match="not an aware datetime"):
        rollup_node_hours(node_id=node.pk, hour_starts=[datetime(2026, 1, 1)])  # noqa: DTZ001


def test_a_mark_newer_than_the_run_waits_for_the_next_run(client, node, token):
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600), token)

    assert rollup_pending_run(now=timezone.now() - timedelta(minutes=1)) == 0
    assert pending_hours() == [H]
    assert run() == 1


def test_a_failing_node_stays_pending_and_the_others_are_rolled_up(client, node, token, monkeypatch):
    other = NodeFactory(hostname="gpu-02")
    other_batch = make_batch(gpus=1, seconds=11, start_s=H + 600)
    other_batch["gpus"][0]["uuid"] = "GPU-other"
    post(client, other_batch, credential_issue(node=other))
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600), token)
    real = rollup.rollup_node_hours

    def failing_for_node(*, node_id, hour_starts):
        if node_id == node.pk:
            raise ValueError("bad data")
        return real(node_id=node_id, hour_starts=hour_starts)

    monkeypatch.setattr(rollup, "rollup_node_hours", failing_for_node)

    assert run() == 1
    assert list(RollupPending.objects.values_list("node_id", flat=True)) == [node.pk]
    assert list(GpuHourUsage.objects.values_list("gpu__node_id", flat=True)) == [other.pk]


def test_a_run_does_at_most_limit_node_hours_oldest_marks_first(client, node, token, monkeypatch):
    monkeypatch.setattr(rollup, "HOURS_PER_CLAIM", 2)
    for hour in range(4):  # marked newest hour first
        post(client, make_batch(gpus=1, seconds=11, start_s=H - hour * HOUR_S + 600), token)

    assert rollup_pending_run(now=timezone.now(), limit=3) == 3
    assert pending_hours() == [H - 3 * HOUR_S]
    assert run() == 1
    assert GpuHourUsage.objects.count() == 4


def test_max_gaps_default_to_the_pure_package(settings):
    assert (settings.TELEMETRY_GPU_MAX_GAP_S, settings.TELEMETRY_SERVING_MAX_GAP_S) == (
        DEFAULT_GPU_MAX_GAP_S,
        DEFAULT_SERVING_MAX_GAP_S,
    )
    assert settings.TELEMETRY_MAX_BRIDGE_S == DEFAULT_MAX_BRIDGE_S


def _with_serving_from(batch: dict, t0_s: float) -> dict:
    """The batch's serving counters as one server life since ``t0_s``: 1,250 generation, 500 prompt tokens a second."""
    serving = batch["serving_samples"]
    for i, ts in enumerate(serving["ts"]):
        serving["generation_tokens"][i] = round(1250 * (ts - t0_s))
        serving["prompt_tokens"][i] = round(500 * (ts - t0_s))
        serving["requests"][i] = round(ts - t0_s)
        serving["ttft_bucket_counts"][i] = [round(ts - t0_s)] * 17
    return batch


def test_a_90_s_pause_across_an_hour_boundary_is_bridged_by_the_counters(client, node, token):
    # given 10 s of samples to H+3570 (rolled up), a 90 s pause, then 10 s from H+3660;
    # the energy counter rises 300 J/s and the server 1,250 generation tokens/s throughout
    t0 = H + 3560.0
    post(client, _with_serving_from(make_batch(gpus=1, seconds=11, start_s=t0, endpoint=True), t0), token)
    run()
    post(client, _with_serving_from(make_batch(gpus=1, seconds=11, start_s=H + 3660, endpoint=True), t0), token)
    # when (the second batch marks only H+1; the gap it closes reaches back into H)
    run()
    # then H: 10 s observed (3,000 J) + 30 s bridged (9,000 J); H+1: 60 s bridged (18,000 J) + 10 s observed
    before, after = usage(0, H), usage(0, H + HOUR_S)
    assert (before.energy_j, before.energy_bridged_j, after.energy_j, after.energy_bridged_j) == (
        12_000,
        9_000,
        21_000,
        18_000,
    )
    assert (before.observed_s, before.bridged_s, after.observed_s, after.bridged_s) == (10, 30, 10, 60)
    assert before.bridged_gap_s == after.bridged_gap_s == 90
    # and the 112,500 generation tokens of the pause count, 30/90 of them in H
    tokens = dict(EndpointHourUsage.objects.values_list("hour_start", "generation_tokens"))
    assert (tokens[at(H)], tokens[at(H + HOUR_S)]) == (12_500 + 37_500, 75_000 + 12_500)
    endpoint_after = EndpointHourUsage.objects.get(hour_start=at(H + HOUR_S))
    assert (endpoint_after.observed_s, endpoint_after.bridged_s, endpoint_after.bridged_gap_s) == (10, 60, 90)
