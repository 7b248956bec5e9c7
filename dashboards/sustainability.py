"""The sustainability dashboard: Scope 2 (location and market based), embodied with its range,
carbon per token over time, energy per token by GPU model, grid intensity per zone, data quality.

Totals and data quality are the report of ``/api/v1/reports/sustainability/``
(``sustainability_report_from``), built from the same single query as the charts, and led, as
the API is, by the market-based figure to disclose (``scope2.headline.sustainability_shown``).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting.ledger.totals import carbon_per_token_gaps
from common.charts import figure_html, gpu_model_colour, grouped_bars, series_lines
from common.periods import Period
from dashboards.common import api_query, dashboard_context, organization_ids, period_buckets
from reports.aggregates import RowsAggregate
from reports.display import quality_hour_output
from reports.metrics import LedgerSums
from reports.sci import incomplete_reasons
from reports.selectors import BUCKET, LedgerPart, ledger_parts, parts_sum
from reports.selectors.sustainability import (
    BASIS_SUMS,
    REPORT_ANNOTATIONS,
    REPORT_KEYS,
    QualityHour,
    quality_hours,
    sustainability_report_from,
)
from reports.selectors.trace import EmbodiedFactors, embodied_factors_used
from scope2.headline import sustainability_shown

# The report's groups, split further for the charts: one query gives the tiles, the
# data-quality table and every chart (the same report as the API's, added from finer parts).
_KEYS = (*REPORT_KEYS, "fleet_id", "gpu_model", "site__grid_zone")
# The page's per-hour data-quality table shows at most this many hours (the latest) that were not
# wholly measured and priced; the export has every hour.
QUALITY_HOURS_SHOWN = 48
# Why a per-token carbon tile has no figure: besides the SCI's own reasons (reports.sci.incomplete_reasons).
NO_TOKENS = "no tokens served in the period"
NO_OUTPUT_TOKENS = "no output tokens served in the period"
_INTENSITY = {
    "s_intensity": RowsAggregate(Sum("location_gco2e_per_kwh"), Sum("location_gco2e_per_kwh_sum")),
    "s_intensity_n": RowsAggregate(Count("location_gco2e_per_kwh"), Sum("location_gco2e_per_kwh_n")),
}


@login_required
def sustainability_page(request: HttpRequest) -> HttpResponse:
    context = dashboard_context(request, now=timezone.now())
    organization, period = context["organization"], context["period"]
    page = {**context, "section": "sustainability"}
    parts = _parts(organization_ids(organization), period) if organization is not None else []
    if not parts:
        return render(request, "dashboards/sustainability.html", page)
    report = sustainability_report_from(parts, organization_id=organization.pk, start=period.start, end=period.end)
    hours = quality_hours(organization_id=organization.pk, start=period.start, end=period.end)
    imperfect = [hour for hour in hours if _imperfect(hour)]
    shown, scope2 = sustainability_shown(report=report, organization=organization)
    per_bucket = parts_sum(parts, lambda p: p.key[BUCKET])
    return render(
        request,
        "dashboards/sustainability.html",
        {
            **page,
            "report": shown,
            "charts": [
                figure_html(_sci_over_time(per_bucket, period), div_id="chart-sci"),
                figure_html(_energy_per_token_by_model(parts), div_id="chart-j-per-token"),
                figure_html(_grid_intensity(parts, period), div_id="chart-grid"),
            ],
            "api_query": api_query(period, organization),
            "quality_hours": [quality_hour_output(hour) for hour in imperfect[-QUALITY_HOURS_SHOWN:]],
            "quality_hours_imperfect": len(imperfect),
            "quality_hours_all": len(hours),
            "embodied_factors": _embodied_factors(parts, organization_ids(organization), period),
            **_scope2_panel(shown, scope2),
            **_per_token_reasons(shown, report.sums),
            "sci_chart_note": _sci_over_time_note(per_bucket),
        },
    )


def _per_token_reasons(shown: dict[str, Any], sums: LedgerSums) -> dict[str, str | None]:
    """Why each per-token carbon tile shows no figure (None where it shows one): what the SCI block says."""
    reasons = incomplete_reasons(sums)

    def why(value: Any, tokens: int, no_tokens: str) -> str | None:
        if value is not None:
            return None
        return "; ".join([*([] if tokens else [no_tokens]), *reasons]) or "not known"

    return {
        "sci_reason": why(shown["sci_gco2e_per_1k_tokens"], sums.totals.tokens, NO_TOKENS),
        "sci_output_reason": why(
            shown["sci_gco2e_per_1k_output_tokens"], sums.totals.generation_tokens, NO_OUTPUT_TOKENS
        ),
    }


def _scope2_panel(shown: dict[str, Any], scope2: dict[str, Any]) -> dict[str, Any]:
    """Scope 2 dual reporting from contractual instruments and the 24/7 CFE score, as its own panel.

    Its market-based figure is the headline tile's (``scope2.headline``); the site-factor figure, internal,
    is reconciled with it below the table, so that the page never shows two without saying why."""
    site_factors_kg, disclosed_kg = shown["market_site_factors_kgco2e"], shown["market_kgco2e"]
    differ = site_factors_kg is not None and disclosed_kg is not None and site_factors_kg != disclosed_kg
    return {
        "scope2": scope2, "ledger_market_kgco2e": site_factors_kg,
        "market_difference_kgco2e": (site_factors_kg - disclosed_kg) if differ else None,
    }  # fmt: skip


def _embodied_factors(parts: list[LedgerPart], ids: list[int], period: Period) -> list[EmbodiedFactors]:
    """Each GPU model whose lines carry embodied carbon in the period, with its factors' sources."""
    per_model = parts_sum(parts, lambda p: p.key["gpu_model"] or "")
    embodied_g = {model: sums.totals.embodied_co2e_g.central for model, sums in per_model.items() if model}
    return embodied_factors_used(
        organization_ids=ids, start=period.start, end=period.end, embodied_g_by_model=embodied_g
    )


