"""The contract, collector side: what the batching code builds is what ``wire.batch_decode`` accepts."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace

import pytest

from telemetry.collector import wire
from telemetry.collector.backend import GpuReading
from telemetry.collector.batching import BatchBuilder, SpoolState
from telemetry.collector.simserving import SimulatedVllmEndpoint
from telemetry.collector.simulated import SimulatedBackend, parse_simulate_spec
from telemetry.collector.spool import DEFAULT_MAX_BYTES, disk_bytes

START = 1_764_374_400.0  # 2025-11-29T00:00:00Z


def builder(**kwargs: int) -> BatchBuilder:
    return BatchBuilder(hostname="gpu-01", sample_interval_s=1.0, spool_state=lambda: SpoolState(3, 12_288), **kwargs)


def simulated_batch(seconds: int = 10, spec: str = "h100-sxm:8", **kwargs: object) -> tuple[BatchBuilder, bytes]:
    backend = SimulatedBackend(parse_simulate_spec(spec), hostname="gpu-01", **kwargs)  # type: ignore[arg-type]
    serving = SimulatedVllmEndpoint(backend, hostname="gpu-01", started_at=START)
    batches = builder()
    for s in range(seconds):
        batches.add_gpu(backend.read(START + s))
        if s % 5 == 0:
            batches.add_serving(serving.read(START + s))
    built = batches.build(sent_at=START + seconds)
    assert built is not None
    return batches, built.encode()


def test_a_simulated_batch_decodes_with_every_row_and_reference() -> None:
    _, body = simulated_batch()

    batch = wire.batch_decode(body, content_encoding="gzip")

    assert batch.gpu_row_count == 80 and batch.serving_row_count == 2
    assert len(batch.gpus) == 8 and batch.gpus[0].name == "NVIDIA H100 80GB HBM3"
    assert all(g.energy_counter_supported for g in batch.gpus)
    assert batch.endpoints[0].kind == "vllm" and len(batch.endpoints[0].ttft_bucket_bounds_s) == 22
    assert batch.endpoints[0].gpu_uuids == tuple(g.uuid for g in batch.gpus)
    assert batch.collector.hostname == "gpu-01" and batch.collector.dropped_batches == 3
    assert batch.collector.spool_bytes == 12_288 and batch.collector.sample_interval_s == 1.0
    assert batch.gpu_samples["ts"][:9] == [START] * 8 + [START + 1]


def test_counters_are_raw_and_cumulative_with_an_epoch_per_gpu() -> None:
    _, body = simulated_batch(seconds=3, spec="l4:1")

    batch = wire.batch_decode(body, content_encoding="gzip")

    energy = batch.gpu_samples["energy_j"]
    assert energy == sorted(energy) and energy[0] > 1e9  # since the simulated driver load, not since the batch
    assert batch.gpus[0].epoch.count("/") == 1 and "@" in batch.gpus[0].epoch


def test_a_gpu_whose_epoch_changes_within_a_batch_appears_twice() -> None:
    backend = SimulatedBackend(parse_simulate_spec("l4:1"), hostname="gpu-01", resets_every_s=3600)
    reload_at = backend.driver_loaded_at(START + 7200)
    batches = builder()
    for ts in (reload_at - 2, reload_at - 1, reload_at, reload_at + 1):
        batches.add_gpu(backend.read(ts))
    built = batches.build(sent_at=reload_at + 2)
    assert built is not None

    batch = wire.batch_decode(built.encode(), content_encoding="gzip")

    assert [g.uuid for g in batch.gpus] == [backend.gpus[0].uuid] * 2
    assert batch.gpus[0].epoch != batch.gpus[1].epoch
    assert batch.gpu_samples["gpu"] == [0, 0, 1, 1]


def test_failed_gpus_and_out_of_range_values_are_null_not_a_refused_batch() -> None:
    backend = SimulatedBackend(parse_simulate_spec("h100-sxm:1"), hostname="gpu-01")
    good = backend.read(START)[0]
    broken = replace(good, power_w=6553.5, temp_c=255, util_pct=101)
    failed = GpuReading(good.gpu, START + 1, error="GpuIsLost")
    batches = builder()
    batches.add_gpu([broken, failed])
    built = batches.build(sent_at=START + 2)
    assert built is not None

    batch = wire.batch_decode(built.encode(), content_encoding="gzip")

    assert batch.gpu_samples["power_w"] == [None, None] and batch.gpu_samples["temp_c"] == [None, None]
    assert batch.gpu_samples["util_pct"] == [None, None] and batch.gpu_samples["energy_j"][0] == good.energy_j


def test_a_second_reading_at_one_stamp_is_dropped_and_the_batch_is_accepted(caplog) -> None:
    backend = SimulatedBackend(parse_simulate_spec("h100-sxm:2"), hostname="gpu-01")
    batches = builder()
    batches.add_gpu(backend.read(START + 0.2301))
    batches.add_gpu(backend.read(START + 0.2304))  # a sample bunched against the last, or a clock stepped back
    batches.add_gpu(backend.read(START + 1.0))
    built = batches.build(sent_at=START + 2)
    assert built is not None

    batch = wire.batch_decode(built.encode(), content_encoding="gzip")

    assert batch.gpu_row_count == 4 and batch.gpu_samples["ts"] == [START + 0.23] * 2 + [START + 1.0] * 2
    assert "dropped" in caplog.text


def test_builder_reports_when_the_wire_row_limit_is_reached() -> None:
    backend = SimulatedBackend(parse_simulate_spec("rtx-4090:4"), hostname="gpu-01")
    batches = builder(max_gpu_rows=10)

    batches.add_gpu(backend.read(START))
    batches.add_gpu(backend.read(START + 1))

    assert not batches.has_room(gpu_rows=4) and batches.has_room(gpu_rows=2)
    assert batches.build(sent_at=START) is not None and batches.build(sent_at=START) is None
    assert wire.MAX_GPU_ROWS >= 8 * 60  # a 60 s backfill batch of 8 GPUs fits


def test_batch_is_plain_json_inside_gzip() -> None:
    _, body = simulated_batch(seconds=2, spec="l4:1")

    doc = json.loads(gzip.decompress(body))

    assert doc["version"] == wire.WIRE_VERSION and len(doc["batch_id"]) == 32
    assert set(doc["gpu_samples"]) == {"gpu", "ts", *wire.GPU_FIELDS}


def test_default_spool_holds_more_than_a_day_of_8_gpus_at_1_hz() -> None:
    """Sizing: 10 s batches of 8 simulated GPUs at 1 Hz with a vLLM endpoint scraped every 5 s."""
    bodies = [simulated_batch(seconds=10)[1] for _ in range(3)]
    per_batch = max(disk_bytes(len(body)) for body in bodies)  # on disk: whole 4 KiB blocks
    batches_per_day = 24 * 3600 // 10

    assert max(len(body) for body in bodies) < 4096  # one block per batch
    assert per_batch * batches_per_day * 1.0 < DEFAULT_MAX_BYTES
    assert DEFAULT_MAX_BYTES / (per_batch * batches_per_day) > 7  # more than a week, in fact


def test_a_gzip_body_inflates_to_its_json_and_several_members_are_one_body():
    body = b'{"version": 1, "gpus": []}'

    assert wire.body_inflate(gzip.compress(body), content_encoding="gzip") == body
    assert wire.body_inflate(gzip.compress(body[:10]) + gzip.compress(body[10:]), content_encoding="gzip") == body


def test_a_truncated_or_corrupt_gzip_body_is_refused_with_a_message():
    whole = gzip.compress(b'{"version": 1, "gpus": []}' * 50)

    for broken in (whole[: len(whole) // 2], b"\x1f\x8b" + bytes(40)):
        with pytest.raises(wire.WireError, match="not valid gzip") as refused:
            wire.body_inflate(broken, content_encoding="gzip")
        assert refused.value.status == 400


def test_a_gzip_bomb_is_refused_after_the_limit_without_inflating_it_whole():
    bomb = gzip.compress(bytes(wire.MAX_DECOMPRESSED_BYTES + 1024 * 1024), compresslevel=9)

    with pytest.raises(wire.WireError, match="inflates past") as refused:
        wire.body_inflate(bomb, content_encoding="gzip")
    assert refused.value.status == 413
