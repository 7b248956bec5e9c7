"""The ledger's node-days: what a node's lines of one UTC day hold, summed beside them.

Two tables, both rewritten from a node's lines (and endpoint-hours) of a day in the transaction that stores or
deletes them (``accounting.node_hour_lines._lines_store``, ``accounting.admin``): ``node_days_recompute`` is
the one call that keeps both.

- ``LedgerNodeDay``: the node's lines of the day counted per organization and electricity status. The Scope 2
  boundary's query (``scope2.inventory.electricity_filters_since``: the distinct node and status of a year's
  lines) reads the whole days of its ranges from them and the part days from the lines
  (``scope2.inventory._node_statuses``). A line's status changes only when the line is stored again, so the rows
  are exact as they stand: nothing marks a node-day as not final.
- ``LedgerServingDay``: the node's endpoint-hours per day (``accounting.serving_days``).

Rows written any other way (a bench seed's SQL, a restore of the lines alone) are counted again with
``node_days_rebuild``, which ``accounting.site_hours.site_hours_rebuild`` (``manage.py ledger_site_hours``) runs,
as its check checks them. On a Citus coordinator both tables are distributed by node, beside the lines (accounting
migration 0035): a node's ledger transaction writes its own shard alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Count
from django.db.models.functions import TruncDay

from accounting.models import LedgerNodeDay, NodeHourLedger
from accounting.serving_days import (
    serving_days_check,
    serving_days_in_use,
    serving_days_rebuild,
    serving_days_recompute,
)
from common.periods import DAY, day_of

__all__ = [
    "node_days_check",
    "node_days_fill",
    "node_days_in_use",
    "node_days_rebuild",
    "node_days_recompute",
]

# A row's key: (node id, day start, organization id, electricity status).
_Key = tuple[int, datetime, int, str]


def node_days_in_use(using: Any = connection) -> bool:
    """Whether this database keeps (and the Scope 2 boundary reads) the node-days: every one, as the serving
    days (``serving_days_in_use``, the one switch for both)."""
    return serving_days_in_use(using)


def node_days_recompute(node_hours: Iterable[tuple[int, datetime]]) -> int:
    """Count again each ``(node id, hour start)``'s day, and sum its serving day again; return the rows written.

    Call it in the transaction that changed the lines or the usage (it opens one when called outside)."""
    node_hours = list(node_hours)
    written = 0
    with transaction.atomic():
        if node_days_in_use():
            days: dict[int, set[datetime]] = defaultdict(set)
            for node_id, hour in node_hours:
                days[node_id].add(day_of(hour))
            for node_id in sorted(days):
                wanted = sorted(days[node_id])
                LedgerNodeDay.objects.filter(node_id=node_id, day_start__in=wanted).delete()
                lines = NodeHourLedger.objects.filter(
                    node_id=node_id, hour_start__gte=wanted[0], hour_start__lt=wanted[-1] + DAY
                )
                counted = {key: n for key, n in _counted(lines).items() if key[1] in days[node_id]}
                written += _store(counted)
        written += serving_days_recompute(node_hours)
    return written


def node_days_rebuild(*, organization_ids: Collection[int] | None = None) -> int:
    """Count every row (of ``organization_ids``, or of all) again from the lines; sum the serving days again."""
    if not node_days_in_use():
        return 0
    with transaction.atomic():
        _of(LedgerNodeDay, organization_ids).delete()
        written = _store(_counted(_of(NodeHourLedger, organization_ids)))
        return written + serving_days_rebuild(organization_ids=organization_ids)


def node_days_fill(line_model: Any, row_model: Any, using: Any = connection) -> int:
    """Count every line of ``line_model`` into ``row_model`` (empty): the migration that adds the rows runs it
    on its own (historical) models."""
    if not node_days_in_use(using):
        return 0
    return _store(_counted(line_model.objects.all()), row_model)


def node_days_check(*, organization_ids: Collection[int] | None = None) -> list[str]:
    """How the rows differ from the lines, per node-day (nothing: they agree); then the serving days'."""
    if not node_days_in_use():
        return []
    stored = {
        (node_id, day, organization_id, status): n
        for node_id, day, organization_id, status, n in _of(LedgerNodeDay, organization_ids).values_list(
            "node_id", "day_start", "organization_id", "electricity_status", "lines"
        )
    }
    expected = _counted(_of(NodeHourLedger, organization_ids))
    problems = []
    for key in sorted(stored.keys() | expected.keys()):
        node_id, day, organization_id, status = key
        named = f"node {node_id} {day:%Y-%m-%d}, organization {organization_id}, electricity {status}"
        if stored.get(key) != expected.get(key):
            problems.append(f"node-day {named}: {stored.get(key, 0)} lines counted, {expected.get(key, 0)} held")
    return problems + serving_days_check(organization_ids=organization_ids)


def _counted(lines: Any) -> dict[_Key, int]:
    """The lines counted per node, UTC day, organization and electricity status."""
    rows = (
        lines.annotate(day=TruncDay("hour_start", tzinfo=UTC))
        .values("node_id", "day", "organization_id", "electricity_status")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("node_id", "day", "organization_id", "electricity_status", "n")
    )
    return {(node_id, day_of(day), organization_id, status): n for node_id, day, organization_id, status, n in rows}


def _store(counted: dict[_Key, int], row_model: Any = LedgerNodeDay) -> int:
    rows = [
        row_model(node_id=node_id, day_start=day, organization_id=organization_id, electricity_status=status, lines=n)
        for (node_id, day, organization_id, status), n in sorted(counted.items())
    ]
    row_model.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def _of(model: Any, organization_ids: Collection[int] | None) -> Any:
    rows = model.objects.all()
    return rows if organization_ids is None else rows.filter(organization_id__in=organization_ids)