def _imperfect(hour: QualityHour) -> bool:
    """An hour not wholly measured and priced: something bridged, missing or unpriced."""
    return hour.bridged_h > 0 or hour.missing_h > 0 or hour.unpriced_hours > 0


def _parts(ids: list[int], period: Period) -> list[LedgerPart]:
    return ledger_parts(
        organization_ids=ids,
        start=period.start,
        end=period.end,
        keys=_KEYS,
        granularity=period.granularity,
        money=False,
        annotations=REPORT_ANNOTATIONS,
        site_hour_annotations=True,  # as the report's (reports.selectors.sustainability)
        extra={**_INTENSITY, **BASIS_SUMS},
    )


def _sci_over_time(per_bucket: dict[Any, LedgerSums], period: Period) -> Any:
    """Each bucket's carbon per 1k output tokens and per 1k tokens (SCI), unrounded (carbon adds across currencies):
    no point where the bucket's figure is withheld, by the rule of every carbon figure per token (its note says why).
    """
    series = {
        "gCO2e per 1k output tokens": [
            (max(bucket, period.start), _float(sums.sci_g_per_1k_output_tokens)) for bucket, sums in per_bucket.items()
        ],
        "gCO2e per 1k tokens, input + output (SCI)": [
            (max(bucket, period.start), _float(sums.sci_g_per_1k_tokens)) for bucket, sums in per_bucket.items()
        ],
    }
    return series_lines(
        "Carbon per 1k tokens (location-based + embodied)", "gCO2e / 1k tokens", series, buckets=period_buckets(period)
    )


def _sci_over_time_note(per_bucket: dict[Any, LedgerSums]) -> str | None:
    """Why the carbon-per-token chart has no point for some periods (their figure withheld); None: none is."""
    withheld = [sums.totals for sums in per_bucket.values() if not sums.totals.sci_complete]
    if not withheld:
        return None
    gaps = carbon_per_token_gaps(
        facility_kwh=sum((totals.facility_kwh for totals in withheld), Decimal(0)),
        unknown_intensity_kwh=sum((totals.location_unknown_facility_kwh for totals in withheld), Decimal(0)),
        embodied_unknown_gpu_h=sum((totals.embodied_unknown_gpu_h for totals in withheld), Decimal(0)),
    )
    reasons = "; ".join(gaps)
    return f"Carbon per token is not stated for {len(withheld)} of {len(per_bucket)} periods charted: {reasons}"


def _energy_per_token_by_model(parts: list[LedgerPart]) -> Any:
    """Each GPU model's IT energy per output token in its most efficient fleet (the comparison's figure, unrounded)."""
    per_model: dict[str, list[float]] = defaultdict(list)
    for (_, model), sums in parts_sum(parts, lambda p: (p.key["fleet_id"], p.key["gpu_model"])).items():
        j_per_output_token = sums.totals.it_j_per_output_token
        if j_per_output_token is not None:
            per_model[model or "unknown"].append(float(j_per_output_token))
    models = sorted(per_model)
    fleets = {"J per output token": [min(per_model[m]) for m in models]}
    colours = {model: gpu_model_colour(None if model == "unknown" else model) for model in models}
    title = "Energy per output token by GPU model (IT energy)"
    return grouped_bars(title, "J / output token", models, fleets, category_colours=colours)


def _grid_intensity(parts: list[LedgerPart], period: Period) -> Any:
    """Mean hourly intensity each zone's lines were weighed with, labelled with the sources used."""
    sums: dict[tuple[str, str, datetime], list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0)])
    for part in parts:
        if part.extra["s_intensity_n"]:
            total = sums[(part.key["site__grid_zone"], part.key["location_source"], part.key[BUCKET])]
            total[0] += part.extra["s_intensity"]
            total[1] += part.extra["s_intensity_n"]
    series: dict[str, list[tuple[Any, float | None]]] = defaultdict(list)
    for (zone, source, bucket), (g, n) in sorted(sums.items()):
        series[f"{zone} · {source}"].append((bucket, float(g / n)))
    return series_lines(
        "Grid carbon intensity by zone and source", "gCO2e / kWh", dict(series), buckets=period_buckets(period)
    )


def _float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)
