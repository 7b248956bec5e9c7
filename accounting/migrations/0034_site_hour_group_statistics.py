"""Planner statistics on the site-hours' columns that pages and reports group by, taken together.

The site-hours (0027) took over the reads that migration 0005's statistics serve on the lines, without their
statistics. The sustainability page groups a period's site-hours by day and seven columns; PostgreSQL multiplies
the columns' distinct counts and expects a group per row (12,961 on the bench's 90 days for 182 groups), and
once its row estimate runs ahead of the table (rows written since the last ANALYZE) it sorts them instead of
hashing: 54 ms instead of 27 (bench/README.md). The same ``ndistinct`` statistics as the lines', on the same
columns and bucket expressions (written as Django writes them, so that the planner matches them), give ~1,500
groups and a hash aggregate. They take effect at the next ANALYZE, which this migration runs. On SQLite nothing,
nor on a Citus coordinator, where 0037 makes them once it has filled the site-hours.
"""

from django.db import migrations

_GROUPED = (
    "fleet_id",
    "gpu_model",
    "currency",
    "location_is_fallback",
    "location_source",
    "market_source",
    "(location_co2e_g IS NULL)",
)
_BUCKETS = {
    "site_hour_groups_day": "(date_trunc('day', hour_start AT TIME ZONE 'UTC'))",
    "site_hour_groups_month": "(date_trunc('month', hour_start AT TIME ZONE 'UTC'))",
}


def statistics_create(apps, schema_editor):
    from common.citus import citus_coordinator

    if schema_editor.connection.vendor != "postgresql" or citus_coordinator(schema_editor.connection):
        return
    statistics_make(schema_editor)


def statistics_make(schema_editor, *, analyze: bool = True):
    for name, bucket in _BUCKETS.items():
        columns = ", ".join((bucket, *_GROUPED))
        schema_editor.execute(
            f"CREATE STATISTICS IF NOT EXISTS {name} (ndistinct) ON {columns} FROM accounting_ledgersitehour"
        )
    if analyze:
        schema_editor.execute("ANALYZE accounting_ledgersitehour")


def statistics_drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in _BUCKETS:
        schema_editor.execute(f"DROP STATISTICS IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0033_ledger_node_days"),
    ]

    operations = [
        migrations.RunPython(statistics_create, statistics_drop),
    ]
