"""Fleet comparison: which fleet is cheaper, faster at the tail and cleaner, per fleet and GPU model."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting.charts import figure_html, grouped_bars, scatter_points
from accounting.dashboards.common import api_query, organization_ids
from accounting.reports.output import comparison_row_output
from accounting.reports.selectors import fleet_comparison
from fleets.models import Fleet
from fleets.web import page_context


@login_required
def compare_page(request: HttpRequest) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    organization, period = context["organization"], context["period"]
    fleets = list(Fleet.objects.filter(organization=organization).order_by("name")) if organization else []
    baseline = _baseline(request, fleets)
    by_model = request.GET.get("by") == "gpu_model"
    rows = [
        comparison_row_output(row)
        for row in fleet_comparison(
            organization_ids=organization_ids(organization),
            start=period.start,
            end=period.end,
            baseline_fleet_id=baseline.pk if baseline else None,
            by_model=by_model,
        )
    ]
    charts = _charts(rows) if rows else []
    api = api_query(
        period, organization, baseline=baseline.pk if baseline else None, by="gpu_model" if by_model else None
    )
    return render(
        request,
        "accounting/compare.html",
        {
            **context,
            "section": "compare",
            "rows": rows,
            "fleets": fleets,
            "baseline": baseline,
            "by_model": by_model,
            "charts": charts,
            "api_query": api,
        },
    )


def _baseline(request: HttpRequest, fleets: list[Fleet]) -> Fleet | None:
    chosen = request.GET.get("baseline")
    return next((f for f in fleets if str(f.pk) == chosen), fleets[0] if fleets else None)


def _label(row: dict[str, Any]) -> str:
    return row["fleet_name"] + (
        f" · {row['gpu_model']}" if row.get("gpu_model") and row["gpu_model"] != "mixed" else ""
    )


def _charts(rows: list[dict[str, Any]]) -> list[str]:
    points = [(_label(r), r["ttft_p99_ms"], _float(r["cost_per_1m_tokens"])) for r in rows]
    labels = [_label(r) for r in rows]
    return [
        figure_html(
            scatter_points(
                "Cost per 1M tokens vs P99 time to first token", "P99 TTFT (ms)", "cost per 1M tokens", points
            ),
            div_id="chart-cost-vs-ttft",
        ),
        figure_html(
            grouped_bars(
                "Energy per token", "J / token (IT)", labels, {"J per token": [r["it_j_per_token"] for r in rows]}
            ),
            div_id="chart-j-per-token",
        ),
    ]


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
