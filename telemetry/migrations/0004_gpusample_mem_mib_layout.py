"""Raw GPU samples: memory in whole MiB (``integer``) instead of bytes, and no alignment padding.

On PostgreSQL the partitioned table is rebuilt with its 8-byte columns first and a
primary key packed full (``migration_ops.partitioned_table_rebuild``): 40 bytes of
data a row instead of 48, ~98 bytes on disk per sample with the key. Every day is
copied under an exclusive lock: on a large database, run this in a maintenance
window. On SQLite the column is added, converted and the old one dropped.
"""

from django.db import migrations, models

from telemetry.migration_ops import MIB, RAW_GPU_COLUMNS, RAW_GPU_COLUMNS_0003, partitioned_table_rebuild

TABLE = "telemetry_gpusample"


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        partitioned_table_rebuild(
            schema_editor,
            table=TABLE,
            columns=RAW_GPU_COLUMNS,
            select={"mem_used_mib": f'("mem_used_bytes" + {MIB // 2}) / {MIB}'},
        )
        return
    schema_editor.execute(f'ALTER TABLE "{TABLE}" ADD COLUMN "mem_used_mib" integer NULL')
    schema_editor.execute(f'UPDATE "{TABLE}" SET "mem_used_mib" = ("mem_used_bytes" + {MIB // 2}) / {MIB}')
    schema_editor.execute(f'ALTER TABLE "{TABLE}" DROP COLUMN "mem_used_bytes"')


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        partitioned_table_rebuild(
            schema_editor,
            table=TABLE,
            columns=RAW_GPU_COLUMNS_0003,
            select={"mem_used_bytes": f'"mem_used_mib"::bigint * {MIB}'},
        )
        return
    schema_editor.execute(f'ALTER TABLE "{TABLE}" ADD COLUMN "mem_used_bytes" bigint NULL')
    schema_editor.execute(f'UPDATE "{TABLE}" SET "mem_used_bytes" = "mem_used_mib" * {MIB}')
    schema_editor.execute(f'ALTER TABLE "{TABLE}" DROP COLUMN "mem_used_mib"')


class Migration(migrations.Migration):
    dependencies = [
        ("telemetry", "0003_gpusample_int4_ids"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name="gpusample", name="mem_used_bytes"),
                migrations.AddField(
                    model_name="gpusample",
                    name="mem_used_mib",
                    field=models.IntegerField(help_text="memory used, MiB (the collector's bytes, rounded)", null=True),
                ),
            ],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
