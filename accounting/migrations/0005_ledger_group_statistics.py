"""Planner statistics on the ledger columns that pages and reports group by, taken together.

Pages group a period's lines by day (or month) and a few columns at once: finance by fleet,
GPU model and currency, sustainability by fleet, GPU model and the sources and fallbacks of
its intensity figures. PostgreSQL multiplies the distinct counts of each column and expects
~70,000 groups where there are ~200; it then sorts 140k wide rows to disk instead of hashing
them (330 ms instead of ~120 ms for the sustainability page's query). Distinct counts of the
columns together (``ndistinct`` statistics, at most 8 columns or expressions each) fix the
estimate. The bucket expressions are written as Django writes them, so that the planner
matches them. They take effect at the next ANALYZE, which this migration runs.
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
    "ledger_groups_day": "(date_trunc('day', hour_start AT TIME ZONE 'UTC'))",
    "ledger_groups_month": "(date_trunc('month', hour_start AT TIME ZONE 'UTC'))",
}


def statistics_create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, bucket in _BUCKETS.items():
        columns = ", ".join((bucket, *_GROUPED))
        schema_editor.execute(
            f"CREATE STATISTICS IF NOT EXISTS {name} (ndistinct) ON {columns} FROM accounting_nodehourledger"
        )
    schema_editor.execute("ANALYZE accounting_nodehourledger")


def statistics_drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in _BUCKETS:
        schema_editor.execute(f"DROP STATISTICS IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0004_ledger_utilization"),
    ]

    operations = [
        migrations.RunPython(statistics_create, statistics_drop),
    ]
