"""Measured load curves per fleet x GPU model x LLM model, read from hourly usage and the ledger.

Public functions (others call them):

- ``load_curves(*, organization_ids, start, end, fleet_ids=(), llm_models=(),
  band_edges_rps_per_gpu=DEFAULT_BAND_EDGES_RPS_PER_GPU) -> list[LoadCurve]``:
  the curves of the organizations' fleets over ``[start, end)``; each
  ``LoadCurve`` (``reports.bands``) has its load bands, ascending, with
  their hours, requests, output tokens, GPU-hours, cost, IT and facility kWh,
  operational and embodied gCO2e and merged TTFT histogram.
- ``load_curve_rows(curves) -> list[dict]``: one flat row per curve x band, the
  figures as the load-curves report gives them (JSON and CSV).

The arithmetic (banding, merging) is ``reports.bands``; the sharing of a
node-hour among LLM models is ``reports.sharing``'s rule, the
comparison's (by output tokens; node-hours without output tokens are no model's
and have no band). This module reads rows into the bands' dataclasses: summed in
SQL per fleet-hour where a node-hour has one endpoint-hour with output tokens
(with ``selectors.allocation``'s share expressions), row by row where
``bands.load_hours`` shares it (see ``load_curves``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import (
    Aggregate,
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
    Sum,
    TextField,
)
from django.db.models.functions import Cast

from accounting.ledger.units import significant
from accounting.models import LedgerServedHour
from accounting.site_hours import site_hours_any_pending, site_hours_in_use
from fleets.models import Fleet
from reports.aggregates import AMOUNT, unpriced_with_telemetry
from reports.bands import (
    DEFAULT_BAND_EDGES_RPS_PER_GPU,
    ZERO,
    CurveBand,
    CurveKey,
    EndpointHour,
    LoadCurve,
    LoadHour,
    NodeHour,
    curves_build,
    load_hours,
    load_hours_merge,
)
from reports.selectors.allocation import TAKES_SHARE, weighed, with_line
from reports.selectors.comparison import LOWER_BOUND_TTFT_KINDS
from reports.selectors.lines import gpu_model_profiles
from telemetry.histogram import Histogram, bucket_counts_sum
from telemetry.models import EndpointHourUsage, ServingEndpoint

__all__ = ["DEFAULT_BAND_EDGES_RPS_PER_GPU", "QUANTILES", "LoadCurve", "load_curve_rows", "load_curves"]

QUANTILES = (50, 90, 95, 99)


def load_curves(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    fleet_ids: Collection[int] = (),
    llm_models: Collection[str] = (),
    band_edges_rps_per_gpu: Sequence[float] = DEFAULT_BAND_EDGES_RPS_PER_GPU,
) -> list[LoadCurve]:
    """The measured curves over ``[start, end)``, ordered by fleet name, GPU model and LLM model.

    Only endpoint-hours with output tokens take a share of their line (the others, and node-hours
    without output tokens, have no load). A node-hour with one such endpoint-hour (the common
    case: one server, one LLM model) holds all of its line, so those are summed in SQL per fleet-hour x LLM
    model (x server kind x TTFT bucket layout): a few rows per hour instead of one per
    node. The others (several endpoint-hours on one node-hour, whose line is shared)
    are read row by row, with no histogram, and shared by ``load_hours``; their
    histograms are summed in SQL as the others' are (merging is exact in any grouping).
    Only nodes with several endpoints can have them, so without such nodes those reads
    and their test are skipped. All become parts of fleet-hours that ``load_hours_merge``
    adds up, as ``load_hours`` alone would.

    ``llm_models`` keeps those models' curves only: a node-hour is still shared among every model it
    served (which endpoint-hours make it shared, and the shares, are read unfiltered).
    """
    # Every model's endpoint-hours decide whether a node-hour is shared, and its shares; the model filter
    # applies to what is summed, and to the shared node-hours' parts once shared.
    usage = _served_usage(organization_ids, start, end, fleet_ids)
    wanted = frozenset(llm_models)
    asked = usage.filter(endpoint__model_name__in=wanted) if wanted else usage
    lines_in = _LineScope(organization_ids, frozenset(fleet_ids))
    several = _nodes_with_several_endpoints(organization_ids, fleet_ids, wanted)
    others = usage.filter(node_id=OuterRef("node_id"), hour_start=OuterRef("hour_start")).exclude(pk=OuterRef("pk"))
    # The served site-hours hold the single node-hours (accounting.served_hours), once none is left to sum.
    if site_hours_in_use() and not site_hours_any_pending(organization_ids=organization_ids, start=start, end=end):
        singles = _stored_hours(organization_ids, start, end, fleet_ids, wanted)
    else:
        singles = _single_hours(with_line(asked.filter(~Exists(others)) if several else asked), lines_in)
    if not several:
        hours = load_hours_merge(singles)
    else:
        shared = usage.filter(node_id__in=several).filter(Exists(others))
        shared_parts = load_hours(*_shared_rows(with_line(shared), lines_in))
        hours = load_hours_merge(
            itertools.chain(
                singles,
                (part for part in shared_parts if not wanted or part.key.llm_model in wanted),
                _single_hours(with_line(shared.filter(endpoint__model_name__in=wanted) if wanted else shared),
                              lines_in, histograms_only=True),
            )
        )  # fmt: skip
    fleet_names = dict(Fleet.objects.filter(organization_id__in=organization_ids).values_list("id", "name"))
    profiles = gpu_model_profiles(organization_ids=organization_ids)
    return curves_build(
        hours,
        fleet_names=fleet_names,
        gpu_classes={key: gpu_class for key, (_, gpu_class) in profiles.items()},
        edges=band_edges_rps_per_gpu,
    )


def _served_usage(
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    fleet_ids: Collection[int],
) -> QuerySet[EndpointHourUsage]:
    """The endpoint-hours that take a share of their line (they served output tokens) in the period, of every
    LLM model: the others have no GPU-hours, hence no load (``reports.sharing``)."""
    usage = EndpointHourUsage.objects.filter(
        TAKES_SHARE,
        node__fleet__organization_id__in=organization_ids,
        hour_start__gte=start,
        hour_start__lt=end,
    )
    if fleet_ids:
        usage = usage.filter(node__fleet_id__in=fleet_ids)
    return usage


def _nodes_with_several_endpoints(
    organization_ids: Collection[int], fleet_ids: Collection[int], llm_models: Collection[str]
) -> list[int]:
    """Nodes with more than one serving endpoint (of any model), the only ones whose node-hours may be shared;
    with ``llm_models``, only those with an endpoint of one of them."""
    endpoints = ServingEndpoint.objects.filter(node__fleet__organization_id__in=organization_ids)
    if fleet_ids:
        endpoints = endpoints.filter(node__fleet_id__in=fleet_ids)
    several = endpoints.values("node_id").annotate(n=Count("pk")).filter(n__gt=1).order_by()
    if llm_models:
        several = several.filter(node_id__in=endpoints.filter(model_name__in=llm_models).values("node_id"))
    return list(several.values_list("node_id", flat=True))


@dataclass(frozen=True, slots=True)
class _LineScope:
    """The ledger lines ``ledger_lines`` would give: the organizations' (and the fleets', if any), checked here
    rather than in ``with_line``'s join (see there)."""

    organization_ids: Collection[int]
    fleet_ids: frozenset[int]

    def __contains__(self, organization_and_fleet: tuple[int, int]) -> bool:
        organization_id, fleet_id = organization_and_fleet
        return organization_id in self.organization_ids and (not self.fleet_ids or fleet_id in self.fleet_ids)


