"""On a Citus coordinator, the site-hours and served site-hours kept too (``accounting.site_hours``).

The site-hours' pending marks (0036) are distributed by node in the node group (0035's way: Citus cannot
distribute a table with an identity column in place), so that a mark is written on the node's shard with the
node's lines. Then the site-hours (0027, 0032) and served site-hours (0030), which 0027-0034 leave empty on a
coordinator (a fill's parallel read there makes the same migration's later foreign-key DDL fail), are summed from
the lines already stored, after the site-hours' planner statistics (0034) are made. Does nothing on SQLite or on
PostgreSQL without ``citus``, where 0027-0034 filled them.
"""

import importlib

from django.db import migrations

_0025 = importlib.import_module("accounting.migrations.0025_distribute_on_citus")
_0034 = importlib.import_module("accounting.migrations.0034_site_hour_group_statistics")
_0035 = importlib.import_module("accounting.migrations.0035_node_days_on_citus")


def distribute_and_fill(apps, schema_editor) -> None:
    if not _0025.citus_present(schema_editor):
        return
    # The statistics first (DDL after the fill's reads is refused in its transaction); the next ANALYZE (the
    # autovacuum's, after the fill's rows) takes them.
    _0034.statistics_make(schema_editor, analyze=False)
    _0035.by_node_distribute(schema_editor, ["accounting_ledgersitehourpending"])

    from accounting.site_hours import served_hours_fill, site_hours_fill

    lines = apps.get_model("accounting", "NodeHourLedger")
    rows = apps.get_model("accounting", "LedgerSiteHour")
    served = apps.get_model("accounting", "LedgerServedHour")
    rows.objects.all().delete()
    served.objects.all().delete()
    site_hours_fill(lines, rows, schema_editor.connection)
    served_hours_fill(lines, apps.get_model("telemetry", "EndpointHourUsage"), served, schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0036_site_hours_on_citus"),
        ("telemetry", "0012_node_keys"),
    ]

    operations = [migrations.RunPython(distribute_and_fill, migrations.RunPython.noop, elidable=False)]
