"""Ingest of a collector's steady state and of its changes: known and new GPUs, endpoints, epochs, re-sends."""

from __future__ import annotations

import importlib
import time
from datetime import UTC, datetime

from django.apps import apps
from django.utils import timezone

from fleets.models import Gpu
from telemetry.models import (
    CollectorStatus,
    EndpointEpoch,
    GpuEpoch,
    GpuSample,
    NodeHourUsage,
    RollupPending,
    ServingEndpoint,
    ServingSample,
)
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import gpu_ref, make_batch
from tests.helpers.clients import both_ways_in  # noqa: F401 - the client fixture: each test both ways in
from tests.helpers.ingest import post

NOW_S = float(int(time.time()) - 600)


def test_a_known_gpu_that_reports_a_new_name_and_index_is_updated(client, node, token):
    post(client, make_batch(gpus=1, seconds=2, start_s=NOW_S), token)
    renamed = make_batch(gpus=1, seconds=2, start_s=NOW_S + 2)
    renamed["gpus"][0] |= {"name": "NVIDIA H200", "index": 3, "energy_counter_supported": False}

    response = post(client, renamed, token)

    assert response.status_code == 200
    gpu = Gpu.objects.get(node=node)
    assert (gpu.name, gpu.index, gpu.energy_counter_supported) == ("NVIDIA H200", 3, False)


def test_a_new_epoch_of_a_known_gpu_is_recorded_and_its_samples_point_to_it(client, node, token):
    post(client, make_batch(gpus=1, seconds=2, start_s=NOW_S), token)
    rebooted = make_batch(gpus=1, seconds=2, start_s=NOW_S + 2)
    rebooted["gpus"] = [gpu_ref(0, epoch="boot-2/driver-1")]
    rebooted["gpu_samples"]["energy_j"] = [300.0, 600.0]  # a new epoch: the counter restarted from zero

    assert post(client, rebooted, token).status_code == 200

    epochs = dict(GpuEpoch.objects.values_list("epoch", "id"))
    assert set(epochs) == {"boot-1/driver-1", "boot-2/driver-1"}
    by_second = dict(GpuSample.objects.values_list("ts", "epoch_id"))
    assert sorted(by_second.values()) == sorted([epochs["boot-1/driver-1"]] * 2 + [epochs["boot-2/driver-1"]] * 2)


def test_a_partial_resend_stores_only_the_new_rows(client, node, token):
    post(client, make_batch(gpus=2, seconds=5, start_s=NOW_S), token)

    response = post(client, make_batch(gpus=2, seconds=10, start_s=NOW_S), token)

    assert response.json()["stored"]["gpu_samples"] == 10
    assert response.json()["duplicates"]["gpu_samples"] == 10
    assert GpuSample.objects.count() == 20


def test_a_partial_resend_of_serving_samples_stores_the_new_ones_whole(client, node, token):
    post(client, make_batch(gpus=1, seconds=5, start_s=NOW_S, endpoint=True), token)  # one scrape
    batch = make_batch(gpus=1, seconds=15, start_s=NOW_S, endpoint=True)  # the same scrape and two new ones

    response = post(client, batch, token)

    assert (response.json()["stored"]["serving_samples"], response.json()["duplicates"]["serving_samples"]) == (2, 1)
    stored = list(ServingSample.objects.order_by("ts").values_list("ttft_bucket_counts", "requests"))
    sent = batch["serving_samples"]
    assert stored == list(zip(sent["ttft_bucket_counts"], sent["requests"], strict=True))


def test_collector_status_counts_every_batch_and_keeps_the_newest_sample(client, node, token):
    post(client, make_batch(gpus=1, seconds=3, start_s=NOW_S), token)
    post(client, make_batch(gpus=1, seconds=3, start_s=NOW_S - 300), token)  # a backfill of older data

    status = CollectorStatus.objects.get(node=node)
    assert status.batches_accepted == 2
    assert status.newest_sample_at.timestamp() == NOW_S + 2


