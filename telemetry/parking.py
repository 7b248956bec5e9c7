"""Node-hours that fail are parked, not retried in front of everyone else's.

The rollup and the ledger both claim a node's pending hours and compute them
in one transaction. :func:`hours_computed_or_parked` runs that computation in
a savepoint; if it fails because of the data (an overflow, a value no column
holds, a bug that one tenant's data triggers, a statement timeout), each hour
is tried alone in its own savepoint and the ones that still fail are parked
(``ParkedHour``) with their error: the queue skips them until ``retry_at``,
waiting twice as long after each failure. Failures that are not about the data
(the database unreachable, Celery's time limit) are raised: they end the run,
and every hour stays as it was.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError, connection, models, transaction
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import Exists, OuterRef

from telemetry.models import ParkedHour

logger = logging.getLogger(__name__)

# First wait two beat periods, then double: 2 min, 4 min, ... capped at 6 h, so a fixed
# bug or corrected row is picked up within hours while a hopeless hour costs ~4 attempts a day.
BACKOFF_FIRST = timedelta(minutes=2)
BACKOFF_MAX = timedelta(hours=6)
ERROR_MAX_CHARS = 2000
_STATEMENT_TIMEOUT_SQLSTATE = "57014"  # query_canceled: statement_timeout, a data-sized query


class ColumnRangeError(ValueError):
    """A computed value that its column cannot hold (an overflow, an infinite or NaN float)."""


@dataclass(frozen=True)
class NodeHourQueue:
    """A queue of node-hours to compute: rows with ``node``, ``hour_start`` and ``marked_at``."""

    model: type[models.Model]
    stage: str  # a common.stages.NodeHourStage
    node_order: tuple[str, ...]  # the row whose node is claimed next comes first in this order
    hour_order: tuple[str, ...]  # that node's hours are claimed in this order
    per_claim: int  # hours claimed, computed and unmarked in one transaction
    compute: Callable[[int, list[datetime]], Any]  # (node id, hour starts)


def queue_run(queue: NodeHourQueue, *, now: datetime, limit: int) -> int:
    """Compute up to ``limit`` hours marked at or before ``now``, node by node; return how many were done.

    Each node's claim is one transaction: on PostgreSQL its rows stay locked, so another
    worker skips them (``SKIP LOCKED``) and a re-mark waits for the commit. Hours that
    fail are parked, so the run goes on to the next node; a mark made after ``now``
    survives for the next run.
    """
    tried = done = 0
    while tried < limit:
        claimed = _claimed(queue, now=now, limit=min(queue.per_claim, limit - tried))
        if claimed is None:
            break
        tried, done = tried + claimed[0], done + claimed[1]
    return done


# Nodes read per look at a queue, before any is locked: more than the workers that claim at once,
# so a worker finds one that no other holds; past that many held nodes it reads the next ones.
CANDIDATE_NODES = 32


def _claimed(queue: NodeHourQueue, *, now: datetime, limit: int) -> tuple[int, int] | None:
    """Claim and compute one node's pending hours: ``(hours claimed, hours done)``; None when idle.

    The candidates (nodes with due, unparked hours, oldest first in the queue's order) are read
    without a lock; then one node's rows are locked (``rows_claim``), a statement that names the
    node: on Citus it runs on that node's shard alone, where ``SKIP LOCKED`` is allowed.
    """
    pending = not_parked(queue.model.objects.filter(marked_at__lte=now), stage=queue.stage, now=now)  # type: ignore[attr-defined]
    tried: set[int] = set()
    while candidates := queued_nodes(pending.exclude(node_id__in=tried), order=queue.node_order):
        for node_id in candidates:
            with transaction.atomic():
                rows = rows_claim(pending.filter(node_id=node_id).order_by(*queue.hour_order), limit)
                if rows:
                    return len(rows), _computed(queue, node_id=node_id, rows=rows, now=now)
        tried.update(candidates)
    return None


def _computed(queue: NodeHourQueue, *, node_id: int, rows: list[Any], now: datetime) -> int:
    """Compute the claimed ``rows`` of ``node_id`` and unmark those done (in the claim's transaction)."""
    done = hours_computed_or_parked(
        lambda hours: queue.compute(node_id, hours),
        node_id=node_id,
        hours=[row.hour_start for row in rows],
        stage=queue.stage,
        now=now,
    )
    # The claimed rows are locked until commit, so none was re-marked meanwhile; the
    # condition keeps this delete correct on its own should the claim ever be shortened.
    done_pks = [row.pk for row in rows if row.hour_start in done]
    queue.model.objects.filter(node_id=node_id, pk__in=done_pks, marked_at__lte=now).delete()  # type: ignore[attr-defined]
    return len(done)


def queued_nodes(queryset: models.QuerySet[Any], *, order: tuple[str, ...] = ("node_id",)) -> list[int]:
    """Up to ``CANDIDATE_NODES`` distinct nodes of a node-hour queue's rows, the first row's node first; no lock."""
    nodes: dict[int, None] = {}
    for node_id in queryset.order_by(*order).values_list("node_id", flat=True)[: CANDIDATE_NODES * 8]:
        nodes.setdefault(node_id)
        if len(nodes) == CANDIDATE_NODES:
            break
    return list(nodes)


def rows_claim(queryset: models.QuerySet[Any], limit: int) -> list[Any]:
    """Up to ``limit`` rows no other worker holds.

    ``SKIP LOCKED`` on PostgreSQL (inside the caller's transaction); SQLite's write lock serializes workers.
    On Citus the queryset must name one node (the distribution column): ``FOR UPDATE`` is refused
    on a statement that spans shards.
    """
    if connection.vendor == "postgresql":
        queryset = queryset.select_for_update(skip_locked=True)
    return list(queryset[:limit])


def backoff_delay(attempts: int) -> timedelta:
    """How long the queue skips an hour after its ``attempts``-th failure in a row."""
    return min(BACKOFF_FIRST * 2 ** min(attempts - 1, 32), BACKOFF_MAX)


def not_parked(pending: models.QuerySet[Any], *, stage: str, now: datetime) -> models.QuerySet[Any]:
    """The rows of a node-hour queue (``node``, ``hour_start``) that are not parked past ``now``."""
    parked = ParkedHour.objects.filter(
        node_id=OuterRef("node_id"), hour_start=OuterRef("hour_start"), stage=stage, retry_at__gt=now
    )
    return pending.exclude(Exists(parked))


def hours_computed_or_parked(
    compute: Callable[[list[datetime]], Any], *, node_id: int, hours: Sequence[datetime], stage: str, now: datetime
) -> list[datetime]:
    """Compute ``hours`` of ``node_id`` (together, or one by one if that fails); return those computed.

    Runs inside the caller's transaction; each attempt in its own savepoint, so a
    failed statement leaves the transaction usable. Hours that fail alone are parked.
    """
    failures: dict[datetime, Exception] = {}
    failure = _attempt(compute, list(hours))
    if failure is not None and len(hours) == 1:
        failures = {hours[0]: failure}
    elif failure is not None:
        outcomes = {hour: _attempt(compute, [hour]) for hour in hours}
        failures = {hour: error for hour, error in outcomes.items() if error is not None}
    done = [hour for hour in hours if hour not in failures]
    if failures:
        _park(node_id=node_id, failures=failures, stage=stage, now=now)
    ParkedHour.objects.filter(node_id=node_id, stage=stage, hour_start__in=done).delete()
    return done


def _attempt(compute: Callable[[list[datetime]], Any], hours: list[datetime]) -> Exception | None:
    try:
        with transaction.atomic():
            compute(hours)
    except Exception as error:
        if not failure_about_the_data(error):
            raise
        return error
    return None


def failure_about_the_data(error: Exception) -> bool:
    """Whether ``error`` is about what was computed, rather than the database or the worker being unable to run."""
    if isinstance(error, SoftTimeLimitExceeded | InterfaceError):
        return False
    if isinstance(error, OperationalError):
        return getattr(error.__cause__, "sqlstate", None) == _STATEMENT_TIMEOUT_SQLSTATE
    return connection.is_usable()


def _park(*, node_id: int, failures: dict[datetime, Exception], stage: str, now: datetime) -> None:
    previous = dict(
        ParkedHour.objects.filter(node_id=node_id, stage=stage, hour_start__in=list(failures)).values_list(
            "hour_start", "attempts"
        )
    )
    rows = []
    for hour, error in failures.items():
        attempts = previous.get(hour, 0) + 1
        logger.warning("%s of node %s hour %s parked (attempt %s): %r", stage, node_id, hour, attempts, error)
        rows.append(
            ParkedHour(
                node_id=node_id,
                hour_start=hour,
                stage=stage,
                error=error_text(error),
                attempts=attempts,
                failed_at=now,
                retry_at=now + backoff_delay(attempts),
            )
        )
    ParkedHour.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["node", "hour_start", "stage"],
        update_fields=["error", "attempts", "failed_at", "retry_at"],
    )


def error_text(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"[:ERROR_MAX_CHARS]


def columns_fit(rows: Sequence[models.Model]) -> None:
    """Raise :class:`ColumnRangeError` naming the first value of ``rows`` that its column cannot hold.

    Integers within the column type's range, floats finite,
    decimals finite and within ``max_digits - decimal_places`` integer digits.
    """
    for row in rows:
        for field in row._meta.concrete_fields:
            value = getattr(row, field.attname)
            if value is not None and not _fits(field, value):
                raise ColumnRangeError(
                    f"{type(row).__name__}.{field.name} = {value!r} is outside what its column holds"
                )


def _fits(field: models.Field, value: Any) -> bool:
    if isinstance(field, models.DecimalField):
        limit = Decimal(10) ** (field.max_digits - field.decimal_places)
        return bool(Decimal(value).is_finite() and abs(Decimal(value)) < limit)
    if isinstance(field, models.FloatField):
        return math.isfinite(value)
    if isinstance(field, models.IntegerField):
        # The portable ranges (PostgreSQL's), not SQLite's 64 bits for every type: same verdict on both.
        low, high = BaseDatabaseOperations.integer_field_ranges[field.get_internal_type()]
        return bool(low <= value <= high)
    return True