def _single_hours(
    single: QuerySet[EndpointHourUsage], lines_in: _LineScope, *, histograms_only: bool = False
) -> Iterator[LoadHour]:
    """Parts of fleet-hours from node-hours with one endpoint-hour: its share of its line (whole, where the
    line's output tokens are its own), summed in SQL.

    ``histograms_only``: of any endpoint-hours, only their TTFT histograms (the other figures zero).
    """
    # The hour first: PostgreSQL sorts the rows to group them, and most comparisons end at the timestamp.
    keys = ("hour_start", "k_line__organization_id", "k_line__fleet_id", "k_line__gpu_model", "k_line__currency",
            "endpoint__model_name", "endpoint__kind", "bounds")  # fmt: skip
    figures = ("gpu_h", "cost", "it_kwh", "facility_kwh", "location_co2e_g", "embodied_co2e_g_central",
               "embodied_unknown_gpu_h")  # fmt: skip
    rows = (
        single.annotate(bounds=Cast("ttft_bucket_bounds_s", TextField()))
        .values(*keys)
        .annotate(
            s_requests=Sum("requests"),
            s_tokens=Sum("generation_tokens"),
            **{f"s_{name}": Sum(weighed(name, AMOUNT)) for name in figures},
            s_unknown_kwh=Sum(weighed("facility_kwh", AMOUNT), filter=Q(k_line__location_co2e_g__isnull=True)),
            n_unpriced=Count("pk", filter=unpriced_with_telemetry("k_line__")),
            counts=_Joined(Cast("ttft_bucket_counts", TextField())),
        )
        .order_by()
        .values_list(
            *keys, "s_requests", "s_tokens", *(f"s_{name}" for name in figures), "s_unknown_kwh", "n_unpriced", "counts"
        )
    )
    return _parts(rows, lines_in, histograms_only=histograms_only)


