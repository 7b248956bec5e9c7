"""Migration operations for the raw sample tables.

On PostgreSQL the tables are partitioned by day on ``ts`` (declarative
partitioning) with a BRIN index on ``ts`` for time-range scans across GPUs;
the primary key (gpu, ts) serves per-GPU ranges and idempotency. Django's own
DDL is reused for the columns, so the model stays the single definition.
Elsewhere (SQLite) the model is created as usual.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations


class CreatePartitionedModel(migrations.CreateModel):
    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
            return
        model = to_state.apps.get_model(app_label, self.name)
        sql, params = schema_editor.table_sql(model)
        table = schema_editor.quote_name(model._meta.db_table)
        schema_editor.execute(f'{sql} PARTITION BY RANGE ("ts")', params or None)
        schema_editor.execute(
            f'CREATE INDEX {schema_editor.quote_name(model._meta.db_table + "_ts_brin")} ON {table} USING brin ("ts")'
        )


# The raw GPU sample table as migration 0004 lays it out on PostgreSQL: 8-byte columns first, so a
# row is 40 bytes of data with no alignment padding, and a primary key packed full (fillfactor 100:
# each GPU's samples arrive in time order, so its index leaves fill and stay full).
RAW_GPU_COLUMNS = (
    ("ts", "timestamp with time zone NOT NULL"),
    ("energy_j", "double precision NULL"),
    ("gpu_id", "integer NOT NULL"),
    ("epoch_id", "integer NOT NULL"),
    ("mem_used_mib", "integer NULL"),
    ("power_w", "real NULL"),
    ("util_pct", "smallint NULL"),
    ("mem_util_pct", "smallint NULL"),
    ("temp_c", "smallint NULL"),
)
# Before 0004: memory in bytes, columns in the order Django created them.
RAW_GPU_COLUMNS_0003 = (
    ("ts", "timestamp with time zone NOT NULL"),
    ("gpu_id", "integer NOT NULL"),
    ("energy_j", "double precision NULL"),
    ("mem_used_bytes", "bigint NULL"),
    ("epoch_id", "integer NOT NULL"),
    ("power_w", "real NULL"),
    ("util_pct", "smallint NULL"),
    ("mem_util_pct", "smallint NULL"),
    ("temp_c", "smallint NULL"),
)
MIB = 1024 * 1024


def partitioned_table_rebuild(
    schema_editor: Any, *, table: str, columns: tuple[tuple[str, str], ...], select: dict[str, str]
) -> None:
    """Recreate a partitioned raw table with ``columns`` (name, type) and copy every partition into it.

    ``select`` maps a new column to its SQL expression over the old row (default: the same name).
    Each day is copied in (gpu, time) order into a new partition of the same bounds, then the old
    one is dropped, so at most one extra day is on disk at a time. Takes an exclusive lock on the
    table for the whole migration: on a large database, run it in a maintenance window.
    """
    quote = schema_editor.quote_name
    old = f"{table}_rebuild_old"
    run = schema_editor.execute
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = %s::regclass ORDER BY c.relname",
            [table],
        )
        partitions = cursor.fetchall()
    run(f"ALTER TABLE {quote(table)} RENAME TO {quote(old)}")
    run(f"ALTER TABLE {quote(old)} RENAME CONSTRAINT {quote(table + '_pkey')} TO {quote(old + '_pkey')}")
    run(f"ALTER INDEX {quote(table + '_ts_brin')} RENAME TO {quote(old + '_ts_brin')}")
    column_ddl = ", ".join(f"{quote(name)} {kind}" for name, kind in columns)
    run(
        f"CREATE TABLE {quote(table)} ({column_ddl}, CONSTRAINT {quote(table + '_pkey')} "
        f'PRIMARY KEY ("gpu_id", "ts") WITH (fillfactor = 100)) PARTITION BY RANGE ("ts")'
    )
    run(f'CREATE INDEX {quote(table + "_ts_brin")} ON {quote(table)} USING brin ("ts")')
    names = ", ".join(quote(name) for name, _ in columns)
    values = ", ".join(select.get(name, quote(name)) for name, _ in columns)
    for partition, bounds in partitions:
        moved = f"{partition}_rebuild_old"
        run(f"ALTER TABLE {quote(old)} DETACH PARTITION {quote(partition)}")
        run(f"ALTER TABLE {quote(partition)} RENAME TO {quote(moved)}")
        run(f"ALTER INDEX {quote(partition + '_pkey')} RENAME TO {quote(moved + '_pkey')}")
        run(f"ALTER INDEX IF EXISTS {quote(partition + '_ts_idx')} RENAME TO {quote(moved + '_ts_idx')}")
        run(f"CREATE TABLE {quote(partition)} PARTITION OF {quote(table)} {bounds}")
        run(f'INSERT INTO {quote(partition)} ({names}) SELECT {values} FROM {quote(moved)} ORDER BY "gpu_id", "ts"')  # noqa: S608
        run(f"DROP TABLE {quote(moved)}")
    run(f"DROP TABLE {quote(old)}")
