"""Raw samples and hourly usage carry their GPU's or endpoint's node, and every key leads with it.

``node_id`` is added to raw GPU and serving samples and to hourly GPU and endpoint usage, filled
from each row's GPU or endpoint, then required. The raw tables' primary keys become
``(node_id, gpu_id, ts)`` and ``(node_id, endpoint_id, ts)`` and the usage tables' unique keys
``(node, gpu, hour)`` and ``(node, endpoint, hour)``: one node's rows of every table share a key
prefix, so on Citus they are distributed by node with the other per-node tables (accounting's
next migration; docs/scaling.md, "Citus").

The raw ``node_id`` is 8 bytes like every other table's (Citus colocates by columns of one type):
a raw GPU row is 48 bytes of data, 40 before. On PostgreSQL the column is added to the
partitioned parent (so to every day), filled, and the key rebuilt, under an exclusive lock for
the whole migration: on a large database, run it in a maintenance window. On SQLite the raw
tables are rebuilt with the new key.
"""

import django.db.models.deletion
from django.db import migrations, models

RAW = {"telemetry_gpusample": ("gpu_id", "fleets_gpu"), "telemetry_servingsample": ("endpoint_id", "telemetry_servingendpoint")}
USAGE = {"telemetry_gpuhourusage": ("gpu_id", "fleets_gpu"), "telemetry_endpointhourusage": ("endpoint_id", "telemetry_servingendpoint")}
MODELS = {"telemetry_gpusample": "GpuSample", "telemetry_servingsample": "ServingSample"}


def _citus(schema_editor) -> bool:
    if schema_editor.connection.vendor != "postgresql":
        return False
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
        return cursor.fetchone() is not None


def sequential_on_citus(apps, schema_editor) -> None:
    """On Citus: one connection per worker in this transaction (DDL beside foreign keys to reference tables)."""
    if _citus(schema_editor):
        schema_editor.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")


def _backfill(schema_editor, table: str, owner: str, owners: str) -> None:
    schema_editor.execute(
        f'UPDATE "{table}" SET "node_id" = (SELECT o."node_id" FROM "{owners}" o WHERE o."id" = "{table}"."{owner}")'  # noqa: S608
        if schema_editor.connection.vendor != "postgresql"
        else f'UPDATE "{table}" t SET "node_id" = o."node_id" FROM "{owners}" o WHERE o."id" = t."{owner}"'  # noqa: S608
    )


def usage_backfill(apps, schema_editor) -> None:
    for table, (owner, owners) in USAGE.items():
        _backfill(schema_editor, table, owner, owners)
    if schema_editor.connection.vendor == "postgresql":
        # The new foreign keys checked now: a table with pending checks cannot be altered next.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def raw_forwards(apps, schema_editor) -> None:
    quote = schema_editor.quote_name
    for table, (owner, owners) in RAW.items():
        if schema_editor.connection.vendor == "postgresql":
            run = schema_editor.execute
            run(f'ALTER TABLE "{table}" ADD COLUMN "node_id" bigint NULL')
            _backfill(schema_editor, table, owner, owners)
            run(f'ALTER TABLE "{table}" ALTER COLUMN "node_id" SET NOT NULL')
            run(f'ALTER TABLE "{table}" DROP CONSTRAINT "{table}_pkey"')
            run(
                f'ALTER TABLE "{table}" ADD CONSTRAINT "{table}_pkey" PRIMARY KEY ("node_id", "{owner}", "ts")'
                + (" WITH (fillfactor = 100)" if table == "telemetry_gpusample" else "")
            )
            continue
        # SQLite: the table made again from the model, its rows copied over with their node.
        model = apps.get_model("telemetry", MODELS[table])
        old = f"{table}__old"
        schema_editor.execute(f"ALTER TABLE {quote(table)} RENAME TO {quote(old)}")
        sql, params = schema_editor.table_sql(model)
        schema_editor.execute(sql, params or None)
        columns = [field.column for field in model._meta.concrete_fields]
        values = ", ".join("o.node_id" if c == "node_id" else f"s.{quote(c)}" for c in columns)
        schema_editor.execute(
            f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)}) SELECT {values} "  # noqa: S608
            f'FROM {quote(old)} s JOIN "{owners}" o ON o."id" = s."{owner}"'
        )
        schema_editor.execute(f"DROP TABLE {quote(old)}")


def raw_backwards(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        raise NotImplementedError("telemetry 0012 is reversed on PostgreSQL only")
    for table, (owner, _) in RAW.items():
        schema_editor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{table}_pkey"')
        schema_editor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{table}_pkey" PRIMARY KEY ("{owner}", "ts")')
        schema_editor.execute(f'ALTER TABLE "{table}" DROP COLUMN "node_id"')


def _node(*, null: bool, raw: bool) -> models.ForeignKey:
    if raw:
        return models.ForeignKey(
            db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING,
            related_name="+", to="fleets.node", **({"null": True} if null else {"default": None}),
        )  # fmt: skip
    return models.ForeignKey(
        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="fleets.node",
        **({"null": True} if null else {}),
    )  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [
        ("fleets", "0005_personaltoken_scope_metrics"),
        ("telemetry", "0011_prometheus_source"),
    ]

    operations = [
        migrations.RunPython(sequential_on_citus, sequential_on_citus, elidable=False),
        # Hourly usage: the column added empty, filled, required; the unique keys lead with the node.
        migrations.AddField(model_name="gpuhourusage", name="node", field=_node(null=True, raw=False)),
        migrations.AddField(model_name="endpointhourusage", name="node", field=_node(null=True, raw=False)),
        migrations.RunPython(usage_backfill, migrations.RunPython.noop, elidable=False),
        migrations.AlterField(model_name="gpuhourusage", name="node", field=_node(null=False, raw=False)),
        migrations.AlterField(model_name="endpointhourusage", name="node", field=_node(null=False, raw=False)),
        migrations.RemoveConstraint(model_name="gpuhourusage", name="gpuhourusage_unique_gpu_hour"),
        migrations.RemoveConstraint(model_name="endpointhourusage", name="endpointhourusage_unique_endpoint_hour"),
        migrations.AddConstraint(
            model_name="gpuhourusage",
            constraint=models.UniqueConstraint(
                fields=("node", "gpu", "hour_start"), name="gpuhourusage_unique_node_gpu_hour"
            ),
        ),
        migrations.AddConstraint(
            model_name="endpointhourusage",
            constraint=models.UniqueConstraint(
                fields=("node", "endpoint", "hour_start"), name="endpointhourusage_unique_node_endpoint_hour"
            ),
        ),
        # Raw samples: the model's state first (its new key), then the tables by hand (partitioned on PostgreSQL).
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="gpusample", name="node", field=_node(null=False, raw=True), preserve_default=False
                ),
                migrations.AddField(
                    model_name="servingsample", name="node", field=_node(null=False, raw=True), preserve_default=False
                ),
                migrations.AlterField(
                    model_name="gpusample",
                    name="pk",
                    field=models.CompositePrimaryKey(
                        "node_id", "gpu_id", "ts", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                migrations.AlterField(
                    model_name="servingsample",
                    name="pk",
                    field=models.CompositePrimaryKey(
                        "node_id", "endpoint_id", "ts", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(raw_forwards, raw_backwards, elidable=False),
    ]
