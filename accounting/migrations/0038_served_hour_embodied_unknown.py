"""The served site-hours keep their lines' GPU-hours of models without an embodied figure (``accounting.served_hours``),
so that a load band withholds its carbon per output token where the comparison row of the same hours does
(``accounting.ledger.totals.carbon_per_token_complete``). 0039 sums the rows of the sites with such lines again.
"""

from decimal import Decimal

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0037_site_hours_filled_on_citus"),
    ]

    operations = [
        migrations.AddField(
            model_name="ledgerservedhour",
            name="embodied_unknown_gpu_h",
            field=models.DecimalField(decimal_places=12, default=Decimal(0), max_digits=28),
            preserve_default=False,
        ),
    ]
