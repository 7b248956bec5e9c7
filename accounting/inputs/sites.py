"""A site's own fields changed outside the API (the Django admin): audited as ``site``, lock-checked like its PUE.

The grid zone (location-based CO2e), the time zone (time-of-use tariff windows)
and the currency are inputs of every stored line of the site's nodes: a change
of one is refused while such a line lies in a locked period (``lock_check_lines``,
as the site's own PUE, ``site_pue_update``) and re-opens them all. The site's PUE
goes through ``site_pue_update`` (subject ``site_pue``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction

from accounting.inputs.line_locks import lock_check_lines
from accounting.inputs.reopen import EVERY_HOUR, ledger_lines_reopen
from fleets.models import Node, Organization, Site
from governance.audit import audit_record, snapshot

SITE_FIELDS = ("organization", "name", "grid_zone", "country", "pue", "currency", "time_zone")
LEDGER_FIELDS = ("grid_zone", "time_zone", "currency")


def site_fields_save(*, site: Site, save: Callable[[], None], user: Any, now: datetime) -> int:
    """``save`` writes ``site``; audited in the same transaction (no entry when nothing changed). Returns the
    ledger hours re-opened."""
    with transaction.atomic():
        stored = Site.objects.filter(pk=site.pk).first() if site.pk else None
        nodes: list[int] = []
        if stored is not None and any(getattr(stored, name) != getattr(site, name) for name in LEDGER_FIELDS):
            Organization.objects.select_for_update().filter(pk=stored.organization_id).first()
            nodes = list(Node.objects.filter(site_id=stored.pk).values_list("id", flat=True))
            lock_check_lines(organization_id=stored.organization_id, node_ids=nodes)
        before = snapshot(stored, fields=SITE_FIELDS)
        save()
        reopened = ledger_lines_reopen(node_windows={node: EVERY_HOUR for node in nodes}, now=now)
        after = snapshot(Site.objects.get(pk=site.pk), fields=SITE_FIELDS)
        if before != after:
            audit_record(
                organization_id=site.organization_id, user=user, subject="site", object_id=site.pk, before=before,
                after=after, at=now, ledger_hours_reopened=reopened,
            )  # fmt: skip
    return reopened
