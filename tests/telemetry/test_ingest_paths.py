"""Ingest's fast paths give the same answers as the careful ones: known GPUs, optimistic COPY, one-statement updates."""

from __future__ import annotations

import time

import orjson

from fleets.models import Gpu
from telemetry.models import CollectorStatus, GpuEpoch, GpuSample, RollupPending
from tests.telemetry.batches import gpu_ref, make_batch
from tests.telemetry.test_ingest import post
from tests.telemetry.wsgi_client import both_ways_in  # noqa: F401 - the client fixture: each test both ways in

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

    post(client, rebooted, token)

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


def test_a_batch_repeating_a_row_stores_it_once(client, node, token):
    batch = make_batch(gpus=1, seconds=3, start_s=NOW_S)
    for column in batch["gpu_samples"].values():
        column.append(column[0])

    response = post(client, batch, token)

    assert response.json()["stored"]["gpu_samples"] == 3
    assert response.json()["duplicates"]["gpu_samples"] == 1


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


def test_rows_built_from_columns_are_stored_exactly_as_row_by_row(client, node, token):
    """On PostgreSQL a new batch with no NULL is one binary COPY written by numpy; the careful path writes
    row by row. Both must store the same values: timestamps rounded to the microsecond as datetime does
    (halves to even), power as real, memory in MiB."""
    from django.db import transaction

    from telemetry import ingest
    from telemetry.collector.wire import batch_decode
    from telemetry.rawstore import GPU_COLUMNS, rows_insert

    batch = make_batch(gpus=2, seconds=6, start_s=NOW_S)
    samples = batch["gpu_samples"]
    fractions = [0.0, 0.5e-6, 1.5e-6, 0.3333333, 0.9999995, 0.123456789]
    samples["ts"] = [NOW_S + i // 2 + fractions[i // 2] for i in range(len(samples["ts"]))]
    samples["power_w"] = [412.123456789 + i for i in range(len(samples["ts"]))]
    samples["mem_used_bytes"] = [2**30 + i * 524_288 for i in range(len(samples["ts"]))]

    assert post(client, batch, token).status_code == 200

    other = Gpu.objects.bulk_create(
        [Gpu(node=node, uuid=f"GPU-other-{g}", index=8 + g, name="NVIDIA H100") for g in range(2)]
    )
    epochs = GpuEpoch.objects.bulk_create([GpuEpoch(gpu=gpu, epoch="boot-1/driver-1") for gpu in other])
    decoded = batch_decode(orjson.dumps(batch))
    with transaction.atomic():
        rows = ingest._gpu_rows(decoded.gpu_samples, [(g.pk, e.pk) for g, e in zip(other, epochs, strict=True)])
        rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)

    fields = ("ts", "energy_j", "mem_used_mib", "power_w", "util_pct", "mem_util_pct", "temp_c")

    def stored(gpus):
        return list(GpuSample.objects.filter(gpu__in=gpus).order_by("gpu__index", "ts").values_list(*fields))

    posted = stored(Gpu.objects.filter(uuid__in=[ref["uuid"] for ref in batch["gpus"]]))
    assert len(posted) == 12
    assert posted == stored(other)


def test_a_known_endpoint_is_found_in_one_read_and_a_changed_one_is_updated(client, node, token):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from telemetry.models import EndpointEpoch, ServingEndpoint

    post(client, make_batch(gpus=2, seconds=5, start_s=NOW_S, endpoint=True), token)
    endpoint = ServingEndpoint.objects.get()

    with CaptureQueriesContext(connection) as steady:
        response = post(client, make_batch(gpus=2, seconds=5, start_s=NOW_S + 5, endpoint=True), token)
    assert response.status_code == 200
    assert response.json()["stored"]["serving_samples"] > 0
    if connection.vendor == "postgresql":  # found by the pipelined lookup: no ORM query for it
        assert not [q for q in steady.captured_queries if "servingendpoint" in q["sql"]]

    changed = make_batch(gpus=1, seconds=5, start_s=NOW_S + 10, endpoint=True)
    changed["endpoints"][0]["model"] = "another-model"
    assert post(client, changed, token).status_code == 200

    endpoint.refresh_from_db()
    assert endpoint.model_name == "another-model"
    assert list(endpoint.gpus.values_list("uuid", flat=True)) == [changed["gpus"][0]["uuid"]]
    assert EndpointEpoch.objects.filter(endpoint=endpoint).count() == 1


def test_the_days_a_batch_needs_partitions_for_are_those_of_its_kept_samples():
    from datetime import UTC, datetime

    from telemetry import ingest
    from telemetry.collector import wire

    def days_of(*stamps, oldest_s=0.0):
        batch = make_batch(gpus=1, seconds=len(stamps))
        batch["gpu_samples"]["ts"] = list(stamps)
        decoded = wire.batch_decode(orjson.dumps(batch))
        return sorted(str(d) for d in ingest._batch_days(decoded, ingest._ts_bounds(decoded), oldest_s))

    day_s = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
    assert days_of(day_s + 10, day_s + 20) == ["2026-11-01"]
    assert days_of(day_s + 86390, day_s + 86410) == ["2026-11-01", "2026-11-02"]
    assert days_of(day_s + 10, day_s + 3 * 86400 + 10) == ["2026-11-01", "2026-11-04"]  # not the days between
    assert days_of(day_s + 10, day_s + 86400 + 10, oldest_s=day_s + 86400) == ["2026-11-02"]  # past retention
