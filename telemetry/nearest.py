"""The stored raw sample nearest a time, for many GPUs or endpoints of one node and many times, in one statement.

Ingest's stored-steps check (``telemetry.continuity``: each owner's last sample before the batch) and the
rollup's gap lookups (``telemetry.rollup``: the samples either side of each hour boundary) ask the same
question of the raw tables, a few dozen times per batch or claim. Each probe is one index lookup on
(node, owner, ts), ``ORDER BY ts LIMIT 1`` within the bridge limit (``TELEMETRY_MAX_BRIDGE_S``: no farther
apart does the rollup pair two samples); the probes go as one ``UNION ALL`` (on PostgreSQL the day
partitions each spans; on Citus the node's shard alone), so their count costs no statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, models
from django.utils.dateparse import parse_datetime

# Probes per statement: SQLite's bound on a compound SELECT's terms is 500 (SQLITE_MAX_COMPOUND_SELECT).
_PROBES_PER_STATEMENT = 400


@dataclass(frozen=True)
class Probe:
    """The sample of ``owner_id`` nearest ``at``: the last before it, or with ``later`` the first after it,
    within the bridge limit; ``inclusive``: a sample at ``at`` itself counts. ``at`` ``None``: the owner's
    newest sample (with ``later``, its first), however old."""

    owner_id: int
    at: datetime | None
    later: bool = False
    inclusive: bool = False


def nearest_rows(
    model: type[models.Model], *, node_id: int, owner_column: str, columns: Sequence[str], probes: Sequence[Probe]
) -> list[tuple[Any, ...] | None]:
    """Per probe, in their order: the nearest row of node ``node_id``'s raw table ``model`` within the bridge
    limit, as ``(ts, *columns)`` (``ts`` aware; other values as the cursor returns them), or ``None``."""
    found: list[tuple[Any, ...] | None] = [None] * len(probes)
    for start in range(0, len(probes), _PROBES_PER_STATEMENT):
        chunk = probes[start : start + _PROBES_PER_STATEMENT]
        sql, params = _statement(model._meta.db_table, node_id, owner_column, columns, chunk)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            for index, ts, *values in cursor.fetchall():
                found[start + index] = (_aware(ts), *values)
    return found


def _statement(
    table: str, node_id: int, owner_column: str, columns: Sequence[str], probes: Sequence[Probe]
) -> tuple[str, list[Any]]:
    bridge = timedelta(seconds=settings.TELEMETRY_MAX_BRIDGE_S)
    adapt = connection.ops.adapt_datetimefield_value
    selected = ", ".join(["ts", *columns])
    parts: list[str] = []
    params: list[Any] = []
    for index, probe in enumerate(probes):
        order = "ts" if probe.later else "ts DESC"
        within = ""
        values: list[Any] = [node_id, probe.owner_id]
        if probe.at is not None:
            near = (">" if probe.later else "<") + ("=" if probe.inclusive else "")
            far, limit = ("<=", probe.at + bridge) if probe.later else (">=", probe.at - bridge)
            within = f" AND ts {near} %s AND ts {far} %s"
            values += [adapt(probe.at), adapt(limit)]
        parts.append(
            f'SELECT * FROM (SELECT {index} AS probe, {selected} FROM "{table}" '  # noqa: S608 - the model's names
            f"WHERE node_id = %s AND {owner_column} = %s{within} ORDER BY {order} LIMIT 1) AS p{index}"
        )
        params += values
    return " UNION ALL ".join(parts), params


def _aware(ts: datetime | str) -> datetime:
    """A timestamp as the cursor returns it (SQLite: text, or naive UTC) as an aware datetime."""
    at = parse_datetime(ts) if isinstance(ts, str) else ts
    assert at is not None  # noqa: S101 - the column holds datetimes
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)
