"""The finance dashboard: cost, cost per 1M tokens, idle cost, rented vs owned vs electricity, by fleet.

Above them, with a reporting currency set, the period's cost of every currency in it, month by month at each
month's average rate, the rates named (``reports.selectors.reporting``, as the usage report's ``reporting``).
Tiles, table and charts are roll-ups of one query (``ledger_parts``: the
period's lines summed per day x fleet x GPU model x tenure x currency), made
into the usage report's rows (``report_row``) and shown with the REST reports'
output functions, so a number here equals the API's for the same period.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting.ledger import LedgerTotals
from accounting.ledger.line import ElectricityStatus
from accounting.ledger.units import ZERO
from accounting.reporting import reporting_output
from accounting.site_charges import site_monthly_charges
from common.charts import figure_html, gpu_model_colour, grouped_bars, organization_fleet_colours, pivot, stacked_bars
from common.periods import Granularity, Period
from dashboards.common import (
    api_query,
    column_set,
    currency_choice,
    dashboard_context,
    organization_ids,
    period_buckets,
)
from reports.aggregates import amount_sum, lines_counted
from reports.display import money, usage_row_output
from reports.selectors import (
    BUCKET,
    GroupBy,
    LedgerPart,
    LedgerSums,
    ReportFilters,
    ReportRow,
    group_labels,
    ledger_lines,
    ledger_parts,
    parts_sum,
    parts_total,
    report_row,
)
from reports.selectors.reporting import usage_reporting_total
from reports.site_charges import site_charges_output

# The finest grain the page shows: every tile, table row and chart is a sum of these parts
# (one query over the period's site-hours, a few hundred parts for a quarter). Rented and owned hardware are
# the lines' own rent and depreciation + running cost (``cost_split``), so no key is a node's.
_KEYS = ("fleet_id", "gpu_model")
# Node-hours whose electricity is in the rent: shown as "in rent", as on the node page, never as 0.00.
_IN_RENT = {
    "s_lines": lines_counted(),
    "s_in_rent": lines_counted(Q(electricity_status=ElectricityStatus.INCLUDED)),
}


@login_required
def finance_page(request: HttpRequest) -> HttpResponse:
    context = dashboard_context(request, now=timezone.now())
    organization, period = context["organization"], context["period"]
    ids = organization_ids(organization)
    granularity = period.granularity
    every_currency = ledger_parts(
        organization_ids=ids, start=period.start, end=period.end, keys=_KEYS, granularity=granularity, extra=_IN_RENT
    )
    currency, currencies, filters = currency_choice(request, {p.sums.totals.currency for p in every_currency})
    page = {**context, **column_set(request), "section": "finance", "currency": currency, "currencies": currencies,
            "reporting": reporting_output(usage_reporting_total(organization_ids=ids, start=period.start,
                                                                end=period.end))}  # fmt: skip
    if currency is None:
        return render(request, "dashboards/finance.html", page)
    parts = [p for p in every_currency if p.sums.totals.currency == currency]
    exact = parts_total(parts)
    total = None if exact is None else usage_row_output(_row(exact, period, Granularity.TOTAL))
    previous_cost = _previous_cost(ids, period, filters, currency)
    labels = group_labels(GroupBy.FLEET, ids)
    by_fleet = [
        {
            **usage_row_output(_row(sums, period, Granularity.TOTAL, group_key=fleet_id, labels=labels)),
            "in_rent": in_rent([p for p in parts if p.key["fleet_id"] == fleet_id]),
        }
        for fleet_id, sums in parts_sum(parts, lambda p: p.key["fleet_id"]).items()
    ]
    return render(
        request,
        "dashboards/finance.html",
        {
            **page,
            "total": total,
            "in_rent": in_rent(parts),
            "previous_cost": previous_cost,
            "change": _change(total, previous_cost),
            "by_fleet": by_fleet,
            "site_charges": _site_charges(ids, period, currency, None if exact is None else exact.totals.cost),
            "charts": _charts(parts, period, labels, currency, organization_fleet_colours(organization)),
            "csv_query": api_query(period, organization, group_by="fleet", granularity="total", currency=currency),
        },
    )


def _site_charges(ids: list[int], period: Period, currency: str, cost: Decimal | None) -> dict[str, Any]:
    """The sites' fixed and demand tariff charges of the period in ``currency`` (``reports.site_charges``), and
    the page's total with them: a line of their own, since they are the sites' and in no line's cost. The total
    is the lines' exact ``cost`` plus the exact charges, rounded once (money is rounded once, never re-added)."""
    found = site_monthly_charges(organization_ids=ids, start=period.start, end=period.end, now=timezone.now())
    block = site_charges_output(found)
    charges = [charge for charge in block["charges"] if charge["currency"] == currency]
    sums = next((row for row in block["totals"] if row["currency"] == currency), None)
    with_charges = None
    if cost is not None:
        exact = cost + sum((charge.total for charge in found if charge.currency == currency), ZERO)
        with_charges = money(exact, currency)
    return {"charges": charges, "totals": sums, "cost_with_site_charges": with_charges}


