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
        from django.db.models.signals import post_save

        from telemetry.models import ServingEndpoint

        pre_delete.connect(_endpoint_deleting, sender=ServingEndpoint, dispatch_uid="accounting.endpoint_deleting")
        post_delete.connect(_endpoint_deleted, sender=ServingEndpoint, dispatch_uid="accounting.endpoint_deleted")
        post_save.connect(_endpoint_saved, sender=ServingEndpoint, dispatch_uid="accounting.endpoint_saved")


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


def _endpoint_site_hours(endpoint: Any) -> set[Any]:
    """The site-hours of the lines of the node-hours where the endpoint served output tokens: their served rows
    (``accounting.served_hours``) hold its hours, or its node's others' shared with it."""
    from accounting.models import NodeHourLedger
    from telemetry.models import EndpointHourUsage

    node_id = endpoint.node_id  # both tables read by the node's key (on Citus: its shard)
    served = EndpointHourUsage.objects.filter(node_id=node_id, endpoint_id=endpoint.pk, generation_tokens__gt=0)
    lines = NodeHourLedger.objects.filter(node_id=node_id, hour_start__in=served.values("hour_start"))
    return set(lines.values_list("organization_id", "site_id", "hour_start"))


def _endpoint_deleting(*, instance: Any, **_: Any) -> None:
    """A deleted endpoint's hours go with it: note their site-hours, whose served rows then change."""
    instance._ledger_site_hours = _endpoint_site_hours(instance)


def _endpoint_deleted(*, instance: Any, **_: Any) -> None:
    """The served rows of the deleted endpoint's site-hours summed again, in the deletion's transaction (on Citus
    too, not marked: the node may be going with it)."""
    from accounting.site_hours import site_hours_recompute

    site_hours_recompute((site, hour) for _, site, hour in getattr(instance, "_ledger_site_hours", ()))


def _endpoint_saved(*, instance: Any, created: bool, update_fields: Any = None, **_: Any) -> None:
    """An endpoint saved anew may have another server kind (ingest saves the kind alone) or LLM model: the served
    rows are keyed by both (and the site-hours by the LLM model of the lines it holds whole), so its node-hours'
    site-hours are summed again, in the save's transaction (on Citus, marked in it: ingest's batch stays on the
    node's shard)."""
    if created or (update_fields is not None and "kind" not in update_fields):
        return
    from accounting.site_hours import site_hours_changed

    site_hours_changed(node_id=instance.node_id, site_hours=_endpoint_site_hours(instance))