def _parts(
    rows: Iterable[tuple[Any, ...]], lines_in: _LineScope, *, histograms_only: bool = False
) -> Iterator[LoadHour]:
    """``LoadHour`` parts from rows summed per fleet-hour x LLM model x server kind x TTFT layout (the hour, the
    organization to the layout as JSON text, then the sums, and the histograms' counts ``_Joined``)."""
    layouts: dict[str | None, tuple[float, ...]] = {}
    for (hour, organization_id, fleet_id, gpu_model, currency, llm_model, kind, bounds, requests, tokens,
         gpu_h, cost, it_kwh, facility_kwh, operational, embodied, embodied_unknown_h, unknown_kwh, unpriced,
         counts) in rows:  # fmt: skip
        if (organization_id, fleet_id) not in lines_in:
            continue
        if bounds not in layouts:
            layouts[bounds] = _bounds(bounds)
        ttft = _histogram_sum(layouts[bounds], counts)
        lower = kind in LOWER_BOUND_TTFT_KINDS
        if histograms_only:
            if ttft is not None:
                yield LoadHour(
                    key=CurveKey(fleet_id, gpu_model, llm_model), currency=currency, hour_start=hour, requests=0,
                    generation_tokens=0, gpu_h=ZERO, cost=ZERO, it_kwh=ZERO, facility_kwh=ZERO,
                    operational_co2e_g=None, embodied_co2e_g=ZERO, ttft=None if lower else ttft,
                    ttft_lower_bound=ttft if lower else None,
                )  # fmt: skip
            continue
        yield LoadHour(
            key=CurveKey(fleet_id, gpu_model, llm_model),
            currency=currency,
            hour_start=hour,
            requests=requests,
            generation_tokens=tokens,
            gpu_h=gpu_h,
            cost=cost,
            it_kwh=it_kwh,
            facility_kwh=facility_kwh,
            operational_co2e_g=operational,  # the known lines' sum (SQL leaves NULLs out); None: none known
            embodied_co2e_g=embodied,
            ttft=None if lower else ttft,
            ttft_lower_bound=ttft if lower else None,
            unknown_intensity_kwh=unknown_kwh or ZERO,
            embodied_unknown_gpu_h=embodied_unknown_h or ZERO,
            unpriced_node_hours=unpriced,
        )


