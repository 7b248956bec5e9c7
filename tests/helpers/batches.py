"""Build wire-format batches for tests, as a collector would."""

from __future__ import annotations

import time
import uuid
from typing import Any

from telemetry.collector import wire

VLLM_BOUNDS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]


def gpu_ref(n: int = 0, *, epoch: str = "boot-1/driver-1", supported: bool = True) -> dict[str, Any]:
    return {
        "uuid": f"GPU-test-{n:04d}",
        "index": n,
        "name": "NVIDIA H100 80GB HBM3",
        "energy_counter_supported": supported,
        "epoch": epoch,
    }


def make_batch(
    *, gpus: int = 2, seconds: int = 10, start_s: float | None = None, endpoint: bool = False, **overrides: Any
) -> dict[str, Any]:
    """``gpus`` GPUs sampled each second for ``seconds`` seconds, ending now unless ``start_s`` is given."""
    start_s = start_s if start_s is not None else float(int(time.time()) - seconds)
    samples = wire.empty_gpu_samples()
    for t in range(seconds):
        for g in range(gpus):
            _gpu_row(samples, g, start_s + t)
    batch: dict[str, Any] = {
        "version": wire.WIRE_VERSION,
        "batch_id": uuid.uuid4().hex,
        "sent_at": start_s + seconds,
        "collector": {"version": "test", "hostname": "gpu-01", "dropped_batches": 0, "spool_bytes": 0},
        "gpus": [gpu_ref(g) for g in range(gpus)],
        "gpu_samples": samples,
        "endpoints": [],
        "serving_samples": wire.empty_serving_samples(),
    }
    if endpoint:
        _add_endpoint(batch, gpus, start_s, seconds)
    batch.update(overrides)
    return batch


def _gpu_row(samples: dict[str, list[Any]], g: int, ts: float) -> None:
    samples["gpu"].append(g)
    samples["ts"].append(ts)
    samples["power_w"].append(300.0 + g)
    samples["energy_j"].append(1_000_000.0 + 300.0 * (ts - 1.7e9))
    samples["util_pct"].append(90)
    samples["mem_util_pct"].append(40)
    samples["mem_used_bytes"].append(40 * 2**30)
    samples["temp_c"].append(60)


def _add_endpoint(batch: dict[str, Any], gpus: int, start_s: float, seconds: int) -> None:
    batch["endpoints"] = [
        {
            "url": "http://127.0.0.1:8000/metrics",
            "kind": "vllm",
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "gpu_uuids": [gpu_ref(g)["uuid"] for g in range(gpus)],
            "epoch": "1764000000",
            "ttft_bucket_bounds_s": VLLM_BOUNDS,
        }
    ]
    serving = batch["serving_samples"]
    for t in range(0, seconds, 5):
        serving["endpoint"].append(0)
        serving["ts"].append(start_s + t)
        serving["prompt_tokens"].append(1000 * t)
        serving["generation_tokens"].append(5000 * t)
        serving["requests"].append(10 * t)
        serving["ttft_bucket_counts"].append([0, 0, t, 2 * t, *([10 * t] * 13)])
        serving["ttft_sum_s"].append(0.02 * t)


def node_batch(n: int, **shape: Any) -> dict[str, Any]:
    """A batch of two GPUs and an endpoint (or ``shape``, make_batch's) whose GPU UUIDs are node ``n``'s own."""
    batch = make_batch(**{"gpus": 2, "seconds": 10, "endpoint": True, **shape})
    own = {ref["uuid"]: f"GPU-node{n:02d}-{g}" for g, ref in enumerate(batch["gpus"])}
    batch["gpus"] = [{**ref, "uuid": own[ref["uuid"]]} for ref in batch["gpus"]]
    for endpoint in batch["endpoints"]:
        endpoint["gpu_uuids"] = [own[uuid] for uuid in endpoint["gpu_uuids"]]
    return batch
