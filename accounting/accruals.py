"""Accruals: every held hour of every node gets its line, telemetry or not, however long ago.

A node costs money for every hour it is held (rent, depreciation, running cost),
used or silent. ``ledger_mark_held_hours`` marks for the ledger's queue each
complete held hour that has no line yet: from the node's commissioning (without a
commissioning date, from its own first price's ``valid_from``, else its fleet's
first default price's but not before the node was enrolled) to the end of the
last complete hour, or to its
decommissioning. The queue (``accounting.node_hour_lines.ledger_pending_run``)
computes them like any other hour, so a locked hour that gets its first line after
its lock is booked as a correction in the first open period, never written in
place (``accounting.corrections``), and an hour that fails is parked.

Bounded: at most ``per_node`` hours per node per run, oldest first, so a node
commissioned years ago catches up over a few runs, each of them small. An
organization whose marking fails is logged and left for the next run (the nodes
it had marked keep their marks: one transaction per node); the others go on.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.db.models import Min, QuerySet

from accounting.models import LedgerCorrection, LedgerPending, NodeHourLedger, NodePrice
from common.periods import HOUR
from fleets.models import Node
from grid.hours import floor_hour
from telemetry.parking import failure_about_the_data

logger = logging.getLogger(__name__)

# Held hours marked per node and run, oldest first: about seven months of one node, a few thousand queue rows
# (the queue computes 500 per transaction). A node commissioned three years ago catches up in six hourly runs.
HELD_HOURS_PER_NODE = 5_000


def ledger_mark_held_hours(*, now: datetime, per_node: int = HELD_HOURS_PER_NODE) -> int:
    """Mark up to ``per_node`` complete held hours of each node that have no line, no correction and no mark
    yet, oldest first; return how many were marked. Idempotent: a marked hour is not marked again."""
    end = floor_hour(now)  # the end of the last complete hour
    organizations = Node.objects.values_list("fleet__organization_id", flat=True).distinct().order_by()
    marked = 0
    for organization_id in sorted(organizations):
        try:
            marked += _organization_mark(organization_id, end=end, now=now, per_node=per_node)
        except Exception as error:
            if not failure_about_the_data(error):
                raise
            logger.exception("accrual: organization %s not marked this run, retried at the next", organization_id)
    return marked


def _organization_mark(organization_id: int, *, end: datetime, now: datetime, per_node: int) -> int:
    nodes = Node.objects.filter(fleet__organization_id=organization_id).exclude(commissioned_at__gte=end)
    marked = 0
    for node in nodes.order_by("pk"):
        span = _accrual_span(node, end=end)
        if span is not None:
            with transaction.atomic():  # one node's batch per transaction: a few thousand rows at most
                marked += _node_mark(node.pk, *span, now=now, per_node=per_node)
    return marked


def _accrual_span(node: Node, *, end: datetime) -> tuple[datetime, datetime] | None:
    """The complete hours ``[start, end)`` the node is held: from its commissioning (or first price) to ``end``
    or its decommissioning (its last, partly held hour included); None when it is held for none of them."""
    start = node.commissioned_at or _first_price_from(node)
    if start is None:
        return None
    if node.decommissioned_at is not None:
        end = min(end, _ceil_hour(node.decommissioned_at))
    start = floor_hour(start)
    return (start, end) if start < end else None


def _first_price_from(node: Node) -> datetime | None:
    """When a node without a commissioning date starts accruing: its own first price (a price dated for the
    node says it was held then), else its fleet's first default price but never before the node was enrolled
    (a fleet's default of 2024 does not make a node enrolled in 2026 cost money in 2024)."""
    own = NodePrice.objects.filter(node_id=node.pk).aggregate(first=Min("valid_from"))["first"]
    if own is not None:
        return own
    default = NodePrice.objects.filter(fleet_id=node.fleet_id, node__isnull=True).aggregate(first=Min("valid_from"))
    return None if default["first"] is None else max(default["first"], node.created_at)


def _ceil_hour(instant: datetime) -> datetime:
    floored = floor_hour(instant)
    return floored if floored == instant else floored + HOUR


def _node_mark(node_id: int, start: datetime, end: datetime, *, now: datetime, per_node: int) -> int:
    total = _hour_count(start, end)
    covered = _covered(node_id, start, end).count()
    if covered >= total:
        return 0
    first = _first_uncovered(node_id, start, end)
    window_end = min(end, first + HOUR * per_node)
    known = {hour for (hour,) in _covered(node_id, first, window_end)}
    missing = [hour for hour in _hours(first, window_end) if hour not in known]
    LedgerPending.objects.bulk_create(
        [LedgerPending(node_id=node_id, hour_start=hour, marked_at=now) for hour in missing],
        update_conflicts=True, unique_fields=["node", "hour_start"], update_fields=["marked_at"], batch_size=2000,
    )  # fmt: skip
    left = total - covered - len(missing)
    # A node catching up says how far it has got; a silent node's hour of the hour is not news.
    logger.log(logging.INFO if left else logging.DEBUG, "accrual: node %s, %s held hours marked from %s, %s left "
               "to catch up", node_id, len(missing), first.isoformat(), left)  # fmt: skip
    return len(missing)


def _covered(node_id: int, start: datetime, end: datetime) -> QuerySet:
    """The hours of ``[start, end)`` that need no mark: with a line, restated by a correction (a locked hour
    that got its first figures after its lock), or marked already. A union: each hour once."""
    lines = NodeHourLedger.objects.filter(node_id=node_id, hour_start__gte=start, hour_start__lt=end)
    corrections = LedgerCorrection.objects.filter(node_id=node_id, restated_hour__gte=start, restated_hour__lt=end)
    marks = LedgerPending.objects.filter(node_id=node_id, hour_start__gte=start, hour_start__lt=end)
    return (
        lines.values_list("hour_start")
        .order_by()
        .union(corrections.values_list("restated_hour").order_by(), marks.values_list("hour_start").order_by())
    )


def _first_uncovered(node_id: int, start: datetime, end: datetime) -> datetime:
    """The first hour of ``[start, end)`` not covered, by halving the span: a part is whole when it has as many
    covered hours as hours (one count each, never the span's rows)."""
    low, high = start, end
    while high - low > HOUR:
        middle = low + HOUR * (_hour_count(low, high) // 2)
        if _covered(node_id, low, middle).count() == _hour_count(low, middle):
            low = middle
        else:
            high = middle
    return low


def _hour_count(start: datetime, end: datetime) -> int:
    return (end - start) // HOUR


def _hours(start: datetime, end: datetime) -> list[datetime]:
    return [start + HOUR * n for n in range(_hour_count(start, end))]
