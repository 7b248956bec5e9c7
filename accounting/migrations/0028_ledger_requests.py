"""Requests answered on each ledger line (SCI's functional unit), so that reports sum them with the lines.

Lines stored before: their node-hour's endpoint requests, summed in one ``UPDATE ... FROM`` joined on the
node and hour (on Citus, both tables are distributed by node: one statement per shard pair); then the
site-hours summed again from the lines (none are kept on a Citus coordinator).
"""

from django.db import migrations, models


def _fill(apps, schema_editor) -> None:
    from accounting.site_hours import site_hours_fill

    line = apps.get_model("accounting", "NodeHourLedger")
    usage = apps.get_model("telemetry", "EndpointHourUsage")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {line._meta.db_table} SET requests = u.requests "  # noqa: S608 (table names from the models)
            f"FROM (SELECT node_id, hour_start, SUM(requests) AS requests FROM {usage._meta.db_table} "
            "GROUP BY node_id, hour_start) u "
            f"WHERE {line._meta.db_table}.node_id = u.node_id AND {line._meta.db_table}.hour_start = u.hour_start"
        )
    site_hour = apps.get_model("accounting", "LedgerSiteHour")
    if site_hour.objects.exists():
        site_hour.objects.all().delete()
        site_hours_fill(line, site_hour, schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0027_ledger_site_hours"),
        ("telemetry", "0015_raw_keys_one_server"),
    ]

    operations = [
        migrations.AddField(
            model_name="ledgersitehour",
            name="requests",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="nodehourledger",
            name="requests",
            field=models.BigIntegerField(
                default=0, help_text="requests the node's serving endpoints answered in the hour (SCI's functional unit)"
            ),
        ),
        migrations.RunPython(_fill, migrations.RunPython.noop, elidable=False),
    ]
