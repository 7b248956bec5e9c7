"""Measured load curves per fleet x GPU model x LLM model, read from hourly usage and the ledger.

Public functions (others call them):

- ``load_curves(*, organization_ids, start, end, fleet_ids=(), llm_models=(),
  band_edges_rps_per_gpu=DEFAULT_BAND_EDGES_RPS_PER_GPU) -> list[LoadCurve]``:
  the curves of the organizations' fleets over ``[start, end)``; each
  ``LoadCurve`` (``accounting.advice.bands``) has its load bands, ascending, with
  their hours, requests, output tokens, GPU-hours, cost, IT and facility kWh,
  operational and embodied gCO2e and merged TTFT histogram.
- ``load_curve_rows(curves) -> list[dict]``: one flat row per curve x band, the
  figures as the load-curves report gives them (JSON and CSV).

The arithmetic (allocation of node-hours among LLM models, banding, merging) is
``accounting.advice.bands``; this module only reads rows into its dataclasses.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from accounting.advice.bands import (
    DEFAULT_BAND_EDGES_RPS_PER_GPU,
    CurveBand,
    EndpointHour,
    LoadCurve,
    NodeHour,
    curves_build,
    load_hours,
)
from accounting.ledger.units import significant
from accounting.reports.selectors.comparison import LOWER_BOUND_TTFT_KINDS
from accounting.reports.selectors.lines import ReportFilters, gpu_model_profiles, ledger_lines
from fleets.models import Fleet
from telemetry.histogram import Histogram
from telemetry.models import EndpointHourUsage

__all__ = ["DEFAULT_BAND_EDGES_RPS_PER_GPU", "QUANTILES", "LoadCurve", "load_curve_rows", "load_curves"]

QUANTILES = (50, 90, 95, 99)
# Rows streamed from the database per fetch: an hour of a 500-GPU fleet is ~100 endpoint rows.
_CHUNK = 5000


def load_curves(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    fleet_ids: Collection[int] = (),
    llm_models: Collection[str] = (),
    band_edges_rps_per_gpu: Sequence[float] = DEFAULT_BAND_EDGES_RPS_PER_GPU,
) -> list[LoadCurve]:
    """The measured curves over ``[start, end)``, ordered by fleet name, GPU model and LLM model."""
    node_hours = _node_hours(organization_ids, start, end, fleet_ids)
    endpoint_hours = _endpoint_hours(organization_ids, start, end, fleet_ids, llm_models)
    hours = load_hours(endpoint_hours, node_hours)
    fleet_names = dict(Fleet.objects.filter(organization_id__in=organization_ids).values_list("id", "name"))
    profiles = gpu_model_profiles(organization_ids=organization_ids)
    return curves_build(
        hours,
        fleet_names=fleet_names,
        gpu_classes={key: gpu_class for key, (_, gpu_class) in profiles.items()},
        edges=band_edges_rps_per_gpu,
    )


def _node_hours(
    organization_ids: Collection[int], start: datetime, end: datetime, fleet_ids: Collection[int]
) -> Iterator[NodeHour]:
    lines = ledger_lines(
        organization_ids=organization_ids, start=start, end=end, filters=ReportFilters(fleet_ids=frozenset(fleet_ids))
    )
    columns = ("node_id", "hour_start", "fleet_id", "gpu_model", "currency", "gpu_h", "cost", "it_kwh",
               "facility_kwh", "location_co2e_g", "embodied_co2e_g_central")  # fmt: skip
    for row in lines.values_list(*columns).iterator(chunk_size=_CHUNK):
        yield NodeHour(*row)  # the columns in NodeHour's field order


def _endpoint_hours(
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    fleet_ids: Collection[int],
    llm_models: Collection[str],
) -> Iterator[EndpointHour]:
    usage = EndpointHourUsage.objects.filter(
        endpoint__node__fleet__organization_id__in=organization_ids, hour_start__gte=start, hour_start__lt=end
    )
    if fleet_ids:
        usage = usage.filter(endpoint__node__fleet_id__in=fleet_ids)
    if llm_models:
        usage = usage.filter(endpoint__model_name__in=llm_models)
    columns = ("endpoint__node_id", "hour_start", "endpoint__model_name", "requests", "generation_tokens",
               "ttft_bucket_bounds_s", "ttft_bucket_counts", "endpoint__kind")  # fmt: skip
    for node_id, hour, model, requests, tokens, bounds, counts, kind in usage.values_list(*columns).iterator(
        chunk_size=_CHUNK
    ):
        yield EndpointHour(
            node_id=node_id,
            hour_start=hour,
            llm_model=model,
            requests=requests,
            generation_tokens=tokens,
            ttft=_histogram(bounds, counts),
            ttft_lower_bound=kind in LOWER_BOUND_TTFT_KINDS,
        )


def _histogram(bounds: Any, counts: Any) -> Histogram | None:
    if not counts or not bounds or len(counts) != len(bounds) + 1:
        return None
    return Histogram(tuple(float(b) for b in bounds), tuple(int(c) for c in counts))


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
                    "gpu_count": curve.gpu_count,
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
                }
            )
    return rows
