"""Ingested nodes spread over both workers; a steady-state batch commits on one worker (no two-phase commit)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_pending_run
from fleets.services import credential_issue
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import make_batch, node_batch
from tests.helpers.citus_cluster import worker_of
from tests.helpers.factories import NodeFactory
from tests.helpers.ingest import post

NODES = 8


def workers_holding(table: str, column: str, values: list[int]) -> set[int]:
    """The worker ports whose shard of ``table`` holds a row for one of ``values`` (of ``column``)."""
    ports = set()
    with connection.cursor() as cursor:
        for value in values:
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}" = %s', [value])
            if cursor.fetchone()[0]:
                cursor.execute(
                    "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)"
                    " WHERE p.shardid = get_shard_id_for_distribution_column(%s, %s)",
                    [table, value],
                )
                ports.add(cursor.fetchone()[0])
    return ports


def worker_ports() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary'")
        return {port for (port,) in cursor.fetchall()}


def test_a_few_nodes_samples_queues_usage_and_ledger_lines_lie_on_both_workers(client: Any) -> None:
    # given: eight nodes or more, so that both workers have some (node ids run on from earlier tests; a run
    # of consecutive ids can hash to one worker), each reporting one batch of two GPUs and an endpoint
    nodes = [NodeFactory(hostname=f"gpu-{n:02d}") for n in range(NODES)]
    while len({worker_of("telemetry_rolluppending", node.pk) for node in nodes}) < 2:
        nodes.append(NodeFactory(hostname=f"gpu-{len(nodes):02d}"))
    for n, node in enumerate(nodes):
        response = post(client, node_batch(n), credential_issue(node=node))
        assert response.status_code == 200, response.content
    node_ids, both = [node.pk for node in nodes], worker_ports()
    assert len(both) == 2

    # then: their samples, statuses and rollup marks are on both workers
    for table in [
        "telemetry_gpusample", "telemetry_servingsample", "telemetry_collectorstatus", "telemetry_rolluppending"
    ]:  # fmt: skip
        assert workers_holding(table, "node_id", node_ids) == both, table

    # when: their hours are rolled up, then booked
    rollup_pending_run(now=timezone.now())
    for table in ["telemetry_gpuhourusage", "telemetry_endpointhourusage", "telemetry_usagechanged"]:
        assert workers_holding(table, "node_id", node_ids) == both, table
    ledger_pending_run(now=timezone.now())  # after the usage-changed marks the rollup made

    # then: every node has its line, and the lines are on both workers
    assert NodeHourLedger.objects.filter(node_id__in=node_ids).values("node_id").distinct().count() == len(nodes)
    assert workers_holding("accounting_nodehourledger", "node_id", node_ids) == both


def two_phase_commits() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_dist_transaction")
        return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_steady_state_batch_commits_on_one_worker(client: Any) -> None:
    # given: a node that has reported before (its GPUs, endpoint, epochs, status and day partitions exist)
    node = NodeFactory(hostname="gpu-steady")
    token = credential_issue(node=node)
    start_s = float(int(time.time()) - 20)
    first = post(client, make_batch(gpus=2, seconds=10, start_s=start_s, endpoint=True), token)
    assert first.status_code == 200, first.content
    before = two_phase_commits()

    # when: its next batch arrives, with new GPU and serving samples
    response = post(client, make_batch(gpus=2, seconds=10, start_s=start_s + 10, endpoint=True), token)

    # then: it was stored whole, and no transaction spanned two workers
    assert response.status_code == 200, response.content
    assert response.json()["stored"] == {"gpu_samples": 20, "serving_samples": 2}
    assert two_phase_commits() == before