def _previous_cost(ids: list[int], period: Period, filters: ReportFilters, currency: str) -> Decimal | None:
    """Total cost of the previous period of the same length, as the usage report shows it; ``None`` without lines.

    Only the cost is compared: one sum, not the report's thirty (a quarter of lines either way).
    """
    previous = period.previous()
    lines = ledger_lines(organization_ids=ids, start=previous.start, end=previous.end, filters=filters)
    return money(lines.aggregate(s_cost=amount_sum("cost"))["s_cost"], currency)


def _row(sums: LedgerSums, period: Period, granularity: Granularity, **where: Any) -> ReportRow:
    """The usage report's row of these sums: ``report_rows`` over the same lines gives the same row."""
    return report_row(sums, start=period.start, end=period.end, granularity=granularity, **where)


def in_rent(parts: list[LedgerPart]) -> str:
    """Whether the parts' electricity is in the rent: ``"all"`` of their node-hours, ``"some"`` or ``"none"``."""
    included = sum(part.extra["s_in_rent"] for part in parts)
    if not included:
        return "none"
    return "all" if included == sum(part.extra["s_lines"] for part in parts) else "some"


def _change(total: dict[str, Any] | None, previous_cost: Decimal | None) -> float | None:
    """Relative change of total cost against the previous period of the same length."""
    if not total or not previous_cost:
        return None
    return float((Decimal(total["cost"]) - previous_cost) / previous_cost)


def _charts(
    parts: list[LedgerPart], period: Period, labels: dict[str, str], currency: str, colours: dict[str, str]
) -> list[str]:
    granularity = period.granularity
    per_bucket = parts_sum(parts, lambda p: (p.key[BUCKET], p.key["fleet_id"]))
    over_time = [
        (usage_row_output(row), row)
        for (bucket, fleet_id), sums in per_bucket.items()
        for row in [_row(sums, period, granularity, bucket=bucket, group_key=fleet_id, labels=labels)]
    ]
    # Charts plot unrounded values: the sums, not the rounded rows.
    cost_series = pivot(
        [{**r, "cost": float(row.sums.totals.cost)} for r, row in over_time],
        series_key="group_label",
        x_key="period_start",
        y_key="cost",
    )
    cost_chart = stacked_bars(
        f"Cost by fleet ({currency})", currency, cost_series, buckets=period_buckets(period), colours=colours
    )
    return [
        figure_html(cost_chart, div_id="chart-cost-by-fleet"),
        figure_html(_cost_per_token_chart(parts, labels, currency), div_id="chart-cost-per-token"),
        figure_html(_cost_split_chart(parts, currency), div_id="chart-cost-split"),
    ]


def _cost_per_token_chart(parts: list[LedgerPart], labels: dict[str, str], currency: str) -> Any:
    """Cost per 1M output tokens per fleet and GPU model, as the comparison report gives it (unrounded).

    Each GPU model in its colour of every page.
    """
    per_model = parts_sum(parts, lambda p: (p.key["fleet_id"], p.key["gpu_model"]))
    values = {
        (labels.get(str(fleet_id), str(fleet_id)), model): sums.totals.cost_per_1m_output_tokens
        for (fleet_id, model), sums in per_model.items()
    }
    models = sorted({model for _, model in values}, key=lambda model: model or "")
    fleets = sorted({fleet for fleet, _ in values})
    series = {model or "unknown": [_float(values.get((fleet, model))) for fleet in fleets] for model in models}
    colours = {model or "unknown": gpu_model_colour(model) for model in models}
    title = f"Cost per 1M output tokens by fleet and GPU model ({currency})"
    return grouped_bars(title, f"{currency} per 1M output tokens", fleets, series, colours=colours)


def cost_split(parts: list[LedgerPart]) -> dict[str, Decimal]:
    """Hardware cost of rented and of owned node-hours, and electricity, over the parts.

    Each node-hour as it was priced: its rent (a rented node's price in force), or its depreciation and running
    cost (an owned node's asset or capex): a node bought after renting counts its rented hours as rented.
    The two add up to the hardware cost (``accounting.ledger.line.HardwareCost.total``)."""
    sums = parts_total(parts)
    totals = LedgerTotals() if sums is None else sums.totals
    return {
        "Rented hardware": totals.rent_cost,
        "Owned hardware": totals.depreciation_cost + totals.opex_cost,
        "Electricity": totals.electricity_cost,
    }


def _cost_split_chart(parts: list[LedgerPart], currency: str) -> Any:
    split = cost_split(parts)
    values = [float(value) for value in split.values()]  # unrounded: the chart plots, the table rounds
    texts = {"all": "in rent", "some": "plus some in rent", "none": ""}
    labels = [texts[in_rent(parts)] if name == "Electricity" else None for name in split]
    return grouped_bars(
        f"Rented vs owned vs electricity ({currency})", currency, list(split), {"cost": values}, texts={"cost": labels}
    )


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
