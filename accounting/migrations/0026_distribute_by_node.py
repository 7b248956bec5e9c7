"""On a Citus coordinator, raw samples and hourly GPU and endpoint usage are distributed by node too.

Does nothing on SQLite or on PostgreSQL without the ``citus`` extension (0025's guard). Where it is
present, 0025 distributed these four tables by their GPU or endpoint, which had no node column;
telemetry 0012 gave each the node of its GPU or endpoint and keys that lead with it. Here each is
distributed again, by ``node_id``, in the colocation group of the other per-node tables (the rollup
queue's): a node's raw samples, hourly usage, queues, ledger lines and collector status lie on one
worker, and a collector's batch, a node-hour's rollup and its ledger are one shard's transaction.

Raw samples: ``alter_distributed_table`` copies each partitioned table, with its partitions, to
shards of the new layout (its key, ``(node_id, owner, ts)``, holds the old and the new distribution
column, as Citus wants while it moves). Hourly usage: Citus cannot convert a table with an identity
column, so each is made again beside the old one (its columns, identity and defaults), distributed
by node, filled from the old, its identity carried past the highest ``id``; then the old is dropped
and the new takes its name, keys and indexes (the ``(gpu_id, id)`` key of 0025 becomes
``(node_id, id)``, like the other per-node tables'). Foreign keys (all to reference tables) are set
aside meanwhile and added back after.
"""

import importlib

from django.db import migrations

_0025 = importlib.import_module("accounting.migrations.0025_distribute_on_citus")

GROUP = "telemetry_rolluppending"
# (table, the column it was distributed by)
TABLES = [
    ("telemetry_gpusample", "gpu_id"),
    ("telemetry_servingsample", "endpoint_id"),
    ("telemetry_gpuhourusage", "gpu_id"),
    ("telemetry_endpointhourusage", "endpoint_id"),
]


def _primary_key_set(cursor, table: str, name: str, columns: list[str]) -> None:
    keys = ", ".join(f'"{c}"' for c in columns)
    cursor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
    cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" PRIMARY KEY ({keys})')


def _distribution_column(cursor, table: str) -> str | None:
    cursor.execute(
        "SELECT column_to_column_name(logicalrelid, partkey) FROM pg_dist_partition WHERE logicalrelid = %s::regclass",
        [table],
    )
    row = cursor.fetchone()
    return row[0] if row else None


def _indexes_and_keys(cursor, table: str) -> list[str]:
    """The statements that make ``table``'s primary and unique keys, checks and other indexes again."""
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid), conindid FROM pg_constraint"
        " WHERE conrelid = %s::regclass AND contype IN ('p', 'u', 'c')",
        [table],
    )
    constraints = cursor.fetchall()
    statements = [f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}' for name, definition, _ in constraints]
    cursor.execute(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = %s::regclass AND NOT indexrelid = ANY(%s)",
        [table, [index for _, _, index in constraints if index]],
    )
    return statements + [definition for (definition,) in cursor.fetchall()]


def _identity_table_redistribute(cursor, table: str, name: str) -> None:
    """Make ``table`` (with an ``id`` identity) again, distributed by node in the group, keyed ``(node_id, id)``."""
    new = f"{table}__bynode"
    remake = [s for s in _indexes_and_keys(cursor, table) if f'CONSTRAINT "{name}"' not in s]
    cursor.execute(f'CREATE TABLE "{new}" (LIKE "{table}" INCLUDING DEFAULTS INCLUDING IDENTITY)')
    cursor.execute("SELECT create_distributed_table(%s, 'node_id', colocate_with => %s)", [new, GROUP])
    cursor.execute(f'INSERT INTO "{new}" SELECT * FROM "{table}"')  # noqa: S608
    cursor.execute(f'SELECT max("id") FROM "{table}"')  # noqa: S608
    (highest,) = cursor.fetchone()
    if highest is not None:
        cursor.execute("SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [new, highest])
    cursor.execute(f'DROP TABLE "{table}"')
    cursor.execute(f'ALTER TABLE "{new}" RENAME TO "{table}"')
    # Keys last, under their old names (free once the old table is gone: Citus renames no constraint).
    cursor.execute(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" PRIMARY KEY ("node_id", "id")')
    for statement in remake:
        cursor.execute(statement)


def distribute_by_node(apps, schema_editor) -> None:
    if not _0025.citus_present(schema_editor):
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        restore: list[str] = []
        for table, owner in TABLES:
            if _distribution_column(cursor, table) == "node_id":
                continue
            restore += _0025.foreign_keys_dropped(cursor, table)
            name, columns = _0025.primary_key(cursor, table)
            if "id" in columns:  # hourly usage
                _identity_table_redistribute(cursor, table, name)
                continue
            if columns[:2] != ["node_id", owner]:
                _primary_key_set(
                    cursor, table, name, ["node_id", owner, *(c for c in columns if c not in {"node_id", owner})]
                )
            cursor.execute(
                "SELECT alter_distributed_table(%s, distribution_column := 'node_id', colocate_with := %s)",
                [table, GROUP],
            )
        for statement in restore:
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0025_distribute_on_citus"),
        ("telemetry", "0012_node_keys"),
    ]

    operations = [migrations.RunPython(distribute_by_node, migrations.RunPython.noop, elidable=False)]
