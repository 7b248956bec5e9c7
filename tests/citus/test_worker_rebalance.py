"""A third worker added and the shards rebalanced onto it while collectors send: no sample lost or doubled.

The spare server of ``bin/test-citus`` (the extension created, not yet a node) is added with
``citus_add_node`` and ``citus_rebalance_start`` moves shards onto it while six collectors keep
sending; the shards are moved with ``shard_transfer_mode => 'block_writes'`` (the test cluster runs
``wal_level=replica``, and logical replication, Citus's non-blocking move, needs ``logical``): a
batch for a shard being moved waits for the move, then commits. Afterwards the spare is drained
and removed again, so that the tests after this one find the cluster of two workers they expect.
Not marked slow (a minute or two): it runs in CI's suite on a cluster (``make test-citus-ci``); elsewhere
it is skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleets.services import credential_issue
from tests.helpers import citus_cluster as cluster
from tests.helpers.factories import NodeFactory
from tests.helpers.processes import wait_for

NODES = 6


@pytest.fixture
def third_worker() -> Any:
    spare = cluster.spare()
    yield spare
    if cluster.coordinator("SELECT 1 FROM pg_dist_node WHERE nodeport = %s", [spare.port]):
        cluster.coordinator(
            "SELECT citus_drain_node('127.0.0.1', %s, shard_transfer_mode => 'block_writes')", [spare.port]
        )
        cluster.coordinator("SELECT citus_remove_node('127.0.0.1', %s)", [spare.port])


@pytest.mark.django_db(transaction=True)
def test_a_third_worker_added_and_rebalanced_while_collectors_send_loses_and_doubles_no_sample(
    live_server: Any, tmp_path: Path, third_worker: cluster.Server
) -> None:
    # given: six nodes' collectors sending to the live server, on two workers
    workers = cluster.workers()
    nodes = [NodeFactory(hostname=f"gpu-grow-{n:02d}") for n in range(NODES)]
    tokens = [credential_issue(node=node) for node in nodes]
    with cluster.Collectors(live_server.url, nodes, tokens, tmp_path) as fleet:
        wait_for("the first batches acknowledged", lambda: fleet.acknowledged() >= 3 * NODES, 60, every_s=0.2)

        # when: a third worker is added and the shards rebalanced, the collectors sending all along
        cluster.coordinator("SELECT citus_add_node('127.0.0.1', %s)", [third_worker.port])
        cluster.coordinator("SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')")
        during = fleet.acknowledged()
        cluster.coordinator("SELECT citus_rebalance_wait()")
        moved_while = fleet.acknowledged() - during
        acked = fleet.acknowledged()
        wait_for("batches acknowledged after", lambda: fleet.acknowledged() >= acked + 2 * NODES, 60, every_s=0.2)
        fleet.drain(timeout_s=120)

    # then: every batch stored exactly once, none in part
    batches = fleet.batches()
    per_gpu, per_serving, distinct = fleet.stored()
    assert sum(per_gpu.values()) == distinct == batches * cluster.ROWS_PER_BATCH
    assert sum(per_serving.values()) == batches * cluster.SERVING_PER_BATCH
    assert fleet.all_or_nothing() == []
    print(f"{batches} batches, {moved_while} acknowledged while the shards moved")

    # and: every distributed table (whatever its distribution column) now has shards on all three workers
    three = {w.port for w in workers} | {third_worker.port}
    placements = cluster.distributed_placements()
    assert placements, "no distributed table"
    assert {table: ports for table, ports in placements.items() if ports != three} == {}
    (state,) = cluster.coordinator("SELECT state FROM pg_dist_background_job ORDER BY job_id DESC LIMIT 1")[0]
    assert state == "finished"
