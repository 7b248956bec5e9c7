"""Writes of the inventory's inputs: the consolidation approach, a node's electricity scope, Scope 1 entries.

Each is checked by ``scope2.boundary``'s rule (a problem names its field), audited and lock-checked by the
caller (``governance.audited_write``) over the periods whose figures it changes: a node's scope, the hours of
the node's ledger lines (``node_lines_window``); the approach, everything from the organization's first figure
on (``organization_window``: its first ledger hour, Scope 1 entry, commissioning or card acquisition); a
Scope 1 entry, its own period.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Max, Min

from accounting.models import GpuAsset, NodeHourLedger
from common.periods import hour_instant_problem
from fleets.models import Node, Organization, Site
from governance.intervals import Window
from scope2.boundary import boundary_problem, choice_problem
from scope2.models import InventoryBoundary, NodeScope, Scope1Emission

NOTHING: Window = (datetime(1970, 1, 1, tzinfo=UTC), datetime(1970, 1, 1, tzinfo=UTC))  # overlaps no period


def node_lines_window(node: Node) -> Window:
    """The hours of the node's ledger lines: what a change of its electricity scope restates."""
    span = NodeHourLedger.objects.filter(node=node).aggregate(first=Min("hour_start"), last=Max("hour_start"))
    if span["first"] is None:
        return NOTHING
    return span["first"], span["last"] + timedelta(hours=1)


def organization_window(organization: Organization) -> Window:
    """From the organization's first figure on: what a change of its consolidation approach restates."""
    firsts = [
        NodeHourLedger.objects.filter(organization=organization).aggregate(at=Min("hour_start"))["at"],
        Scope1Emission.objects.filter(organization=organization).aggregate(at=Min("start"))["at"],
        Node.objects.filter(fleet__organization=organization).aggregate(at=Min("commissioned_at"))["at"],
    ]
    acquired = GpuAsset.objects.filter(gpu__node__fleet__organization=organization).aggregate(on=Min("acquired_on"))
    if acquired["on"] is not None:
        firsts.append(datetime.combine(acquired["on"], time.min, tzinfo=UTC))
    known = [at for at in firsts if at is not None]
    return (min(known), None) if known else NOTHING


SCOPE1_FIELDS = ("site", "activity", "start", "end", "co2e_kg", "description")


class InventoryInputInvalid(ValueError):
    """An input refused as given: ``problems`` maps each field to why."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{name}: {why}" for name, why in problems.items()))
        self.problems = dict(problems)


def inventory_boundary_set(
    *, organization: Organization, approach: str, equity_share_pct: Decimal | None
) -> InventoryBoundary:
    if problems := boundary_problem(approach=approach, equity_share_pct=equity_share_pct):
        raise InventoryInputInvalid(problems)
    row, _ = InventoryBoundary.objects.update_or_create(
        organization=organization,
        defaults={"consolidation_approach": approach, "equity_share_pct": equity_share_pct},
    )
    return row


def node_scope_set(*, node: Node, electricity: str, reason: str) -> NodeScope:
    if problem := choice_problem(tenure=node.tenure, choice=electricity):
        raise InventoryInputInvalid({"electricity": problem})
    row, _ = NodeScope.objects.update_or_create(
        node=node,
        defaults={"organization_id": node.fleet.organization_id, "electricity": electricity, "reason": reason},
    )
    return row


def _scope1_check(row: Scope1Emission) -> None:
    problems = {name: problem for name in ("start", "end") if (problem := hour_instant_problem(getattr(row, name)))}
    if not problems and row.end <= row.start:
        problems["end"] = "must be after start"
    if not row.description.strip():
        problems["description"] = "say what was emitted and how it was worked out"
    if problems:
        raise InventoryInputInvalid(problems)


def scope1_emission_create(*, organization: Organization, site: Site, data: Mapping[str, Any]) -> Scope1Emission:
    values = {name: data[name] for name in SCOPE1_FIELDS if name in data and name != "site"}
    row = Scope1Emission(organization=organization, site=site, **values)
    _scope1_check(row)
    row.save()
    return row


def scope1_emission_update(*, row: Scope1Emission, data: Mapping[str, Any]) -> Scope1Emission:
    row = Scope1Emission.objects.get(pk=row.pk)
    for name in SCOPE1_FIELDS:
        if name in data:
            setattr(row, name, data[name])
    _scope1_check(row)
    row.save()
    return row
