"""Which hours of the ledger are final, and through when an organization's ledger is complete.

A node-hour is **final** once its hour is over and nothing is left to (re)compute
for it: no raw samples waiting for the rollup (``RollupPending``), no rewritten
usage waiting for the ledger (``UsageChanged``) and no line waiting to be
recomputed (``LedgerPending``; a line of the hour in progress leaves its hour
marked for its end, ``accounting.node_hour_lines``). Its ledger line and its usage
then agree, and a report's figure for it changes only if data or inputs for it
change.

``complete_through``: the end of the last complete hour (every node-hour of the
organizations final), walking back from the hour in progress over the hours that
are not. Reports and pages end their default period there and say it
(``complete_through``); a period that asks for later hours is answered with them
as they stand, and says so.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from accounting.models import LedgerPending, NodeHourLedger
from accounting.site_hours import site_hours_pending
from common.periods import HOUR
from common.scope import NO_FILTERS, ReportFilters
from grid.hours import floor_hour
from reports.selectors.lines import ledger_rows, site_hours_hold
from telemetry.models import RollupPending, UsageChanged

# How far back ``complete_through`` walks over hours that are not final: a ledger further behind than
# this (its worker stopped for days) is reported complete through this far back, no further.
COMPLETE_LOOKBACK = timedelta(days=7)
# The queues whose marks say a node-hour is not final yet.
_QUEUES = (RollupPending, UsageChanged, LedgerPending)


def complete_through(*, organization_ids: Collection[int], now: datetime) -> datetime:
    """The end (aware UTC, on the hour) of the organizations' last complete hour at ``now``."""
    through = floor_hour(now)
    bottom = through - COMPLETE_LOOKBACK
    pending: set[datetime] = set()
    for queue in _QUEUES:
        marked = _marked(queue, organization_ids).filter(hour_start__gte=bottom, hour_start__lt=through)
        pending.update(marked.order_by().values_list("hour_start", flat=True).distinct())
    while through > bottom and through - HOUR in pending:
        through -= HOUR
    return through


def _marked(queue: Any, organization_ids: Collection[int]) -> QuerySet[Any]:
    """The queue's marks of the organizations' nodes: another organization's backlog is not theirs to wait on."""
    return queue.objects.filter(node__fleet__organization_id__in=organization_ids)


# Up to this many marked node-hours before the hour in progress (all queues, the organizations' nodes) are
# left out by name: a plain filter PostgreSQL runs in parallel. NOT EXISTS per queue instead made an anti-join
# that probed each queue once per row (136k probes each for a quarter's lines: ~40 % of the query, even with
# the queues empty); past this many marks (a backfill being worked off), it is used still.
MARKS_LISTED = 200


def final_q(*, organization_ids: Collection[int], now: datetime, node: str, hour: str = "hour_start") -> Q:
    """The condition that the node-hour at the paths ``node`` (a node id of ``organization_ids``) and ``hour`` is
    final at ``now``.

    One query: the organizations' marked node-hours before ``now``'s hour, if few enough to name
    (``MARKS_LISTED``).
    """
    through = floor_hour(now)
    return _final(through, _marks_before(through, organization_ids), node=node, hour=hour)


def _final(through: datetime, marks: dict[datetime, set[int]] | None, *, node: str, hour: str = "hour_start") -> Q:
    """``final_q`` of the marks read (``None``: too many to name, each looked up per row)."""
    condition = Q(**{f"{hour}__lt": through})
    if marks is None:
        for queue in _QUEUES:
            marked = queue.objects.filter(node_id=OuterRef(node), hour_start=OuterRef(hour))
            condition &= Q(~Exists(marked))
        return condition
    for hour_start, node_ids in sorted(marks.items()):
        condition &= ~Q(**{hour: hour_start, f"{node}__in": sorted(node_ids)})
    return condition


def _marks_before(through: datetime, organization_ids: Collection[int]) -> dict[datetime, set[int]] | None:
    """The organizations' marked node-hours before ``through``, node ids by hour; ``None`` past ``MARKS_LISTED``
    of them."""
    first, *others = (
        _marked(queue, organization_ids).filter(hour_start__lt=through).values_list("hour_start", "node_id")
        for queue in _QUEUES
    )
    rows = list(first.union(*others)[: MARKS_LISTED + 1])
    if len(rows) > MARKS_LISTED:
        return None
    marks: dict[datetime, set[int]] = {}
    for hour_start, node_id in rows:
        marks.setdefault(hour_start, set()).add(node_id)
    return marks


@dataclass(frozen=True)
class FinalRows:
    """The final node-hours' lines of a period (``final_q``): ``lines``, and the same as row sets to sum
    (``row_sets``: each a queryset and whether it is of site-hours, ``ledger_rows``); ``condition``: ``final_q``
    on ``node_id`` and ``hour_start`` from the same marks, for the period's usage rows; ``through``: the end of
    the hours over at ``now``, and ``marks``: the marked node-hours before it that ``condition`` leaves out (node
    ids by hour; ``None``: too many to name, ``condition`` looks each up)."""

    lines: QuerySet[NodeHourLedger]
    row_sets: tuple[tuple[QuerySet[Any], bool], ...]
    condition: Q
    through: datetime
    marks: dict[datetime, set[int]] | None


def final_ledger_rows(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    now: datetime,
    keys: Iterable[str] = (),
    filters: ReportFilters = NO_FILTERS,
) -> FinalRows:
    """The final node-hours' lines of ``[start, end)``, and as row sets: the site-hours all of whose lines are
    final, and the final lines of the other site-hours (those holding a marked node-hour, or whose rows are not
    summed yet, ``site_hours_pending``: a few, as ``MARKS_LISTED`` allows). Where site-hours cannot serve
    ``keys`` and ``filters`` (``site_hours_hold``), or past ``MARKS_LISTED`` marks, the final lines alone. One
    query (the marks), as ``final_q``; on a Citus coordinator a second (the site-hours not summed yet).

    Sum each set grouped by the same keys and add the sums: the same figures as the final lines summed at once.
    """
    scope: dict[str, Any] = {"organization_ids": organization_ids, "start": start, "end": end, "filters": filters}
    through = floor_hour(now)
    marks = _marks_before(through, organization_ids)
    condition = _final(through, marks, node="node_id")
    lines = ledger_rows(**scope, site_hours=False).filter(condition)
    if marks is None or not site_hours_hold(keys=keys, filters=filters):
        return FinalRows(lines, ((lines, False),), condition, through, marks)
    # The site-hours whose rows are not summed yet (on a Citus coordinator, for a moment: accounting.site_hours).
    held = site_hours_pending(organization_ids=organization_ids, start=start, end=end)
    if len(held) > MARKS_LISTED:
        return FinalRows(lines, ((lines, False),), condition, through, marks)
    marked = Q(pk__in=[])
    for hour_start, node_ids in marks.items():
        marked |= Q(hour_start=hour_start, node_id__in=sorted(node_ids))
    # The site-hours a marked node-hour's line is summed in (the line's own site: a node may have moved since).
    lines_marked = NodeHourLedger.objects.filter(marked, organization_id__in=organization_ids)
    held |= set(lines_marked.values_list("site_id", "hour_start"))
    unsettled = Q(pk__in=[])
    for site_id, hour_start in sorted(held):
        unsettled |= Q(site_id=site_id, hour_start=hour_start)
    site_hours = ledger_rows(**scope, site_hours=True).filter(hour_start__lt=through).exclude(unsettled)
    return FinalRows(lines, ((site_hours, True), (lines.filter(unsettled), False)), condition, through, marks)
