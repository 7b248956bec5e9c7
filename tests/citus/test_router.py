"""Ingest, rollup, ledger and the node page name the node in every statement on a node table: each routes to one
shard (docs/scaling.md, "Citus"). For ingest, rollup and ledger Citus raises any statement that needs more than
one task (``citus.multi_task_query_log_level = 'error'``), so one that fans out over the shards fails the request
or call; the node page's statements are each planned (``EXPLAIN``) and their tasks counted."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.services import credential_issue
from telemetry.models import EndpointHourUsage, GpuHourUsage
from telemetry.rollup import rollup_node_hours
from tests.helpers.batches import node_batch
from tests.helpers.factories import MembershipFactory, NodeFactory, UserFactory
from tests.helpers.ingest import post


@contextmanager
def one_shard_statements_only() -> Iterator[None]:
    """Within it, Citus refuses every statement that is planned as more than one task (a multi-shard one)."""
    with connection.cursor() as cursor:
        cursor.execute("SET citus.multi_task_query_log_level = 'error'")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET citus.multi_task_query_log_level")


def multi_task_refused() -> None:
    """The check's own check: with the setting on, a statement over every node's shards is refused."""
    with one_shard_statements_only(), pytest.raises(Exception, match="multi-task"), transaction.atomic():
        GpuHourUsage.objects.count()


@pytest.mark.site_hours_marked  # its site-hours summed after the commit, in a transaction of their own
def test_a_steady_batch_its_rollup_ledger_and_node_page_route_each_statement_to_the_nodes_shard(
    client: Any,
) -> None:
    multi_task_refused()
    # given: a node that has reported once (GPUs, endpoint, epochs, status and partitions exist), last hour
    node = NodeFactory(hostname="gpu-router")
    token = credential_issue(node=node)
    hour = datetime.fromtimestamp(time.time(), tz=UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    first = post(client, node_batch(0, seconds=10, start_s=hour.timestamp() + 60), token)
    assert first.status_code == 200, first.content

    with one_shard_statements_only():
        # when: its next batch arrives
        with CaptureQueriesContext(connection) as batch_queries:
            response = post(client, node_batch(0, seconds=10, start_s=hour.timestamp() + 70), token)
        # then: stored whole, every statement on the node's shard, each sample kind with one INSERT and no
        # savepoint (a day in heap storage takes ON CONFLICT)
        assert response.status_code == 200, response.content
        assert response.json()["stored"] == {"gpu_samples": 20, "serving_samples": 2}
        # (the batch's own transaction is a savepoint in the test's: only one pair)
        statements = [query["sql"] for query in batch_queries]
        assert len([sql for sql in statements if sql.startswith("SAVEPOINT")]) == 1, statements
        raw = ('INSERT INTO "telemetry_gpusample"', 'INSERT INTO "telemetry_servingsample"')
        inserts = [sql for sql in statements if sql.startswith(raw)]
        assert len(inserts) == 2 and all(sql.endswith("ON CONFLICT DO NOTHING") for sql in inserts), inserts

        # when: the node's hour is rolled up and booked
        assert rollup_node_hours(node_id=node.pk, hour_starts=[hour]) == 3  # two GPU-hours, one endpoint-hour
        assert ledger_node_hours_compute(node_id=node.pk, hour_starts=[hour]) == 1

    # then: the hour's usage and line are there (read outside the check: counting is not a per-node read)
    assert GpuHourUsage.objects.filter(node_id=node.pk, hour_start=hour).count() == 2
    assert EndpointHourUsage.objects.filter(node_id=node.pk, hour_start=hour).count() == 1
    assert NodeHourLedger.objects.filter(node_id=node.pk, hour_start=hour).count() == 1

    # when: an engineer of the node's organization opens its page
    user = UserFactory()
    MembershipFactory(user=user, organization=node.fleet.organization, role="engineer")
    client.force_login(user)
    with CaptureQueriesContext(connection) as page_queries:
        page = client.get(f"/nodes/{node.pk}/")
    assert page.status_code == 200
    assert node.hostname in page.content.decode()
    # then: every statement it issued runs on one shard, but the organization's complete-through hour (the end
    # of the period presets every page shares: the three queues' marks of the organization's nodes)
    spread = {_queue_read(query["sql"]) or query["sql"] for query in page_queries if _tasks(query["sql"]) > 1}
    assert spread <= set(COMPLETE_THROUGH_QUEUES), spread


# The queues ``reports.selectors.complete.complete_through`` reads over an organization's nodes.
COMPLETE_THROUGH_QUEUES = ("telemetry_rolluppending", "telemetry_usagechanged", "accounting_ledgerpending")


def _queue_read(sql: str) -> str | None:
    """The queue ``sql`` reads the organization's marked hours of, if it is one of complete_through's reads."""
    for table in COMPLETE_THROUGH_QUEUES:
        if sql.startswith(f'SELECT DISTINCT "{table}"."hour_start" AS "hour_start" FROM "{table}" INNER JOIN'):
            return table
    return None


def _tasks(sql: str) -> int:
    """How many tasks (shards) Citus plans for ``sql``: 0 for a statement on coordinator tables alone."""
    if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
        return 0
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    return max((int(count) for count in re.findall(r"Task Count: (\d+)", plan)), default=0)