def _stored_hours(
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    fleet_ids: Collection[int],
    llm_models: Collection[str],
) -> Iterator[LoadHour]:
    """Parts of fleet-hours from node-hours with one endpoint-hour (with output tokens), read from the served
    site-hours (``accounting.served_hours``): the lines those endpoint-hours hold whole, with their requests,
    output tokens and histograms, as ``_single_hours`` sums them from the lines and the endpoint-hours, summed
    when the lines were stored; here summed again over the fleet-hour's sites.

    The organizations and fleets are the lines' (``_single_hours`` also asks the node's fleet now: a node
    moved to another fleet has its earlier hours under the fleet of their lines here, under none there)."""
    served = LedgerServedHour.objects.filter(
        organization_id__in=organization_ids, hour_start__gte=start, hour_start__lt=end
    )
    if fleet_ids:
        served = served.filter(fleet_id__in=fleet_ids)
    if llm_models:
        served = served.filter(llm_model__in=llm_models)
    keys = ("hour_start", "organization_id", "fleet_id", "gpu_model", "currency", "llm_model", "endpoint_kind",
            "bounds")  # fmt: skip
    figures = ("requests", "generation_tokens", "gpu_h", "cost", "it_kwh", "facility_kwh", "location_co2e_g",
               "embodied_co2e_g_central", "embodied_unknown_gpu_h", "unknown_intensity_kwh",
               "unpriced_hours")  # fmt: skip
    rows = (
        served.annotate(bounds=Cast("ttft_bucket_bounds_s", TextField()))
        .values(*keys)
        .annotate(
            **{f"s_{name}": Sum(name) for name in figures}, counts=_Joined(Cast("ttft_bucket_counts", TextField()))
        )
        .order_by()
        .values_list(*keys, *(f"s_{name}" for name in figures), "counts")
    )
    return _parts(rows, _LineScope(organization_ids, frozenset(fleet_ids)))


def _shared_rows(
    shared: QuerySet[EndpointHourUsage], lines_in: _LineScope
) -> tuple[list[EndpointHour], list[NodeHour]]:
    """Endpoint-hours of node-hours with several, and their lines, row by row for ``load_hours`` to share.

    No histograms: ``_single_hours(..., histograms_only=True)`` sums them.
    """
    line_columns = ("node_id", "hour_start", "fleet_id", "gpu_model", "currency", "gpu_h", "cost", "it_kwh",
                    "facility_kwh", "location_co2e_g", "embodied_co2e_g_central")  # fmt: skip
    columns = ("endpoint__model_name", "requests", "generation_tokens", "k_line__organization_id",
               *(f"k_line__{name}" for name in line_columns), "k_unpriced", "k_line__generation_tokens",
               "k_line__embodied_unknown_gpu_h")  # fmt: skip
    endpoint_hours, node_hours = [], {}
    unpriced = ExpressionWrapper(unpriced_with_telemetry("k_line__"), output_field=BooleanField())
    for model, requests, tokens, organization_id, *line in shared.annotate(k_unpriced=unpriced).values_list(*columns):
        node_hour = NodeHour(*line)  # the columns in NodeHour's field order
        if (organization_id, node_hour.fleet_id) not in lines_in:
            continue
        node_hours[(node_hour.node_id, node_hour.hour_start)] = node_hour
        endpoint_hours.append(
            EndpointHour(
                node_id=node_hour.node_id,
                hour_start=node_hour.hour_start,
                llm_model=model,
                requests=requests,
                generation_tokens=tokens,
            )
        )
    return endpoint_hours, list(node_hours.values())


def _bounds(text: str | None) -> tuple[float, ...]:
    """A bucket layout read once per distinct layout (JSON text); empty: no histogram."""
    bounds = json.loads(text) if text else None
    return tuple(float(b) for b in bounds) if bounds else ()


