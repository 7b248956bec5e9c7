"""The served site-hours of the sites whose lines hold GPU-hours without an embodied figure, summed again from
their lines (0038 added the column at zero). A migration of its own, so that its reads of the lines come after
0038's DDL has committed (on a Citus coordinator, DDL and parallel reads in one transaction conflict: 0037).
"""

from django.db import migrations


def refill(apps, schema_editor) -> None:
    from accounting.served_hours import served_rows_store

    lines = apps.get_model("accounting", "NodeHourLedger").objects.all()
    served = apps.get_model("accounting", "LedgerServedHour")
    usage = apps.get_model("telemetry", "EndpointHourUsage")
    unknown = lines.filter(embodied_unknown_gpu_h__gt=0, generation_tokens__gt=0).order_by()
    for site_id in sorted(set(unknown.values_list("site_id", flat=True).distinct())):
        served.objects.filter(site_id=site_id).delete()
        served_rows_store(lines.filter(site_id=site_id), usage_model=usage, row_model=served)


class Migration(migrations.Migration):
    dependencies = [
        ("accounting", "0038_served_hour_embodied_unknown"),
        ("telemetry", "0012_node_keys"),
    ]

    operations = [migrations.RunPython(refill, migrations.RunPython.noop, elidable=False)]
