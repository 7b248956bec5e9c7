"""The sustainability report reads a bounded number of queries, whatever the number of nodes and hours."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounting.node_hour_lines import ledger_node_hours_compute
from common.citus import citus_coordinator
from tests.helpers.factories import GpuFactory, NodeFactory, NodePriceFactory
from tests.helpers.reports import H3, HOURS, LONG_AGO, hour_usage

URL = "/api/v1/reports/sustainability/"
pytestmark = pytest.mark.django_db
# The request's session and scoping, the period's lines in five grouped scans, the Scope 2 report's sites,
# instruments and residual mixes, the inventory's inputs, the audit trail and the period's closing: 37 on
# two nodes (with the inventory's factor basis, the SCI block's requests and the disclosed matching; the Scope 2
# report's electricity scopes of the year to date and of the period from one scan, its factor basis by site
# from one, the lines' own factor basis from the report's grouped scan), a few more allowed for a section's own
# small reads.
# What must not happen is the count growing with the nodes or hours (the second assertion).
MAX_QUERIES = 40
# On a Citus coordinator each read that may take the site-hours first asks whether any of them is marked to be
# summed again (accounting.site_hours.site_hours_pending): seven in this report.
CITUS_PENDING_READS = 7


def sustainability_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(URL, {"period": "2026-Q4"})
    assert response.status_code == 200, response.content
    return len(queries)


def more_nodes_and_hours(fleets, *, nodes: int, hours: int) -> None:
    """``nodes`` more H100 nodes on the first node's site and fleet, and ``hours`` more hours of every node."""
    extra_hours = tuple(H3 + timedelta(hours=n) for n in range(1, hours + 1))
    added = []
    for n in range(nodes):
        node = NodeFactory(
            fleet=fleets.enterprise, site=fleets.h100.site, hostname=f"h100-{n}", tenure="rented",
            commissioned_at=LONG_AGO,
        )  # fmt: skip
        for index in range(2):
            GpuFactory(node=node, index=index, name="NVIDIA H100 80GB HBM3")
        NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=LONG_AGO)
        added.append(node)
    for node in (fleets.h100, fleets.rtx, *added):
        for hour in (HOURS if node in added else ()) + extra_hours:
            hour_usage(node, hour, energies_j=(1_800_000.0,) * node.gpus.count(), utils=(50.0,) * node.gpus.count(),
                       tokens=(1_000_000, 500_000), serving_gpus=1)  # fmt: skip
        ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS + extra_hours)


def test_the_report_reads_as_many_queries_for_five_times_the_nodes_and_hours(
    fleets, client_a, django_assert_max_num_queries
):
    # given: the report of two nodes over three hours
    with django_assert_max_num_queries(MAX_QUERIES + (CITUS_PENDING_READS if citus_coordinator() else 0)):
        small = sustainability_queries(client_a)

    # when: eight more nodes and twelve more hours
    more_nodes_and_hours(fleets, nodes=8, hours=12)

    # then: no more queries
    with django_assert_max_num_queries(small):
        sustainability_queries(client_a)
