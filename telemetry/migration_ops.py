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
