"""The site-hours' pending marks (``accounting.site_hours.site_hours_changed``): a site-hour whose rows are to be
summed again from its lines, marked in a node's ledger transaction on a Citus coordinator. 0037 distributes the
table there and fills the site-hours.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0035_node_days_on_citus"),
        ("fleets", "0005_personaltoken_scope_metrics"),
    ]

    operations = [
        migrations.CreateModel(
            name="LedgerSiteHourPending",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("hour_start", models.DateTimeField()),
                ("marked_at", models.DateTimeField()),
                (
                    "node",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="fleets.node"
                    ),
                ),
                (
                    "organization",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="fleets.organization"
                    ),
                ),
                (
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="fleets.site"
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["organization", "hour_start"], name="ledger_site_hour_pending_org")],
                "constraints": [
                    models.UniqueConstraint(fields=("node", "site", "hour_start"), name="ledger_site_hour_pending_key")
                ],
            },
        ),
    ]
