"""On a Citus coordinator, the ledger's node-days and serving days are kept too, distributed by node.

Does nothing on SQLite or on PostgreSQL without the ``citus`` extension (0025's guard), where 0031 and 0033
filled them. Both are per node (``accounting.node_days``, ``accounting.serving_days``) and rewritten in the
node's ledger transaction, so in the node group (the rollup queue's colocation group) each stays one shard's
write: each is made again distributed by ``node_id`` and keyed ``(node_id, id)``, as 0026 made hourly usage
(Citus cannot convert a table with an identity column), its foreign keys to reference tables added to the
new table. Then they are filled from the lines and endpoint-hours already stored, which 0031 and 0033 left
empty on a coordinator.
"""

import importlib

from django.db import migrations

from common.citus import primary_key

_0025 = importlib.import_module("accounting.migrations.0025_distribute_on_citus")
_0026 = importlib.import_module("accounting.migrations.0026_distribute_by_node")

TABLES = ["accounting_ledgernodeday", "accounting_ledgerservingday"]


def _foreign_keys(cursor, table: str) -> list[str]:
    """The statements that add ``table``'s foreign keys again (to reference tables). Not dropped first: a table
    made a Citus local table by them would be turned back into a plain one, which Citus refuses for a table with
    an identity column; the old table goes with its keys and the new one gets them."""
    cursor.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'",
        [table],
    )
    return [f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {definition}' for name, definition in cursor.fetchall()]


def by_node_distribute(schema_editor, tables: list[str]) -> None:
    """Make each of ``tables`` (each with an ``id`` identity and a ``node_id``) distributed by node in the node
    group, keyed ``(node_id, id)``, its foreign keys to reference tables added again (a Citus coordinator only)."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        for table in tables:
            if _0026._distribution_column(cursor, table) == "node_id":
                continue
            restore = _foreign_keys(cursor, table)
            name, _ = primary_key(cursor, table)
            _0026._identity_table_redistribute(cursor, table, name)
            for statement in restore:
                cursor.execute(statement)


def distribute_and_fill(apps, schema_editor) -> None:
    if not _0025.citus_present(schema_editor):
        return
    by_node_distribute(schema_editor, TABLES)

    from accounting.node_days import node_days_fill
    from accounting.serving_days import serving_days_fill

    line_model = apps.get_model("accounting", "NodeHourLedger")
    node_days = apps.get_model("accounting", "LedgerNodeDay")
    serving_days = apps.get_model("accounting", "LedgerServingDay")
    node_days.objects.all().delete()
    serving_days.objects.all().delete()
    node_days_fill(line_model, node_days, schema_editor.connection)
    usage_model = apps.get_model("telemetry", "EndpointHourUsage")
    serving_days_fill(usage_model, line_model, serving_days, schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0034_site_hour_group_statistics"),
        ("telemetry", "0012_node_keys"),
    ]

    operations = [migrations.RunPython(distribute_and_fill, migrations.RunPython.noop, elidable=False)]
