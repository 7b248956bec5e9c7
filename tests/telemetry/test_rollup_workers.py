"""The rollup on real workers: two at once on PostgreSQL, and the beat task on a Celery worker."""

from __future__ import annotations

import threading
import time

import orjson
import pytest
from django.db import connection, connections
from django.utils import timezone

from fleets.services import credential_issue
from telemetry import rollup
from telemetry.collector.wire import batch_decode
from telemetry.ingest import batch_ingest
from telemetry.models import GpuHourUsage, RollupPending
from telemetry.rollup import rollup_pending_run
from telemetry.tasks import rollup_pending_task
from tests.helpers.batches import make_batch
from tests.helpers.factories import NodeFactory
from tests.helpers.ingest import post
from tests.helpers.rollup import HOUR_S, table

H = (int(time.time()) // HOUR_S - 2) * HOUR_S


def node_batches(node_n: int, hours: int) -> list[dict]:
    """One batch per hour for ``hours`` hours before H, with GPUs of its own."""
    batches = []
    for hour in range(hours):
        batch = make_batch(gpus=2, seconds=61, start_s=H - hour * HOUR_S + 600, endpoint=True)
        for ref in batch["gpus"]:
            ref["uuid"] += f"-node{node_n}"
        batch["endpoints"][0]["gpu_uuids"] = [ref["uuid"] for ref in batch["gpus"]]
        batches.append(batch)
    return batches


def ingest(node, batch: dict) -> None:
    batch_ingest(node=node, batch=batch_decode(orjson.dumps(batch)), received_at=timezone.now())


def in_threads(count: int, target) -> list:
    """Run ``target`` in ``count`` threads released together; each closes its own connection."""
    barrier, results = threading.Barrier(count), [None] * count

    def worker(i: int) -> None:
        try:
            barrier.wait()
            results[i] = target()
        except Exception as error:  # noqa: BLE001 - re-raised in the test's thread below
            results[i] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite's database lock serializes writers; concurrent claiming (SKIP LOCKED) is PostgreSQL's",
)
def test_two_workers_at_once_claim_each_node_hour_once_and_give_the_table_of_one_run(transactional_db, monkeypatch):
    monkeypatch.setattr(rollup, "HOURS_PER_CLAIM", 2)  # many small claims, so the workers interleave
    nodes = [NodeFactory() for _ in range(4)]
    for n, node in enumerate(nodes):
        for batch in node_batches(n, hours=5):
            ingest(node, batch)
    marked = list(RollupPending.objects.values_list("node_id", "hour_start"))

    done = in_threads(2, lambda: rollup_pending_run(now=timezone.now()))

    assert sum(done) == len(marked) == 4 * 5
    assert RollupPending.objects.count() == 0
    concurrent = table()
    GpuHourUsage.objects.all().delete()
    RollupPending.objects.bulk_create(
        RollupPending(node_id=n, hour_start=h, marked_at=timezone.now()) for n, h in marked
    )
    assert rollup_pending_run(now=timezone.now()) == len(marked)
    assert table() == concurrent


@pytest.mark.celery_worker
def test_the_beat_task_rolls_up_on_a_real_worker(celery_worker_process, transactional_db, client):
    node = NodeFactory()
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600), credential_issue(node=node))

    assert rollup_pending_task.delay().get(timeout=60) == 1

    row = GpuHourUsage.objects.get()
    assert (row.energy_j, row.observed_s) == (3000, 10)
    assert RollupPending.objects.count() == 0
