"""The sustainability dashboard: Scope 2 (location and market based), embodied with its range,
carbon per token over time, energy per token by GPU model, grid intensity per zone, data quality.

Totals and data quality come from the same report as ``/api/v1/reports/sustainability/``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Avg
from django.db.models.functions import TruncDay, TruncHour, TruncMonth
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting.charts import figure_html, grouped_bars, series_lines
from accounting.dashboards.common import api_query, organization_ids
from accounting.reports.output import comparison_row_output, sustainability_output, usage_row_output
from accounting.reports.periods import Granularity
from accounting.reports.selectors import GroupBy, fleet_comparison, ledger_lines, report_rows, sustainability_report
from fleets.web import Period, page_context

_TRUNC = {"hour": TruncHour, "day": TruncDay, "month": TruncMonth}


@login_required
def sustainability_page(request: HttpRequest) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    organization, period = context["organization"], context["period"]
    page = {**context, "section": "sustainability"}
    if (
        organization is None
        or not ledger_lines(organization_ids=[organization.pk], start=period.start, end=period.end).exists()
    ):
        return render(request, "accounting/sustainability.html", page)
    report = sustainability_report(organization_id=organization.pk, start=period.start, end=period.end)
    ids = organization_ids(organization)
    return render(
        request,
        "accounting/sustainability.html",
        {
            **page,
            "report": sustainability_output(report, organization),
            "charts": [
                figure_html(_sci_over_time(ids, period), div_id="chart-sci"),
                figure_html(_energy_per_token_by_model(ids, period), div_id="chart-j-per-token"),
                figure_html(_grid_intensity(ids, period), div_id="chart-grid"),
            ],
            "api_query": api_query(period, organization),
        },
    )


def _sci_over_time(ids: list[int], period: Period) -> Any:
    rows = report_rows(
        organization_ids=ids,
        start=period.start,
        end=period.end,
        granularity=Granularity(period.granularity),
        group_by=GroupBy.CURRENCY,
    )
    points: dict[Any, float | None] = {}
    for row in rows:  # carbon adds across currencies; the rows differ only in the money they carry
        value = usage_row_output(row)["gco2e_per_1k_tokens"]
        points.setdefault(row.period_start, value)
    series = {"gCO2e per 1k tokens (SCI)": sorted(points.items())}
    return series_lines("Carbon per 1k tokens (location-based + embodied)", "gCO2e / 1k tokens", series)


def _energy_per_token_by_model(ids: list[int], period: Period) -> Any:
    rows = [
        comparison_row_output(r)
        for r in fleet_comparison(organization_ids=ids, start=period.start, end=period.end, by_model=True)
    ]
    per_model: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row["it_j_per_token"] is not None:
            per_model[row["gpu_model"] or "unknown"].append(row["it_j_per_token"])
    models = sorted(per_model)
    fleets = {"J per token": [min(per_model[m]) for m in models]}
    return grouped_bars("Energy per token by GPU model (IT energy)", "J / token", models, fleets)


def _grid_intensity(ids: list[int], period: Period) -> Any:
    """Hourly intensity each zone's lines were weighed with, labelled with the sources used."""
    lines = ledger_lines(organization_ids=ids, start=period.start, end=period.end).exclude(location_gco2e_per_kwh=None)
    trunc = _TRUNC[period.granularity]("hour_start")
    rows = lines.values("site__grid_zone", "location_source").annotate(bucket=trunc, g=Avg("location_gco2e_per_kwh"))
    series: dict[str, list[tuple[Any, float | None]]] = defaultdict(list)
    for row in rows.order_by("site__grid_zone", "location_source", "bucket"):
        series[f"{row['site__grid_zone']} · {row['location_source']}"].append((row["bucket"], float(row["g"])))
    return series_lines("Grid carbon intensity by zone and source", "gCO2e / kWh", dict(series))
