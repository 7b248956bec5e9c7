"""The contract, server side: what the collector's own batching code builds, the ingest API stores."""

from __future__ import annotations

import time

import pytest

from fleets.models import Gpu
from telemetry.collector.batching import BatchBuilder, SpoolState
from telemetry.collector.simserving import SimulatedVllmEndpoint
from telemetry.collector.simulated import SimulatedBackend, parse_simulate_spec
from telemetry.models import GpuSample, ServingEndpoint, ServingSample
from tests.helpers.clients import both_ways_in  # noqa: F401 - the client fixture: each test both ways in


@pytest.mark.parametrize("spec", ["h100-sxm:8", "rtx-4090:4", "l4:1"])
def test_a_batch_built_by_the_collector_is_stored_whole(client, node, token, spec):
    start = float(int(time.time()) - 60)
    backend = SimulatedBackend(parse_simulate_spec(spec), hostname="gpu-01", seed=11)
    serving = SimulatedVllmEndpoint(backend, hostname="gpu-01", started_at=start - 3600)
    builder = BatchBuilder(hostname="gpu-01", sample_interval_s=1.0, spool_state=lambda: SpoolState(0, 0))
    for second in range(10):
        builder.add_gpu(backend.read(start + second))
        if second % 5 == 0:
            builder.add_serving(serving.read(start + second))
    built = builder.build(sent_at=start + 10)

    response = client.post(
        "/api/v1/ingest/",
        data=built.encode(),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}", "Content-Encoding": "gzip"},
    )

    gpus = len(backend.gpus)
    assert response.status_code == 200, response.content
    assert response.json()["stored"] == {"gpu_samples": 10 * gpus, "serving_samples": 2}
    assert GpuSample.objects.count() == 10 * gpus and ServingSample.objects.count() == 2
    assert set(Gpu.objects.filter(node=node).values_list("uuid", flat=True)) == {g.uuid for g in backend.gpus}
    assert ServingEndpoint.objects.get(node=node).gpus.count() == gpus
