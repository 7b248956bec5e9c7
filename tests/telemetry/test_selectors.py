"""What node pages read: a node's hourly usage over a period, and the hours its telemetry missed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.utils import timezone

from fleets.models import Gpu
from fleets.services import credential_issue
from telemetry.models import EndpointHourUsage, GpuHourUsage, ServingEndpoint
from telemetry.rollup import rollup_pending_run
from telemetry.selectors import NodeGap, endpoint_hour_usage_for_node, gpu_hour_usage_for_node, node_gaps
from tests.helpers.batches import gpu_ref, make_batch
from tests.helpers.factories import GpuFactory, NodeFactory
from tests.helpers.ingest import post
from tests.helpers.rollup import HOUR_S, H

HOUR = timedelta(hours=1)
T = datetime(2026, 11, 2, 10, tzinfo=UTC)


def gpu_usage(gpu: Gpu, hour: datetime, observed_s: float = 3600.0, **bridged: float) -> GpuHourUsage:
    return GpuHourUsage.objects.create(
        gpu=gpu, hour_start=hour, energy_j=1.0, energy_counter_j=1.0, energy_integrated_j=0.0,
        energy_method="counter", observed_s=observed_s, energy_covered_s=observed_s, busy_s=0.0, reset_count=0,
        computed_at=timezone.now(), **bridged,
    )  # fmt: skip


def endpoint_usage(endpoint: ServingEndpoint, hour: datetime) -> EndpointHourUsage:
    return EndpointHourUsage.objects.create(
        endpoint=endpoint, hour_start=hour, prompt_tokens=1, generation_tokens=2, requests=1,
        observed_s=3600.0, reset_count=0, computed_at=timezone.now(),
    )  # fmt: skip


def gpus_first_seen(node, count: int, at: datetime) -> list[Gpu]:
    gpus = [GpuFactory(node=node, index=i) for i in range(count)]
    Gpu.objects.filter(node=node).update(first_seen_at=at)
    return gpus


def test_gpu_hour_usage_is_the_nodes_own_within_the_period_by_hour_then_gpu(node, django_assert_num_queries):
    first, second = gpus_first_seen(node, 2, T)
    other_node_gpu = GpuFactory()
    expected = [gpu_usage(second, T), gpu_usage(first, T), gpu_usage(first, T + HOUR)]
    gpu_usage(first, T - HOUR)
    gpu_usage(first, T + 2 * HOUR)
    gpu_usage(other_node_gpu, T)

    with django_assert_num_queries(1):
        rows = list(gpu_hour_usage_for_node(node_id=node.pk, start=T, end=T + 2 * HOUR))
        labels = [(row.hour_start, row.gpu.index) for row in rows]

    assert [row.pk for row in rows] == [expected[1].pk, expected[0].pk, expected[2].pk]
    assert labels == [(T, 0), (T, 1), (T + HOUR, 0)]


def test_endpoint_hour_usage_is_the_nodes_own_within_the_period(node):
    endpoint = ServingEndpoint.objects.create(node=node, url="http://127.0.0.1:8000/metrics", kind="vllm")
    other = ServingEndpoint.objects.create(node=NodeFactory(), url="http://127.0.0.1:8000/metrics", kind="vllm")
    inside = endpoint_usage(endpoint, T)
    endpoint_usage(endpoint, T + HOUR)
    endpoint_usage(other, T)

    rows = list(endpoint_hour_usage_for_node(node_id=node.pk, start=T, end=T + HOUR))

    assert rows == [inside]
    assert rows[0].endpoint.url == "http://127.0.0.1:8000/metrics"


def test_node_gaps_are_hours_where_some_gpu_observed_less_than_all_of_it(node):
    first, second = gpus_first_seen(node, 2, T - 24 * HOUR)
    for gpu in (first, second):
        gpu_usage(gpu, T)  # full
    gpu_usage(first, T + HOUR)  # the second GPU has no row: missing whole
    gpu_usage(first, T + 2 * HOUR, observed_s=3000.0)
    gpu_usage(second, T + 2 * HOUR, observed_s=3500.0)
    # T + 3h: no row at all

    gaps = node_gaps(node_id=node.pk, start=T, end=T + 4 * HOUR)

    assert gaps == [NodeGap(T + HOUR, 3600.0), NodeGap(T + 2 * HOUR, 600.0, 3000.0), NodeGap(T + 3 * HOUR, 3600.0)]


def test_node_gaps_tell_measured_bridged_and_missing_apart(node):
    (gpu,) = gpus_first_seen(node, 1, T - 24 * HOUR)
    gpu_usage(gpu, T, observed_s=3510.0, bridged_s=90.0, bridged_gap_s=90.0)  # a 90 s pause, bridged
    gpu_usage(gpu, T + HOUR, observed_s=3000.0, bridged_s=500.0, bridged_gap_s=700.0)

    gaps = node_gaps(node_id=node.pk, start=T, end=T + 2 * HOUR)

    assert gaps == [NodeGap(T, 0.0, 3510.0, 90.0, 90.0), NodeGap(T + HOUR, 100.0, 3000.0, 500.0, 700.0)]


def test_a_gpu_added_later_opens_no_gaps_before_it_was_first_seen(node):
    (first,) = gpus_first_seen(node, 1, T - 24 * HOUR)
    late = GpuFactory(node=node, index=1)
    Gpu.objects.filter(pk=late.pk).update(first_seen_at=T + HOUR + timedelta(minutes=5))
    gpu_usage(first, T)
    gpu_usage(first, T + HOUR)

    assert node_gaps(node_id=node.pk, start=T, end=T + 2 * HOUR) == [NodeGap(T + HOUR, 3600.0)]


def test_node_gaps_cover_only_hours_starting_within_the_period(node):
    gpus_first_seen(node, 1, T - 24 * HOUR)

    gaps = node_gaps(node_id=node.pk, start=T + timedelta(minutes=1), end=T + 2 * HOUR + timedelta(minutes=1))

    assert [gap.hour_start for gap in gaps] == [T + HOUR, T + 2 * HOUR]


def test_node_gaps_find_the_hour_a_collector_missed_through_the_real_path(client, node):
    token = credential_issue(node=node)
    post(client, make_batch(gpus=2, seconds=11, start_s=H - 2 * HOUR_S + 600), token)
    # the host rebooted in between: new counter epochs, nothing bridges the gap
    rebooted = [gpu_ref(g, epoch="boot-2/driver-1") for g in range(2)]
    after = make_batch(gpus=2, seconds=11, start_s=H + 600)
    post(client, after | {"gpus": rebooted}, token)
    rollup_pending_run(now=timezone.now())

    gaps = node_gaps(
        node_id=node.pk,
        start=datetime.fromtimestamp(H - 2 * HOUR_S, tz=UTC),
        end=datetime.fromtimestamp(H + HOUR_S, tz=UTC),
    )

    assert [(int(g.hour_start.timestamp()), g.missing_s) for g in gaps] == [
        (H - 2 * HOUR_S, 3590.0),
        (H - HOUR_S, 3600.0),
        (H, 3590.0),
    ]
