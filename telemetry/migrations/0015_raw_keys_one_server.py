"""On one PostgreSQL server the raw tables' primary keys are ``(gpu_id, ts)`` and ``(endpoint_id, ts)``.

Migration 0012 led them with ``node_id``, the distribution column Citus needs in every key of a
distributed table. On one server that costs twice the index: with the 8-byte node in front a GPU
sample's key is 24 bytes, past the two 8-byte columns up to which PostgreSQL's B-tree splits a page
to suit ascending inserts within a key prefix (``nbtsplitloc.c``, the "localized monotonic" case),
so the pages of the key split in half and stay about half full: 70 bytes of key a sample against 33
with ``(gpu_id, ts)``, measured on 720,000 samples of 50 nodes sent in batches (bench/README.md,
"Storage"). A GPU belongs to one node, so ``(gpu_id, ts)`` is as unique as ``(node_id, gpu_id, ts)``,
and ingest's ``ON CONFLICT DO NOTHING`` names no key. On a Citus coordinator (the key keeps the node)
and on SQLite (the embedded default) nothing changes; the model's composite primary key stays
``(node, owner, ts)``, the identity the ORM uses on every backend.

Rebuilds each key on every day partition under an exclusive lock: on a large database, run it in a
maintenance window.
"""

from django.db import migrations

from common.citus import citus_coordinator, primary_key

RAW = {"telemetry_gpusample": "gpu_id", "telemetry_servingsample": "endpoint_id"}
FILLFACTOR = {"telemetry_gpusample": " WITH (fillfactor = 100)"}


def _one_server(schema_editor) -> bool:
    return schema_editor.connection.vendor == "postgresql" and not citus_coordinator(schema_editor.connection)


def _key_set(schema_editor, table: str, columns: list[str]) -> None:
    with schema_editor.connection.cursor() as cursor:
        name, current = primary_key(cursor, table)
    if current == columns:
        return
    keys = ", ".join(f'"{c}"' for c in columns)
    schema_editor.execute(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"')
    schema_editor.execute(
        f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" PRIMARY KEY ({keys}){FILLFACTOR.get(table, "")}'
    )


def forwards(apps, schema_editor) -> None:
    if _one_server(schema_editor):
        for table, owner in RAW.items():
            _key_set(schema_editor, table, [owner, "ts"])


def backwards(apps, schema_editor) -> None:
    if _one_server(schema_editor):
        for table, owner in RAW.items():
            _key_set(schema_editor, table, ["node_id", owner, "ts"])


class Migration(migrations.Migration):
    dependencies = [("telemetry", "0014_prometheus_serving_selector")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
