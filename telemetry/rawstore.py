"""Bulk insert of raw sample rows that skips rows already stored, per database.

PostgreSQL: a binary ``COPY`` straight into the partitioned table. That is the
fastest way in, and the common case: a batch of new samples. If a row is
already stored (a re-sent batch), the primary key refuses the COPY, and the rows
go the careful way: COPY into a session-local staging table, then one
``INSERT ... SELECT ... ON CONFLICT DO NOTHING``, so stored rows are skipped.
By default the first COPY runs in a savepoint, so only it is undone; with
``new_rows_expected`` it runs bare and a refusal raises :class:`RowsAlreadyStored`
(the transaction is then aborted): ingest retries the whole batch the careful
way, and saves the savepoint's two round trips on every other request.
SQLite: ``INSERT OR IGNORE`` with ``executemany``. Both return the number of
rows actually inserted.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import orjson
import psycopg.errors
from django.db import IntegrityError, connection, models, transaction
from psycopg.types.json import Jsonb

from config.postgresql import prepared
from telemetry.models import GpuSample, ServingSample

GPU_COLUMNS = (
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
    "ts",
    "endpoint_id",
    "epoch_id",
    "prompt_tokens",
    "generation_tokens",
    "requests",
    "ttft_bucket_counts",
    "ttft_sum_s",
)
_MODELS: dict[str, type[models.Model]] = {"gpu_samples": GpuSample, "serving_samples": ServingSample}
_JSON_COLUMNS = {"ttft_bucket_counts"}


class RowsAlreadyStored(Exception):
    """A bare COPY met rows already stored; the transaction it ran in can only be rolled back."""


def rows_insert(
    *, kind: str, columns: Sequence[str], rows: list[tuple[Any, ...]], new_rows_expected: bool = False
) -> int:
    """Insert ``rows`` (tuples in ``columns`` order) into the raw table for ``kind``; return how many were new.

    ``ts`` values are aware datetimes; JSON columns hold Python lists (or ``None``).
    ``new_rows_expected``: on PostgreSQL, raise :class:`RowsAlreadyStored` instead
    of skipping stored rows (see the module's docstring).
    """
    model = _MODELS[kind]
    if connection.vendor != "postgresql":
        return _insert_plain(model._meta.db_table, columns, _json_encoded(columns, rows))
    if not rows:
        return 0
    types = _column_types(model, tuple(columns))
    if new_rows_expected:
        with _stored_rows_refused():
            _copy(model._meta.db_table, types, columns, rows)
        return len(rows)
    try:
        with transaction.atomic():  # a savepoint: a refused COPY undoes only itself
            _copy(model._meta.db_table, types, columns, rows)
    except psycopg.errors.UniqueViolation:
        return _insert_staged(model, types, columns, rows)
    return len(rows)


def _json_encoded(columns: Sequence[str], rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    positions = [i for i, name in enumerate(columns) if name in _JSON_COLUMNS]
    if not positions:
        return rows
    encoded = []
    for row in rows:
        values = list(row)
        for i in positions:
            values[i] = None if values[i] is None else orjson.dumps(values[i]).decode()
        encoded.append(tuple(values))
    return encoded


def _insert_staged(
    model: type[models.Model], types: list[str], columns: Sequence[str], rows: list[tuple[Any, ...]]
) -> int:
    table = model._meta.db_table
    stage = f"{table}_stage"
    column_list = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor:
        # Lives as long as the connection; emptied at each commit (and here, for a second call in one).
        cursor.execute(
            f'CREATE TEMP TABLE IF NOT EXISTS "{stage}" (LIKE "{table}" INCLUDING DEFAULTS) ON COMMIT DELETE ROWS'
        )
        cursor.execute(f'DELETE FROM "{stage}"')  # noqa: S608
    _copy(stage, types, columns, rows)
    with connection.cursor() as cursor:
        cursor.execute(
            f'INSERT INTO "{table}" ({column_list}) SELECT {column_list} FROM "{stage}" ON CONFLICT DO NOTHING'  # noqa: S608
        )
        return cursor.rowcount


@functools.cache
def _column_types(model: type[models.Model], columns: tuple[str, ...]) -> list[str]:
    """The PostgreSQL type of each column, from the model: a binary COPY must send exactly these."""
    fields = {field.column: field for field in model._meta.concrete_fields}
    return [str(fields[column].db_type(connection)) for column in columns]


def _copy(table: str, types: list[str], columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    json_positions = [i for i, name in enumerate(columns) if name in _JSON_COLUMNS]
    if json_positions:
        rows = [_json_wrapped(row, json_positions) for row in rows]
    with _copy_in(table, columns) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


@contextlib.contextmanager
def _copy_in(table: str, columns: Sequence[str]) -> Iterator[psycopg.Copy]:
    """A binary ``COPY ... FROM STDIN`` into ``table`` on Django's connection."""
    column_list = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor, cursor.cursor.copy(f'COPY "{table}" ({column_list}) FROM STDIN BINARY') as copy:
        yield copy


@contextlib.contextmanager
def _stored_rows_refused() -> Iterator[None]:
    """A bare COPY refused by the primary key: :class:`RowsAlreadyStored`."""
    try:
        yield
    except (psycopg.errors.UniqueViolation, IntegrityError) as error:
        if psycopg.errors.UniqueViolation not in (type(error), type(error.__cause__)):
            raise
        raise RowsAlreadyStored(str(error)) from error


def _json_wrapped(row: tuple[Any, ...], positions: list[int]) -> tuple[Any, ...]:
    values = list(row)
    for i in positions:
        if values[i] is not None:
            values[i] = Jsonb(values[i], dumps=_json_dumps)
    return tuple(values)


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _insert_plain(table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> int:
    adapt = connection.ops.adapt_datetimefield_value
    placeholders = ", ".join(["%s"] * len(columns))
    column_list = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor:
        cursor.executemany(
            f'INSERT OR IGNORE INTO "{table}" ({column_list}) VALUES ({placeholders})',  # noqa: S608
            [(adapt(row[0]), *row[1:]) for row in rows],
        )
        return cursor.rowcount


# --- GPU rows as one binary COPY payload built from columns --------------------------------------
# The binary COPY format (PostgreSQL's "COPY ... FORMAT binary"): a signature, then per row a field
# count and each field as its length and its big-endian value, then a trailer. With no NULL in a
# batch every row has the same layout, so numpy writes the whole payload from the columns, with no
# Python object per row (psycopg's write_row costs ~1 µs a row).
_BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # no flags, no header extension
_BINARY_TRAILER = b"\xff\xff"
_PG_EPOCH_S = 946_684_800  # 2000-01-01T00:00:00Z: binary timestamps count microseconds from it
_GPU_FIELDS = (  # GPU_COLUMNS' order and types
    ("ts", ">i8"),
    ("gpu_id", ">i4"),
    ("epoch_id", ">i4"),
    ("energy_j", ">f8"),
    ("mem_used_mib", ">i4"),
    ("power_w", ">f4"),
    ("util_pct", ">i2"),
    ("mem_util_pct", ">i2"),
    ("temp_c", ">i2"),
)
_GPU_RECORD = np.dtype(
    [("fields", ">i2")] + [pair for name, kind in _GPU_FIELDS for pair in ((f"{name}_len", ">i4"), (name, kind))]
)


def gpu_rows_copy_payload(
    *, ts_s: Sequence[float], gpu_ids: Any, epoch_ids: Any, values: Mapping[str, Any]
) -> bytes | None:
    """The binary COPY payload of GPU rows given as columns; ``None`` when a value is NULL.

    ``ts_s``: Unix seconds, turned into microseconds exactly as ``datetime.fromtimestamp``
    does (the fraction rounded half to even), so the rows equal those of :func:`rows_insert`.
    ``values``: energy_j, mem_used_mib, power_w, util_pct, mem_util_pct, temp_c.
    """
    if any(not isinstance(column, np.ndarray) and None in column for column in values.values()):
        return None
    records = np.empty(len(ts_s), _GPU_RECORD)
    records["fields"] = len(_GPU_FIELDS)
    for name, kind in _GPU_FIELDS:
        records[f"{name}_len"] = np.dtype(kind).itemsize
    seconds = np.asarray(ts_s, dtype=np.float64)
    whole = np.floor(seconds)
    records["ts"] = (whole.astype(np.int64) - _PG_EPOCH_S) * 1_000_000 + np.rint((seconds - whole) * 1e6).astype(
        np.int64
    )
    records["gpu_id"] = gpu_ids
    records["epoch_id"] = epoch_ids
    for name, _ in _GPU_FIELDS[3:]:
        records[name] = values[name]
    return _BINARY_SIGNATURE + records.tobytes() + _BINARY_TRAILER


def column_array(column: list[Any], low: float, high: float, integer: bool) -> np.ndarray | None:
    """A GPU sample column as a numpy array, when every value is an int (``integer``) or every value a finite
    float (not ``integer``), within ``[low, high]``; ``None`` for any other column (with a None, a bool, mixed
    kinds, ...), which the wire format then checks value by value, accepting or refusing it as ever.

    The ``column_array`` of :func:`telemetry.collector.wire.batch_decode`: the arrays it returns are
    the checked columns and the binary COPY's input at once.
    """
    kinds = set(map(type, column))
    if kinds != (_INT_ONLY if integer else _FLOAT_ONLY):
        return None
    try:
        values = np.array(column, dtype=np.int64 if integer else np.float64)
    except OverflowError:  # an int beyond 64 bits
        return None
    if not integer and not np.isfinite(values).all():
        return None
    if values.min() < low or values.max() > high:
        return None
    return values


_INT_ONLY = {int}
_FLOAT_ONLY = {float}


def gpu_rows_copy(payload: bytes, *, rows: int, last_in_transaction: bool = False) -> int:
    """COPY a :func:`gpu_rows_copy_payload` into the raw table, bare: :class:`RowsAlreadyStored`
    if a row is stored already (PostgreSQL only). Return ``rows``. ``last_in_transaction``: see
    :func:`config.postgresql.prepared.copy_in` (the commit in the same round trip)."""
    column_list = ", ".join(f'"{c}"' for c in GPU_COLUMNS)
    with _stored_rows_refused():
        prepared.copy_in(
            f'COPY "{GpuSample._meta.db_table}" ({column_list}) FROM STDIN BINARY',
            payload,
            last_in_transaction=last_in_transaction,
        )
    return rows
