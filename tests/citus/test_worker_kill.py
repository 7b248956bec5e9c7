"""A worker killed with ``kill -9`` while collectors send: every batch all or nothing, each stored exactly once.

Six collectors (the collector's own spool and uploader) send a batch every quarter second each to a
live server on the coordinator; one worker's postmaster and backends are killed with SIGKILL while
batches are on their way, then started again on the same data folder and port (crash recovery).
The batches that failed meanwhile are retried by their collectors until acknowledged.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from fleets.services import credential_issue
from telemetry.models import GpuSample
from tests.helpers import citus_cluster as cluster
from tests.helpers.factories import NodeFactory
from tests.helpers.processes import wait_for

NODES = 6


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_ingest_leaves_every_batch_whole_once_and_no_prepared_transaction(
    live_server: Any, tmp_path: Path
) -> None:
    # given: six nodes' collectors sending to the live server, their batches spread over both workers
    workers = cluster.workers()
    nodes = [NodeFactory(hostname=f"gpu-kill-{n:02d}") for n in range(NODES)]
    tokens = [credential_issue(node=node) for node in nodes]
    raw_table = GpuSample._meta.db_table
    holding = Counter(cluster.worker_of(raw_table, node.pk) for node in nodes)
    victim = next(w for w in workers if w.port == holding.most_common(1)[0][0])  # one that takes some batches
    with cluster.Collectors(live_server.url, nodes, tokens, tmp_path) as fleet:
        wait_for("the first batches acknowledged", lambda: fleet.acknowledged() >= 3 * NODES, 60, every_s=0.2)

        # when: one worker is killed with SIGKILL mid-ingest, and started again two seconds later
        try:
            cluster.kill9(victim)
            wait_for("a batch failed on the dead worker", lambda: fleet.failures() > 0, 30, every_s=0.1)
            time.sleep(2.0)
        finally:
            cluster.running(victim)  # the tests after this one need the whole cluster, whatever happened here
            connection.close()  # this session's cached connection to the killed worker is broken: open a new one
        (recovered,) = cluster.coordinator("SELECT recover_prepared_transactions()")[0]  # the maintenance daemon's
        acked = fleet.acknowledged()
        wait_for("batches acknowledged again", lambda: fleet.acknowledged() >= acked + 2 * NODES, 60, every_s=0.2)

        # then: with the collectors paused and Citus's recovery run, every batch is whole or absent
        fleet.stop_producing()
        fleet.pause()
        recovered += cluster.coordinator("SELECT recover_prepared_transactions()")[0][0]
        midway = fleet.all_or_nothing()
        assert cluster.prepared_transactions(workers) == {w.port: 0 for w in workers}

        # when: the collectors send what their spools still hold
        fleet.send().drain(timeout_s=120)

    # then: every batch stored exactly once, none in part, no prepared transaction left on any worker
    batches = fleet.batches()
    per_gpu, per_serving, distinct = fleet.stored()
    assert (midway, fleet.all_or_nothing()) == ([], [])
    assert fleet.failures() > 0  # the kill did fail batches, which the collectors sent again
    print(f"{batches} batches, {fleet.failures()} failed tries sent again, {recovered} prepared transactions recovered")
    assert sum(per_gpu.values()) == distinct == batches * cluster.ROWS_PER_BATCH
    assert sum(per_serving.values()) == batches * cluster.SERVING_PER_BATCH
    assert fleet.all_or_nothing() == []
    cluster.coordinator("SELECT recover_prepared_transactions()")
    assert cluster.prepared_transactions(workers) == {w.port: 0 for w in workers}
