"""What a report request may see: its period, and its organizations and filters among the user's own.

The scoping rule, the same on every report endpoint: a report covers only the
organizations the user is a member of (any role, viewer included). Naming an
organization, fleet, site, node or baseline fleet that is not among them
answers 404, whether it exists or not (its existence is not revealed); without
an ``organization`` parameter the report covers all of the user's organizations.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone
from rest_framework.exceptions import NotFound, ValidationError

from common.periods import DEFAULT_PRESET, PRESETS, PeriodError, api_range
from fleets.models import Fleet, Node, Organization, Site
from fleets.permissions import Capability, change_check
from fleets.selectors import organizations_for_user

# The largest id a path or query may name (a bigint); larger ones are refused as not found, not as a 500.
ID_MAX = 2**63 - 1
# What an organization's slug can be (Django's SlugField).
_SLUG = re.compile(r"[-a-zA-Z0-9_]+")


@dataclass(frozen=True)
class ReportFilters:
    """Narrowing inside ``organization_ids``; an empty set does not filter. Ids, model keys, ISO currency codes."""

    fleet_ids: frozenset[int] = frozenset()
    site_ids: frozenset[int] = frozenset()
    node_ids: frozenset[int] = frozenset()
    gpu_models: frozenset[str] = frozenset()
    currencies: frozenset[str] = frozenset()


NO_FILTERS = ReportFilters()

# Without a period a report covers what the dashboards show first: the last 7 days, to the last complete hour.
DEFAULT_PERIOD_LABEL = PRESETS[DEFAULT_PRESET].lower()


def report_period(
    params: Mapping[str, Any], *, now: datetime | None = None, through: datetime | None = None
) -> tuple[datetime, datetime]:
    """``[start, end)`` from ``period``, or from ``start`` and ``end``, or the dashboards' default (ending at
    ``through``, the end of the last complete hour: ``common.periods.preset_range``); 400 otherwise."""
    now = now or timezone.now()
    try:
        return api_range(params.get("period"), params.get("start"), params.get("end"), now=now, through=through)
    except PeriodError as error:
        raise ValidationError({"period": [str(error)]}) from error


def organization_named(organizations: QuerySet[Organization], ref: str) -> Organization:
    """The organization of ``organizations`` that ``ref`` (an id or a slug) names; ``NotFound`` otherwise."""
    # ASCII digits only (``isdigit`` is true of "²", which ``int`` refuses); an id past bigint names nothing,
    # and neither does text no slug can be (a NUL byte, which PostgreSQL refuses in a query, included).
    numeric = ref.isascii() and ref.isdigit()
    if (numeric and int(ref) > ID_MAX) or (not numeric and not _SLUG.fullmatch(ref)):
        raise NotFound(f"no organization {ref!r} among yours")
    organization = organizations.filter(Q(pk=int(ref)) if numeric else Q(slug=ref)).first()
    if organization is None:
        raise NotFound(f"no organization {ref!r} among yours")
    return organization


def report_organization_ids(*, user: Any, refs: Iterable[str]) -> list[int]:
    """Ids of the organizations asked for (ids or slugs), all of the user's when none; 404 for one not theirs."""
    mine = organizations_for_user(user=user)
    refs = list(refs)
    if not refs:
        return list(mine.values_list("id", flat=True))
    return sorted({organization_named(mine, ref).pk for ref in refs})


def report_organization(*, user: Any, ref: str | None) -> Organization:
    """The one organization a report is about: the one asked for, or the user's only one."""
    mine = organizations_for_user(user=user)
    if ref:
        return organization_named(mine, ref)
    only = list(mine[:2])
    if not only:
        raise NotFound("you belong to no organization")
    if len(only) > 1:
        raise ValidationError({"organization": ["you belong to several organizations: name one (id or slug)"]})
    return only[0]


def writable_organization(*, user: Any, ref: str | None, capability: Capability) -> Organization:
    """The one organization a write names (as ``report_organization`` finds it), if the user's role may make
    ``capability``'s changes in it; ``fleets.permissions.RoleRefused`` otherwise (403 from an ``InputView``)."""
    organization = report_organization(user=user, ref=ref)
    change_check(user=user, organization=organization, capability=capability)
    return organization


def _owned_ids(queryset: QuerySet[Any], ids: Iterable[int], what: str) -> frozenset[int]:
    wanted = set(ids)
    found = set(queryset.filter(pk__in=wanted).values_list("pk", flat=True))
    missing = sorted(wanted - found)
    if missing:
        raise NotFound(f"no {what} {missing[0]} in the organizations of this report")
    return frozenset(wanted)


def report_fleet_ids(*, organization_ids: Collection[int], ids: Iterable[int]) -> frozenset[int]:
    return _owned_ids(Fleet.objects.filter(organization_id__in=organization_ids), ids, "fleet")


def report_filters(*, organization_ids: Collection[int], params: Mapping[str, Any]) -> ReportFilters:
    """Filters of a report request, each id checked to belong to the report's organizations."""
    return ReportFilters(
        fleet_ids=report_fleet_ids(organization_ids=organization_ids, ids=params.get("fleet", [])),
        site_ids=_owned_ids(Site.objects.filter(organization_id__in=organization_ids), params.get("site", []), "site"),
        node_ids=_owned_ids(
            Node.objects.filter(fleet__organization_id__in=organization_ids), params.get("node", []), "node"
        ),
        gpu_models=frozenset(params.get("gpu_model", [])),
        currencies=frozenset(params.get("currency", [])),
    )


def period_described(params: Mapping[str, Any]) -> str:
    """The period a report answered for, in the words of its request: ``2026-11``, ``start/end`` or the default."""
    if params.get("period"):
        return str(params["period"])
    if params.get("start") or params.get("end"):
        return "start/end"
    return f"{DEFAULT_PERIOD_LABEL} (the default without period, start or end)"
