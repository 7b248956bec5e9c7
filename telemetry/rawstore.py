"""Insert raw sample rows, skipping rows already stored: one statement per batch and sample kind.

PostgreSQL: ``INSERT ... SELECT * FROM unnest(<one array per column>) ON CONFLICT
DO NOTHING``: the whole batch in one statement and one round trip, whatever its
size, with no staging table (so nothing that lives in the session, which a
transaction-pooling PgBouncer would break). SQLite: ``INSERT ... ON CONFLICT DO
NOTHING`` row by row (``executemany``). Both return the number of rows actually
inserted: the primary key, (GPU, ts) or (endpoint, ts), skips the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import orjson
from django.db import connection, models

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


def rows_insert(*, kind: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> int:
    """Insert ``rows`` (tuples in ``columns`` order) into the raw table for ``kind``; return how many were new.

    ``ts`` values are aware datetimes; JSON columns hold Python lists (or ``None``).
    """
    if not rows:
        return 0
    model = _MODELS[kind]
    table, names = model._meta.db_table, ", ".join(f'"{c}"' for c in columns)
    rows = _json_encoded(columns, rows)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            arrays = ", ".join(f"%s::{db_type}[]" for db_type in _column_types(model, tuple(columns)))
            sql = f'INSERT INTO "{table}" ({names}) SELECT * FROM unnest({arrays}) ON CONFLICT DO NOTHING'  # noqa: S608
            cursor.execute(sql, [list(column) for column in zip(*rows, strict=True)])
        else:
            adapt = connection.ops.adapt_datetimefield_value
            values = ", ".join(["%s"] * len(columns))
            sql = f'INSERT INTO "{table}" ({names}) VALUES ({values}) ON CONFLICT DO NOTHING'  # noqa: S608
            cursor.executemany(sql, [(adapt(row[0]), *row[1:]) for row in rows])
        return cursor.rowcount


@functools.cache
def _column_types(model: type[models.Model], columns: tuple[str, ...]) -> list[str]:
    """The PostgreSQL type of each column, from the model (``real`` power, ``smallint`` percentages, ...)."""
    fields = {field.column: field for field in model._meta.concrete_fields}
    return [str(fields[column].db_type(connection)) for column in columns]


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
