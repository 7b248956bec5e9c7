"""Fleet comparison: which fleet is cheaper, faster at the tail and cleaner, per fleet and GPU model."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from common.charts import (
    figure_html,
    fleet_model_colours,
    grouped_bars,
    organization_fleet_colours,
    scatter_points,
)
from dashboards.common import api_query, column_set, dashboard_context, organization_ids
from dashboards.forms import CompareForm, page_options
from fleets.models import Fleet
from reports.display import ITL_NOT_EXPOSED, comparison_row_output, load_band_output
from reports.metrics import ALLOCATION_NOTE, BaselineBasis, LedgerAllocation
from reports.selectors import ComparisonRow, ComparisonStats, fleet_comparison
from reports.selectors.load import comparison_load_bands
from reports.sharing import IDLE_NOTES, IdleTreatment


@login_required
def compare_page(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    context = dashboard_context(request, now=now)
    organization, period = context["organization"], context["period"]
    fleets = list(Fleet.objects.filter(organization=organization).order_by("name")) if organization else []
    options = page_options(CompareForm, request)
    baseline = _baseline(options["baseline"], fleets)
    by = options["by"] if options["by"] in ("gpu_model", "llm_model") else None
    idle = IdleTreatment(str(options["idle"] or IdleTreatment.APART))
    comparison = fleet_comparison(
        organization_ids=organization_ids(organization),
        start=period.start,
        end=period.end,
        baseline_fleet_id=baseline.pk if baseline else None,
        by_model=by == "gpu_model",
        by_llm_model=by == "llm_model",
        idle=idle,
        now=now,
    )
    rows = [comparison_row_output(row) for row in comparison]
    charts = _charts(comparison, organization_fleet_colours(organization)) if rows else []
    by_load = bool(options["by_load"])
    load_rows = []
    if by_load and rows:
        found = comparison_load_bands(
            comparison,
            organization_ids=organization_ids(organization),
            start=period.start,
            end=period.end,
            by=by or "fleet",
            baseline_fleet_id=baseline.pk if baseline else None,
        )
        load_rows = [(row, [load_band_output(band) for band in bands]) for row, bands in zip(rows, found, strict=True)]
    api = api_query(
        period,
        organization,
        baseline=baseline.pk if baseline else None,
        by=by,
        by_load="true" if by_load else None,
        idle=idle.value if by == "llm_model" else None,
    )
    return render(
        request,
        "dashboards/compare.html",
        {
            **context,
            **column_set(request),
            "section": "compare",
            "rows": rows,
            "fleets": fleets,
            "baseline": baseline,
            "by": by or "fleet",
            "by_model": by is not None,
            "by_llm_model": by == "llm_model",
            "allocation_note": ALLOCATION_NOTE,
            "idle": idle.value,
            "idle_note": IDLE_NOTES[idle],
            "no_baseline_rows": [row for row in rows if row["baseline_basis"] == BaselineBasis.NO_BASELINE_ROW],
            "itl_not_exposed": ITL_NOT_EXPOSED,
            "charts": charts,
            "by_load": by_load,
            "load_rows": load_rows,
            "api_query": api,
        },
    )


def _baseline(chosen: object, fleets: list[Fleet]) -> Fleet | None:
    return next((f for f in fleets if f.pk == chosen), fleets[0] if fleets else None)


def _label(stats: ComparisonStats) -> str:
    model = stats.gpu_model
    label = stats.fleet_name + (f" · {model}" if model and model != "mixed" else "")
    if stats.allocation is LedgerAllocation.WHOLE:
        return label
    return label + f" · {stats.llm_model}" if stats.llm_model is not None else label + " · no output tokens"


def _charts(comparison: list[ComparisonRow], fleet_colours: dict[str, str]) -> list[str]:
    """Charts of the unrounded figures (the table shows them rounded); each fleet in its colour of every page."""
    # The hours without output tokens have no per-token figure to plot.
    stats = [row.stats for row in comparison if row.stats.allocation is not LedgerAllocation.UNATTRIBUTED]
    points = [(_label(s), _ms(s.ttft_p99_s), _float(s.cost_per_1m_output_tokens)) for s in stats]
    labels = [_label(s) for s in stats]
    # Each fleet in its colour; each of its LLM models (per LLM model) a shade of it.
    shades = fleet_model_colours([_colour_key(s) for s in stats], fleet_colours)
    colours = {_label(s): shades[_colour_key(s)] for s in stats}
    return [
        figure_html(
            scatter_points(
                "Cost per 1M output tokens vs P99 time to first token",
                "P99 TTFT (ms)",
                "cost per 1M output tokens",
                points,
                colours=colours,
            ),
            div_id="chart-cost-vs-ttft",
        ),
        figure_html(
            grouped_bars(
                "Energy per output token",
                "J / output token (IT)",
                labels,
                {"J per output token": [_float(s.it_j_per_output_token) for s in stats]},
                category_colours=colours,
            ),
            div_id="chart-j-per-token",
        ),
    ]


def _colour_key(stats: ComparisonStats) -> tuple[str, str | None]:
    return stats.fleet_name, None if stats.allocation is LedgerAllocation.WHOLE else stats.llm_model


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
