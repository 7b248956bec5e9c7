"""The finance dashboard: cost, cost per 1M tokens, idle cost, rented vs owned vs electricity, by fleet.

Tiles and table use the same selectors and output formatting as the REST
reports (``accounting.reports``), so a number here equals the API's for the
same period.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting.charts import figure_html, grouped_bars, pivot, stacked_bars
from accounting.dashboards.common import api_query, currency_choice, organization_ids
from accounting.ledger import money_quantize
from accounting.reports.output import comparison_row_output, usage_row_output
from accounting.reports.periods import Granularity
from accounting.reports.selectors import GroupBy, ReportFilters, fleet_comparison, ledger_lines, report_rows
from fleets.web import Period, page_context


@login_required
def finance_page(request: HttpRequest) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    organization, period = context["organization"], context["period"]
    currency, currencies, filters = currency_choice(request, organization, period)
    page = {**context, "section": "finance", "currency": currency, "currencies": currencies}
    if currency is None:
        return render(request, "accounting/finance.html", page)
    ids = organization_ids(organization)
    total = _total(ids, period, filters)
    previous = _total(ids, period.previous(), filters)
    by_fleet = [usage_row_output(row) for row in _rows(ids, period, Granularity.TOTAL, GroupBy.FLEET, filters)]
    return render(
        request,
        "accounting/finance.html",
        {
            **page,
            "total": total,
            "previous": previous,
            "change": _change(total, previous),
            "by_fleet": by_fleet,
            "charts": _charts(ids, period, filters, currency),
            "csv_query": api_query(period, organization, group_by="fleet", granularity="total", currency=currency),
        },
    )


def _rows(
    ids: list[int], period: Period, granularity: Granularity, group_by: GroupBy, filters: ReportFilters
) -> list[Any]:
    return report_rows(
        organization_ids=ids,
        start=period.start,
        end=period.end,
        granularity=granularity,
        group_by=group_by,
        filters=filters,
    )


def _total(ids: list[int], period: Period, filters: ReportFilters) -> dict[str, Any] | None:
    rows = _rows(ids, period, Granularity.TOTAL, GroupBy.NONE, filters)
    return usage_row_output(rows[0]) if rows else None


def _change(total: dict[str, Any] | None, previous: dict[str, Any] | None) -> float | None:
    """Relative change of total cost against the previous period of the same length."""
    if not total or not previous or not previous["cost"]:
        return None
    return float((Decimal(total["cost"]) - Decimal(previous["cost"])) / Decimal(previous["cost"]))


def _charts(ids: list[int], period: Period, filters: ReportFilters, currency: str) -> list[str]:
    over_time = [
        usage_row_output(r) for r in _rows(ids, period, Granularity(period.granularity), GroupBy.FLEET, filters)
    ]
    cost_series = pivot(
        [{**r, "cost": float(r["cost"])} for r in over_time],
        series_key="group_label",
        x_key="period_start",
        y_key="cost",
    )
    return [
        figure_html(stacked_bars(f"Cost by fleet ({currency})", currency, cost_series), div_id="chart-cost-by-fleet"),
        figure_html(_cost_per_token_chart(ids, period, currency), div_id="chart-cost-per-token"),
        figure_html(_cost_split_chart(ids, period, filters, currency), div_id="chart-cost-split"),
    ]


def _cost_per_token_chart(ids: list[int], period: Period, currency: str) -> Any:
    rows = [
        comparison_row_output(r)
        for r in fleet_comparison(organization_ids=ids, start=period.start, end=period.end, by_model=True)
    ]
    rows = [r for r in rows if r["currency"] == currency]
    models = sorted({r["gpu_model"] or "unknown" for r in rows})
    fleets = sorted({r["fleet_name"] for r in rows})
    values = {(r["fleet_name"], r["gpu_model"] or "unknown"): r["cost_per_1m_tokens"] for r in rows}
    series = {model: [_float(values.get((fleet, model))) for fleet in fleets] for model in models}
    return grouped_bars(f"Cost per 1M tokens by fleet and GPU model ({currency})", currency, fleets, series)


def cost_split(ids: list[int], period: Period, filters: ReportFilters) -> dict[str, Decimal]:
    """Hardware cost of rented and of owned nodes, and electricity, over the period (one query)."""
    lines = ledger_lines(organization_ids=ids, start=period.start, end=period.end, filters=filters)
    split = {"Rented hardware": Decimal(0), "Owned hardware": Decimal(0), "Electricity": Decimal(0)}
    for row in lines.values("node__tenure").annotate(
        hardware=Sum("hardware_cost"), electricity=Sum("electricity_cost")
    ):
        label = "Rented hardware" if row["node__tenure"] == "rented" else "Owned hardware"
        split[label] += row["hardware"] or 0
        split["Electricity"] += row["electricity"] or 0
    return split


def _cost_split_chart(ids: list[int], period: Period, filters: ReportFilters, currency: str) -> Any:
    split = cost_split(ids, period, filters)
    values = [float(money_quantize(value, currency)) for value in split.values()]
    return grouped_bars(f"Rented vs owned vs electricity ({currency})", currency, list(split), {"cost": values})


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
