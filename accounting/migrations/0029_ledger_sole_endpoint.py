"""The endpoint that holds all of a ledger line, where one does, so that reports per LLM model sum those lines
as they are and join and weigh only the node-hours several endpoint-hours share.

Lines stored before: their node-hour's endpoint-hours counted in one ``UPDATE ... FROM`` joined on the node and
hour (on Citus, both tables are distributed by node: one statement per shard pair), with the rule
``accounting.node_hour_lines`` computes new lines by: exactly one endpoint-hour, and it served output tokens.
The site-hours hold no endpoint: they are left as they are.
"""

import django.db.models.deletion
from django.db import migrations, models


def _fill(apps, schema_editor) -> None:
    line = apps.get_model("accounting", "NodeHourLedger")._meta.db_table
    usage = apps.get_model("telemetry", "EndpointHourUsage")._meta.db_table
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {line} SET sole_endpoint_id = u.endpoint_id "  # noqa: S608 (table names from the models)
            f"FROM (SELECT node_id, hour_start, MIN(endpoint_id) AS endpoint_id FROM {usage} "
            "GROUP BY node_id, hour_start HAVING COUNT(*) = 1 AND MIN(generation_tokens) > 0) u "
            f"WHERE {line}.node_id = u.node_id AND {line}.hour_start = u.hour_start AND {line}.generation_tokens > 0"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0028_ledger_requests"),
        ("telemetry", "0015_raw_keys_one_server"),
    ]

    operations = [
        migrations.AddField(
            model_name="nodehourledger",
            name="sole_endpoint",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                help_text="the endpoint whose hour is the node-hour's only endpoint-hour, where it served output "
                "tokens (its share of the line is all of it); null otherwise",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="telemetry.servingendpoint",
            ),
        ),
        migrations.RunPython(_fill, migrations.RunPython.noop, elidable=False),
    ]
