"""The ledger lines a report reads, its filters, and GPU model names shared by every report."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from accounting.hardware import HardwareProfile as HardwareProfileData
from accounting.hardware import Source, load_catalog
from accounting.models import HardwareProfile, LedgerSiteHour, NodeHourLedger
from accounting.profiles import UNKNOWN_MODEL, hardware_profiles, profile_for_gpu
from accounting.site_hours import KEYS, SHARE_KEYS, site_hours_any_pending, site_hours_in_use
from common.scope import NO_FILTERS, ReportFilters
from fleets.models import Gpu

# The ledger's label for a node whose GPUs are of several models (accounting.node_hour_lines).
MIXED_MODEL = "mixed"


def ledger_lines(
    *, organization_ids: Collection[int], start: datetime, end: datetime, filters: ReportFilters = NO_FILTERS
) -> QuerySet[NodeHourLedger]:
    """The ledger lines of the organizations in ``[start, end)``, filtered (served by the ledger_org_hour index)."""
    return _of_period(NodeHourLedger, organization_ids=organization_ids, start=start, end=end, filters=filters)


def _of_period(
    model: Any, *, organization_ids: Collection[int], start: datetime, end: datetime, filters: ReportFilters
) -> QuerySet[Any]:
    """``model``'s rows (lines or site-hours, whose columns are named alike) of the organizations in
    ``[start, end)``, filtered."""
    rows = model.objects.filter(organization_id__in=organization_ids, hour_start__gte=start, hour_start__lt=end)
    for field, values in _narrowing(filters):
        rows = rows.filter(**{f"{field}__in": values})
    return rows


# What site-hour rows are keyed by (``accounting.site_hours.KEYS``), and the models those keys lead to.
_SITE_HOUR_KEYS = frozenset(KEYS) | {key.removesuffix("_id") for key in KEYS} | frozenset(SHARE_KEYS)


def site_hours_hold(*, keys: Iterable[str] = (), filters: ReportFilters = NO_FILTERS) -> bool:
    """Whether a query grouped by ``keys`` (fields, or lookups through site, fleet or organization) and narrowed
    by ``filters`` reads the same figures from the site-hours (``accounting.site_hours``) as from the lines:
    not per node, nor by what only a node has (its tenure), nor by a price (the rows say priced or not only)."""
    if filters.node_ids or not site_hours_in_use():
        return False
    return all(key.split("__")[0] in _SITE_HOUR_KEYS for key in keys)


def site_hours_serve(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    keys: Iterable[str] = (),
    filters: ReportFilters = NO_FILTERS,
) -> bool:
    """Whether the site-hours of ``[start, end)`` serve a query grouped by ``keys`` and narrowed by ``filters``
    (``site_hours_hold``) now: none of the organizations' site-hours of the period is marked to be summed again
    (on a Citus coordinator, for the moment after a node's ledger transaction, ``site_hours_any_pending``); else the
    lines, which hold the figures already."""
    if not site_hours_hold(keys=keys, filters=filters):
        return False
    return not site_hours_any_pending(organization_ids=organization_ids, start=start, end=end)


def ledger_rows(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    filters: ReportFilters = NO_FILTERS,
    site_hours: bool,
) -> QuerySet[Any]:
    """``ledger_lines``, or with ``site_hours`` their site-hours (``site_hours_serve`` says when they serve):
    the same filters, the same column names. Sum them with ``reports.aggregates.ledger_sums(site_hours=...)``."""
    model = LedgerSiteHour if site_hours else NodeHourLedger
    return _of_period(model, organization_ids=organization_ids, start=start, end=end, filters=filters)


def ledger_lines_where(*, line: str, filters: ReportFilters = NO_FILTERS) -> Q:
    """The filters as a condition on ledger lines reached at ``line`` (a path ending in ``__``)."""
    return Q(**{f"{line}{field}__in": values for field, values in _narrowing(filters)})


def _narrowing(filters: ReportFilters) -> list[tuple[str, frozenset[Any]]]:
    narrowing = (
        ("fleet_id", filters.fleet_ids),
        ("site_id", filters.site_ids),
        ("node_id", filters.node_ids),
        ("gpu_model", filters.gpu_models),
        ("currency", filters.currencies),
    )
    return [(field, values) for field, values in narrowing if values]


def gpu_model_profiles(*, organization_ids: Collection[int]) -> dict[str, tuple[str, str | None]]:
    """GPU model key → (display name, class: enterprise / consumer), the organizations' own profiles winning."""
    profiles: dict[str, tuple[str, str | None]] = {
        UNKNOWN_MODEL: ("unknown model", None),
        MIXED_MODEL: ("mixed models", None),
    }
    profiles |= {profile.key: (profile.display_name, profile.gpu_class.value) for profile in load_catalog()}
    own = HardwareProfile.objects.filter(organization_id__in=organization_ids).order_by("organization_id", "key")
    profiles |= {key: (name, gpu_class) for key, name, gpu_class in own.values_list("key", "display_name", "gpu_class")}
    return profiles


# The catalog's sources of the figures embodied carbon is computed from.
EMBODIED_FIGURES = frozenset({"embodied_kgco2e", "host_embodied_kgco2e_per_gpu"})


def embodied_sources(*, organization_ids: Collection[int]) -> dict[str, str]:
    """GPU model key → the sources of its embodied carbon factors ("title (url); ..."), own profiles winning."""
    return {key: "; ".join(cited) for key, cited in embodied_source_lists(organization_ids=organization_ids).items()}


def embodied_source_lists(*, organization_ids: Collection[int]) -> dict[str, tuple[str, ...]]:
    """GPU model key → each source of its embodied carbon factors ("title (url)"), own profiles winning."""
    sources = {profile.key: _cited(profile.sources) for profile in load_catalog()}
    own = HardwareProfile.objects.filter(organization_id__in=organization_ids).order_by("organization_id", "key")
    for key, cited in own.values_list("key", "sources"):
        sources[key] = _cited(Source(s.get("what", ""), s.get("title", ""), s.get("url"), s.get("year")) for s in cited)
    return sources


def sources_joined(models: Iterable[str], sources: Mapping[str, tuple[str, ...]]) -> str | None:
    """The sources of the models' embodied factors, each once, in the models' order; ``None`` without any."""
    cited = dict.fromkeys(source for model in models for source in sources.get(model, ()))
    return "; ".join(cited) or None


def mixed_node_models(*, lines: QuerySet[NodeHourLedger]) -> tuple[str, ...]:
    """The GPU model keys on the nodes whose ``lines`` are labelled "mixed" (several models on one node)."""
    node_ids = lines.filter(gpu_model=MIXED_MODEL).order_by().values_list("node_id", flat=True).distinct()
    gpus = Gpu.objects.filter(node_id__in=node_ids).select_related("asset", "node__fleet").order_by("node_id", "index")
    profiles: dict[int, tuple[HardwareProfileData, ...]] = {}
    models: dict[str, None] = {}
    for gpu in gpus:
        organization_id = gpu.node.fleet.organization_id
        if organization_id not in profiles:
            profiles[organization_id] = hardware_profiles(organization_id=organization_id)
        profile = profile_for_gpu(gpu, profiles[organization_id])
        if profile is not None:
            models[profile.key] = None
    return tuple(models)


def _cited(sources: Iterable[Source]) -> tuple[str, ...]:
    return tuple(
        f"{source.title} ({source.url})" if source.url else source.title
        for source in sources
        if source.what in EMBODIED_FIGURES
    )