def _histogram_sum(bounds: tuple[float, ...], joined: str | None) -> Histogram | None:
    """The bucket-wise sum of the hour's histograms of one layout (``_Joined`` JSON arrays, comma-separated):
    ``telemetry.histogram.bucket_counts_sum``'s rule."""
    if not bounds or not joined:
        return None
    sums = bucket_counts_sum(len(bounds) + 1, json.loads(f"[{joined}]"))
    return None if sums is None else Histogram(bounds, sums)


class _Joined(Aggregate):
    """The group's texts joined with commas (NULLs left out): ``STRING_AGG``, SQLite's ``GROUP_CONCAT``."""

    function = "STRING_AGG"
    template = "%(function)s(%(expressions)s, ',')"
    output_field = TextField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return super().as_sql(compiler, connection, function="GROUP_CONCAT", **extra_context)


def _unit(value: float | Decimal | None) -> Decimal | None:
    """A unit figure to 4 significant digits (``accounting.ledger.units.significant``)."""
    if value is None:
        return None
    return significant(value if isinstance(value, Decimal) else Decimal(repr(float(value))))


def _ms(seconds: float | None) -> Decimal | None:
    return None if seconds is None else _unit(seconds * 1000)


def _quantiles(band: CurveBand) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for q in QUANTILES:
        bucket = band.ttft_quantile_bucket_s(q / 100)
        figures[f"ttft_p{q}_ms"] = _ms(band.ttft_quantile_s(q / 100))
        figures[f"ttft_p{q}_bucket_low_ms"] = None if bucket is None else _ms(bucket[0])
        figures[f"ttft_p{q}_bucket_high_ms"] = None if bucket is None else _ms(bucket[1])
    return figures


def load_curve_rows(curves: Sequence[LoadCurve]) -> list[dict[str, Any]]:
    """One row per curve x band: the figures the load-curves report shows, unit figures to 4 significant digits."""
    rows = []
    for curve in curves:
        for band in curve.bands:
            rows.append(
                {
                    "fleet_id": curve.key.fleet_id,
                    "fleet_name": curve.fleet_name,
                    "gpu_model": curve.key.gpu_model,
                    "gpu_class": curve.gpu_class,
                    "llm_model": curve.key.llm_model,
                    "currency": curve.currency,
                    "gpu_count": _unit(curve.gpu_count),
                    "curve_hours": curve.hours,
                    "band_low_rps_per_gpu": band.low_rps_per_gpu,
                    "band_high_rps_per_gpu": band.high_rps_per_gpu,
                    "hours": band.hours,
                    "rps_per_gpu": _unit(band.rps_per_gpu),
                    "max_rps_per_gpu": _unit(band.max_rps_per_gpu),
                    "output_tokens_per_s_per_gpu": _unit(band.output_tokens_per_s_per_gpu),
                    "requests": band.requests,
                    "generation_tokens": band.generation_tokens,
                    "ttft_basis": band.ttft_basis,
                    **_quantiles(band),
                    "cost_per_1m_output_tokens": _unit(band.cost_per_1m_output_tokens),
                    "it_j_per_output_token": _unit(band.it_j_per_output_token),
                    "facility_kwh_per_1m_output_tokens": _unit(band.facility_kwh_per_1m_output_tokens),
                    "operational_gco2e_per_1m_output_tokens": _unit(band.operational_gco2e_per_1m_output_tokens),
                    "embodied_gco2e_per_1m_output_tokens": _unit(band.embodied_gco2e_per_1m_output_tokens),
                    "gco2e_per_1m_output_tokens": _unit(band.gco2e_per_1m_output_tokens),
                    "operational_coverage": _unit(band.operational_coverage),
                    "embodied_unknown_gpu_h": _unit(band.embodied_unknown_gpu_h),
                    "carbon_per_token_note": "; ".join(band.carbon_per_token_gaps) or None,
                    "unpriced_node_hours": band.unpriced_node_hours,
                }
            )
    return rows
