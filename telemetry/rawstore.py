"""Bulk insert of raw sample rows that skips rows already stored, per database.

PostgreSQL: COPY into a session-local staging table, then one
``INSERT ... SELECT ... ON CONFLICT DO NOTHING`` into the partitioned table;
COPY is the fastest way in, and the conflict clause makes re-sent rows no-ops.
SQLite: ``INSERT OR IGNORE`` with ``executemany``. Both return the number of
rows actually inserted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from django.db import connection

from telemetry.models import GpuSample, ServingSample

GPU_COLUMNS = (
    "ts",
    "gpu_id",
    "epoch_id",
    "energy_j",
    "mem_used_bytes",
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
_TABLES = {"gpu_samples": GpuSample._meta.db_table, "serving_samples": ServingSample._meta.db_table}
_JSON_COLUMNS = {"ttft_bucket_counts"}


def rows_insert(*, kind: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> int:
    """Insert ``rows`` (tuples in ``columns`` order) into the raw table for ``kind``; return how many were new."""
    table = _TABLES[kind]
    rows = _json_encoded(columns, rows)
    if connection.vendor == "postgresql":
        return _insert_postgres(table, columns, rows)
    return _insert_plain(table, columns, rows)


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


def _insert_postgres(table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> int:
    stage = f"{table}_stage"
    column_list = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor:
        # Lives as long as the connection; emptied at each commit.
        cursor.execute(
            f'CREATE TEMP TABLE IF NOT EXISTS "{stage}" (LIKE "{table}" INCLUDING DEFAULTS) ON COMMIT DELETE ROWS'
        )
        with cursor.cursor.copy(f'COPY "{stage}" ({column_list}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            f'INSERT INTO "{table}" ({column_list}) SELECT {column_list} FROM "{stage}" ON CONFLICT DO NOTHING'  # noqa: S608
        )
        inserted = cursor.rowcount
        cursor.execute(f'TRUNCATE "{stage}"')
    return inserted


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
