"""Hourly usage rolled up on the cluster equals, to the last bit, what the pure functions give for the same samples.

On one PostgreSQL the SQL rollup is held to the pure function the same way (tests/telemetry/test_rollup_sql.py):
so the cluster's hours are one PostgreSQL's.
"""

from __future__ import annotations

import time
from typing import Any

from django.utils import timezone

from fleets.services import credential_issue
from telemetry import rollup
from telemetry.models import EndpointHourUsage, GpuHourUsage
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import make_batch
from tests.helpers.factories import NodeFactory
from tests.helpers.ingest import post
from tests.helpers.rollup import HOUR_S

NODES = 4
H = (int(time.time()) // HOUR_S - 3) * HOUR_S


def hour_batch(n: int, start_s: float) -> dict[str, Any]:
    """Two minutes of node ``n``'s two GPUs and endpoint, their power uneven (floats that do not sum exactly)."""
    batch = make_batch(gpus=2, seconds=120, start_s=start_s, endpoint=True)
    own = {ref["uuid"]: f"GPU-result{n:02d}-{g}" for g, ref in enumerate(batch["gpus"])}
    batch["gpus"] = [{**ref, "uuid": own[ref["uuid"]]} for ref in batch["gpus"]]
    for endpoint in batch["endpoints"]:
        endpoint["gpu_uuids"] = [own[uuid] for uuid in endpoint["gpu_uuids"]]
    samples = batch["gpu_samples"]
    samples["power_w"] = [300.0 + ((i * 37 + n) % 101) / 7 for i in range(len(samples["power_w"]))]
    return batch


def values(row: Any, model: type) -> dict[str, Any]:
    return {name: getattr(row, name) for name in rollup._value_fields(model) if name != "computed_at"}


def test_hourly_gpu_and_endpoint_usage_on_the_cluster_equal_the_pure_functions_to_the_last_bit(client: Any) -> None:
    # given: nodes on both workers, each reporting into two hours (one batch across the hour between them)
    nodes = [NodeFactory(hostname=f"gpu-r{n:02d}") for n in range(NODES)]
    for n, node in enumerate(nodes):
        token = credential_issue(node=node)
        for start_s in (H + 600, H + HOUR_S - 60, H + HOUR_S + 900):
            response = post(client, hour_batch(n, start_s), token)
            assert response.status_code == 200, response.content

    # when: the cluster rolls them up (GPU hours by the SQL rollup on each node's shard)
    rollup_pending_run(now=timezone.now())

    # then: every node's stored hours are the pure functions' on the same samples, every float to the last bit
    hours_s = [H - HOUR_S, H, H + HOUR_S, H + 2 * HOUR_S]
    for node in nodes:
        gpu_ids = list(node.gpus.values_list("pk", flat=True))
        expected_gpu = [
            values(rollup._gpu_usage_model(node.pk, gpu_id, usage, timezone.now()), GpuHourUsage)
            for gpu_id, usage in rollup._gpu_usages_python(node.pk, gpu_ids, hours_s)
        ]
        stored_gpu = [
            values(row, GpuHourUsage) for row in GpuHourUsage.objects.filter(node=node).order_by("gpu_id", "hour_start")
        ]
        expected_endpoint = [
            values(row, EndpointHourUsage) for row in rollup._endpoint_usage_rows(node.pk, hours_s, timezone.now())
        ]
        stored_endpoint = [
            values(row, EndpointHourUsage)
            for row in EndpointHourUsage.objects.filter(node=node).order_by("endpoint_id", "hour_start")
        ]
        assert len(stored_gpu) == 2 * 2 and len(stored_endpoint) == 2
        assert stored_gpu == expected_gpu
        assert stored_endpoint == expected_endpoint
