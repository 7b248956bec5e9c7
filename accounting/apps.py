from typing import Any

from django.apps import AppConfig


class AccountingConfig(AppConfig):
    """The ledger: prices, tariffs, PUE, assets, hardware profiles and node-hour lines (label ``accounting``)."""

    name = "accounting"
    verbose_name = "Ledger"

    def ready(self) -> None:
        from grid.signals import intensity_stored

        intensity_stored.connect(_intensity_stored, dispatch_uid="accounting.intensity_stored")
        from django.db.models.signals import post_delete, pre_delete

        from fleets.models import Node

        pre_delete.connect(_node_deleting, sender=Node, dispatch_uid="accounting.node_deleting")
        post_delete.connect(_node_deleted, sender=Node, dispatch_uid="accounting.node_deleted")


def _intensity_stored(*, since: Any, now: Any, **_: Any) -> int:
    """New grid values re-open the ledger hours they change."""
    from accounting.node_hour_lines import ledger_mark_intensity_since

    return ledger_mark_intensity_since(since=since, now=now)


def _node_deleting(*, instance: Any, **_: Any) -> None:
    """A node's lines go with it: note the site-hours they were summed in (``accounting.site_hours``)."""
    from accounting.models import NodeHourLedger

    lines = NodeHourLedger.objects.filter(node_id=instance.pk)
    instance._ledger_site_hours = set(lines.values_list("site_id", "hour_start"))


def _node_deleted(*, instance: Any, **_: Any) -> None:
    """The deleted node's site-hours summed again without its lines, in the deletion's transaction."""
    from accounting.site_hours import site_hours_recompute

    site_hours_recompute(getattr(instance, "_ledger_site_hours", ()))
