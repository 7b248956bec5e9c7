"""Insert raw sample rows, skipping rows already stored; return how many were new.

PostgreSQL: new rows (the usual case) go in with one binary ``COPY`` (psycopg's
``cursor.copy()``) in a savepoint (``transaction.atomic``). If the primary key,
(GPU, ts) or (endpoint, ts), refuses it (a re-sent batch), only the savepoint is
undone and the rows go with one ``INSERT ... SELECT * FROM unnest(<an array per
column>) ON CONFLICT DO NOTHING``, which skips the stored ones and counts the
others. The COPY is there for speed: it costs a fifth of the INSERT's CPU in
the web worker (psycopg writes COPY rows in C; it dumps array parameters in
Python) and half of PostgreSQL's. Nothing outlives the transaction, so a
transaction-pooling PgBouncer is fine. SQLite: ``INSERT ... ON CONFLICT DO
NOTHING`` row by row (``executemany``).

Citus: the rows go with multi-row ``INSERT ... VALUES`` statements instead. Where
every row's day is in heap storage (after the columnar horizon by a day: a
collector's steady state) with ``ON CONFLICT DO NOTHING``, counted from the
command's row count: one statement a kind, no savepoint. A batch that reaches a
day near or past the horizon goes in a savepoint without ``ON CONFLICT``, which a
day on columnar storage cannot take for a new row ("Columnar partitions"); if it
meets stored rows, it reads the keys the node already holds in the batch's span
(one router ``SELECT``) and inserts the others the same way (``_new_rows_insert``),
so a batch partly stored in such a day keeps its new samples as on heap. A
batch's rows are one node's and the tables are distributed by node, so each
statement is routed to the node's one shard and the batch commits there alone;
Citus commits a ``COPY`` or an ``INSERT ... SELECT`` with two-phase commit even
when it reaches one shard (docs/scaling.md, "Citus").
Citus reports a shard's unique violation as an internal error that keeps the
shard's message (``_already_stored``).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import orjson
import psycopg.errors
from django.db import IntegrityError, InternalError, connection, models, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from common.citus import citus_coordinator
from telemetry.columnar import columnar_cutoff
from telemetry.models import GpuSample, ServingSample

# Every row names its node (the tables' keys lead with it): ingest's rows are one node's.
GPU_COLUMNS = (
    "node_id",
    "ts",
    "gpu_id",
    "epoch_id",
    "energy_j",
    "mem_used_mib",
    "power_w",
    "util_pct",
    "mem_util_pct",
    "temp_c",
)
SERVING_COLUMNS = (
    "node_id",
    "ts",
    "endpoint_id",
    "epoch_id",
    "prompt_tokens",
    "generation_tokens",
    "requests",
    "ttft_bucket_counts",
    "ttft_sum_s",
    "cached_prompt_tokens",
    "itl_bucket_counts",
    "itl_sum_s",
)
_MODELS: dict[str, type[models.Model]] = {"gpu_samples": GpuSample, "serving_samples": ServingSample}
_JSON_COLUMNS = {"ttft_bucket_counts", "itl_bucket_counts"}


def rows_insert(*, kind: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> int:
    """Insert ``rows`` (tuples in ``columns`` order) into the raw table for ``kind``; return how many were new.

    ``ts`` values are aware datetimes; JSON columns hold Python lists (or ``None``); ``columns`` name
    ``node_id`` (the GPU's or endpoint's node), as the tables' keys lead with it.
    """
    if not rows:
        return 0
    model = _MODELS[kind]
    table, names = model._meta.db_table, ", ".join(f'"{c}"' for c in columns)
    if connection.vendor != "postgresql":
        adapt = connection.ops.adapt_datetimefield_value
        values = ", ".join(["%s"] * len(columns))
        at = columns.index("ts")
        with connection.cursor() as cursor:
            sql = f'INSERT INTO "{table}" ({names}) VALUES ({values}) ON CONFLICT DO NOTHING'  # noqa: S608
            cursor.executemany(
                sql, [(*row[:at], adapt(row[at]), *row[at + 1 :]) for row in _json_encoded(columns, rows, _json_text)]
            )
            return cursor.rowcount
    if citus_coordinator(connection):
        encoded = _json_encoded(columns, rows, _jsonb)
        if _heap_days_only(rows, columns.index("ts")):
            # The steady state: days in heap storage take ON CONFLICT, so one statement, no savepoint.
            return _values_insert(table, names, len(columns), encoded, skip_stored=True)
        try:
            # As the COPY below: plain INSERTs in a savepoint first; only a batch that met stored rows
            # reads what is stored (a late batch of new samples is stored at once, on heap or columnar).
            with transaction.atomic():
                return _values_insert(table, names, len(columns), encoded)
        except (IntegrityError, InternalError) as error:  # Django's, from its cursor: psycopg's is the cause
            if not _stored_met(error):
                raise
        return _new_rows_insert(model, table, names, columns, encoded)
    types = _column_types(model, tuple(columns))
    try:
        # A savepoint (the inner atomic): a refused COPY undoes itself only.
        with (
            transaction.atomic(),
            connection.cursor() as cursor,
            cursor.copy(f'COPY "{table}" ({names}) FROM STDIN BINARY') as copy,
        ):
            copy.set_types(types)
            for row in _json_encoded(columns, rows, _jsonb):
                copy.write_row(row)
        return len(rows)
    except (psycopg.errors.UniqueViolation, psycopg.errors.InternalError) as error:  # rows already stored: skip them
        if not _already_stored(error):
            raise
        arrays = ", ".join(f"%s::{db_type}[]" for db_type in types)
        with connection.cursor() as cursor:
            # Counted from RETURNING: Citus runs an INSERT ... SELECT through the coordinator and reports
            # the rows it offered as the command's count, stored or not.
            sql = f'INSERT INTO "{table}" ({names}) SELECT * FROM unnest({arrays}) ON CONFLICT DO NOTHING RETURNING 1'  # noqa: S608
            cursor.execute(
                sql, [list(column) for column in zip(*_json_encoded(columns, rows, _json_text), strict=True)]
            )
            return len(cursor.fetchall())


# PostgreSQL's bound on one statement's parameters.
_MAX_PARAMETERS = 65535


def _values_insert(
    table: str, names: str, width: int, rows: list[tuple[Any, ...]], *, skip_stored: bool = False
) -> int:
    """Insert ``rows`` with as few multi-row ``INSERT ... VALUES`` as the parameters' bound allows; return
    how many were stored: all of them (a row already stored refuses the statement), or with ``skip_stored``
    (``ON CONFLICT DO NOTHING``: heap days only) those not stored yet."""
    per_statement = _MAX_PARAMETERS // width
    row_sql = f"({', '.join(['%s'] * width)})"
    conflict = " ON CONFLICT DO NOTHING" if skip_stored else ""
    stored = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            sql = f'INSERT INTO "{table}" ({names}) VALUES {", ".join([row_sql] * len(chunk))}{conflict}'  # noqa: S608
            cursor.execute(sql, [value for row in chunk for value in row])
            stored += cursor.rowcount
    return stored


# Days this close to the columnar horizon are taken as possibly columnar: the partition job converts a day
# once it ends more than TELEMETRY_COLUMNAR_AFTER_DAYS ago, a day after the last one this lets through.
_HORIZON_MARGIN = timedelta(days=1)


def _heap_days_only(rows: list[tuple[Any, ...]], ts_at: int) -> bool:
    """Whether every row's day is in heap storage on a Citus coordinator: after the columnar horizon
    (``telemetry.columnar.columnar_cutoff``) by a day's margin, so no conversion can start before the
    batch commits. Such days take ``ON CONFLICT``; a columnar day refuses it for a new row."""
    return min(row[ts_at] for row in rows).date() >= columnar_cutoff(now=timezone.now() + _HORIZON_MARGIN)


# How many times a Citus batch that met stored rows reads them again when another batch of the node's
# stores some of its rows between that read and its insert (each try sees the other's rows once committed).
_NEW_ROWS_TRIES = 3


def _new_rows_insert(
    model: type[models.Model], table: str, names: str, columns: Sequence[str], rows: list[tuple[Any, ...]]
) -> int:
    """On Citus: insert the rows of ``rows`` whose key is not stored yet (the first of a key the batch holds
    twice); return how many. The stored keys are read from each node's shard over its rows' span (a router
    ``SELECT`` naming the node: ingest's rows are one node's), the new rows inserted plainly, each try in a
    savepoint. No ``ON CONFLICT``: a day in columnar storage cannot take it for a new row (docs/scaling.md,
    "Columnar partitions")."""
    key = [field.column for field in model._meta.pk_fields]  # (node_id, gpu_id or endpoint_id, ts)
    node_at, owner_at, ts_at = (columns.index(name) for name in key)
    sql = (
        f'SELECT "{key[1]}", "{key[2]}" FROM "{table}" WHERE "{key[0]}" = %s AND "{key[1]}" = ANY(%s) '  # noqa: S608
        f'AND "{key[2]}" BETWEEN %s AND %s'
    )
    by_node: dict[Any, list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows:
        by_node[row[node_at]].append(row)
    spans = [
        (node_id, sorted({row[owner_at] for row in of_node}), min(row[ts_at] for row in of_node),
         max(row[ts_at] for row in of_node))
        for node_id, of_node in by_node.items()
    ]  # fmt: skip
    for attempt in range(1, _NEW_ROWS_TRIES + 1):
        seen: set[tuple[Any, Any, Any]] = set()
        with connection.cursor() as cursor:
            for node_id, owners, first, last in spans:
                cursor.execute(sql, [node_id, owners, first, last])
                seen.update((node_id, owner, ts) for owner, ts in cursor.fetchall())
        new = []
        for row in rows:
            row_key = (row[node_at], row[owner_at], row[ts_at])
            if row_key not in seen:
                seen.add(row_key)
                new.append(row)
        if not new:
            return 0
        try:
            with transaction.atomic():
                return _values_insert(table, names, len(columns), new)
        except (IntegrityError, InternalError) as error:
            if attempt == _NEW_ROWS_TRIES or not _stored_met(error):
                raise
    return 0  # not reached: the last try returns or raises


def _stored_met(error: Exception) -> bool:
    """Whether Django's error from a plain insert is a row already stored (psycopg's error is its cause)."""
    return isinstance(error.__cause__, psycopg.Error) and _already_stored(error.__cause__)


def _already_stored(error: psycopg.Error) -> bool:
    """Whether a refused ``COPY`` met rows already stored: a unique violation.

    Citus passes a shard's unique violation on to the coordinator's ``COPY`` as an internal
    error (SQLSTATE XX000) that keeps the shard's message (docs/scaling.md, "Citus").
    """
    if isinstance(error, psycopg.errors.UniqueViolation):
        return True
    return (error.diag.message_primary or "").startswith("duplicate key value violates unique constraint")


@functools.cache
def _column_types(model: type[models.Model], columns: tuple[str, ...]) -> list[str]:
    """The PostgreSQL type of each column, from the model (``real`` power, ``smallint`` percentages, ...)."""
    fields = {field.column: field for field in model._meta.concrete_fields}
    return [str(fields[column].db_type(connection)) for column in columns]


def _json_encoded(
    columns: Sequence[str], rows: list[tuple[Any, ...]], encode: Callable[[Any], Any]
) -> list[tuple[Any, ...]]:
    """``rows`` with the values of JSON columns encoded (:func:`_json_text`, :func:`_jsonb`); ``None`` stays."""
    positions = [i for i, name in enumerate(columns) if name in _JSON_COLUMNS]
    if not positions:
        return rows
    encoded = []
    for row in rows:
        values = list(row)
        for i in positions:
            values[i] = None if values[i] is None else encode(values[i])
        encoded.append(tuple(values))
    return encoded


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def _jsonb(value: Any) -> Jsonb:
    return Jsonb(value, dumps=_json_text)