def test_the_rollup_mark_spans_the_new_samples_hours(client, node, token, settings):
    start_s = (int(NOW_S) // 3600 - 3) * 3600 + 3590.0  # ten seconds before an hour boundary
    post(client, make_batch(gpus=1, seconds=20, start_s=start_s), token)

    hours = sorted(int(h.timestamp()) for h in RollupPending.objects.values_list("hour_start", flat=True))
    assert hours == [int(start_s) // 3600 * 3600, int(start_s) // 3600 * 3600 + 3600]


def node_meter(start_s: float, seconds: int) -> dict:
    """An IPMI meter read every 10 s for ``seconds`` from ``start_s``: 500 W."""
    stamps = [start_s + i for i in range(0, seconds, 10)]
    return {"method": "ipmi_dcmi", "epoch": "collector-1", "ts": stamps, "power_w": [500.0] * len(stamps),
            "energy_j": [None] * len(stamps)}  # fmt: skip


def hours_marked() -> list[int]:
    return sorted(int(h.timestamp()) for h in RollupPending.objects.values_list("hour_start", flat=True))


def test_a_node_meter_only_batch_is_marked_and_rolled_up(client, node, token):
    hour_s = (int(NOW_S) // 3600 - 3) * 3600
    batch = make_batch(gpus=0, seconds=0, start_s=float(hour_s)) | {"node_meter": node_meter(float(hour_s), 3600)}

    assert post(client, batch, token).json()["stored"]["node_meter"] == 360
    assert hour_s in hours_marked()
    rollup_pending_run(now=timezone.now())

    usage = NodeHourUsage.objects.get(node=node, hour_start=datetime.fromtimestamp(hour_s, UTC))
    assert (usage.boundary, usage.energy_covered_s, usage.energy_j) == ("node", 3590.0, 500.0 * 3590)


def test_the_rollup_mark_spans_the_node_meters_readings_beyond_the_gpu_samples(client, node, token):
    hour_s = (int(NOW_S) // 3600 - 4) * 3600
    meter_hour_s = hour_s + 2 * 3600  # two hours after the GPU samples
    batch = make_batch(gpus=1, seconds=3, start_s=hour_s + 1000.0) | {"node_meter": node_meter(meter_hour_s, 3600)}

    assert post(client, batch, token).status_code == 200
    assert {hour_s, meter_hour_s} <= set(hours_marked())
    rollup_pending_run(now=timezone.now())

    assert NodeHourUsage.objects.filter(node=node, hour_start=datetime.fromtimestamp(meter_hour_s, UTC)).exists()


def test_an_endpoint_epoch_keeps_the_gpus_it_was_declared_on_and_older_ones_get_their_endpoints(client, node, token):
    # given: an endpoint's epoch declared on two GPUs, then (the same epoch) on one
    assert post(client, make_batch(gpus=2, seconds=5, start_s=NOW_S, endpoint=True), token).status_code == 200
    assert post(client, make_batch(gpus=1, seconds=5, start_s=NOW_S + 5, endpoint=True), token).status_code == 200
    # then: the epoch keeps the most it was declared on (its samples of either declaration are bounded by it)
    assert EndpointEpoch.objects.get().gpu_count == 2

    # given: epochs stored before their count was kept (the endpoint on one GPU now, another on none)
    bare = ServingEndpoint.objects.create(node=node, url="http://127.0.0.1:9/metrics", kind="vllm")
    EndpointEpoch.objects.create(endpoint=bare, epoch="1", gpu_count=3)
    EndpointEpoch.objects.update(gpu_count=0)
    # when: the migration fills them
    importlib.import_module("telemetry.migrations.0017_endpointepoch_gpu_count").gpu_counts_fill(apps, None)
    # then: each has its endpoint's GPUs as they stand
    assert sorted(EndpointEpoch.objects.values_list("endpoint__url", "gpu_count")) == [
        ("http://127.0.0.1:8000/metrics", 1),
        ("http://127.0.0.1:9/metrics", 0),
    ]


def test_timestamps_are_stored_as_pythons_datetime_rounds_them_to_the_microsecond(client, node, token):
    batch = make_batch(gpus=1, seconds=6, start_s=NOW_S)
    fractions = [0.0, 0.5e-6, 1.5e-6, 0.3333333, 0.9999995, 0.123456789]
    batch["gpu_samples"]["ts"] = [NOW_S + i + fraction for i, fraction in enumerate(fractions)]
    batch["gpu_samples"]["energy_j"] = [1e6 + 300.0 * (ts - NOW_S) for ts in batch["gpu_samples"]["ts"]]  # 300 W
    batch["gpu_samples"]["mem_used_bytes"] = [2**30 + i * 524_288 for i in range(6)]  # half a MiB more each

    assert post(client, batch, token).status_code == 200

    stored = list(GpuSample.objects.order_by("ts").values_list("ts", "mem_used_mib"))
    sent = [datetime.fromtimestamp(ts, UTC) for ts in batch["gpu_samples"]["ts"]]  # Python's own rounding
    assert [ts for ts, _ in stored] == sent
    assert [ts.microsecond for ts in sent] == [0, 0, sent[2].microsecond, 333333, 0, 123457]  # .9999995: next second
    assert [mib for _, mib in stored] == [1024, 1025, 1025, 1026, 1026, 1027]  # halves of a MiB rounded up


def test_a_known_endpoint_is_found_and_a_changed_one_is_updated(client, node, token):
    from telemetry.models import EndpointEpoch, ServingEndpoint

    post(client, make_batch(gpus=2, seconds=5, start_s=NOW_S, endpoint=True), token)
    endpoint = ServingEndpoint.objects.get()

    response = post(client, make_batch(gpus=2, seconds=5, start_s=NOW_S + 5, endpoint=True), token)
    assert response.status_code == 200
    assert response.json()["stored"]["serving_samples"] > 0

    changed = make_batch(gpus=1, seconds=5, start_s=NOW_S + 10, endpoint=True)  # on one GPU now
    assert post(client, changed, token).status_code == 200

    endpoint.refresh_from_db()
    assert list(endpoint.gpus.values_list("uuid", flat=True)) == [changed["gpus"][0]["uuid"]]
    assert EndpointEpoch.objects.filter(endpoint=endpoint).count() == 1

    # Another model at the same URL is another endpoint (an endpoint is one LLM model).
    another = make_batch(gpus=1, seconds=5, start_s=NOW_S + 15, endpoint=True)
    another["endpoints"][0]["model"] = "another-model"
    assert post(client, another, token).status_code == 200
    assert ServingEndpoint.objects.get(model_name="another-model").url == endpoint.url
    assert ServingEndpoint.objects.filter(pk=endpoint.pk, model_name=endpoint.model_name).exists()
