"""The reporting-currency total of a report's lines: each month's money at that month's average rate.

The report's lines are summed per currency and calendar month (their ``cost``,
and apart from it the hardware cost no rate could convert on the line,
``hardware_cost_unconverted``, in the price's currency), then converted into the
organizations' reporting currency by ``accounting.ledger.fx.reporting_total``
(IAS 21.39-40: income and expenses at the average rate of their month). An amount
with no rate is listed unconverted with its lines and left out of the total,
which then says it is incomplete. Two queries, whatever the number of lines.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncMonth

from accounting.ledger.fx import MonthAmount, RateKind, ReportingTotal, month_of, reporting_total
from accounting.models import NodeHourLedger
from accounting.rates import rate_tables
from accounting.reporting import reporting_currency_of
from reports.aggregates import amount_sum
from reports.selectors.lines import NO_FILTERS, ReportFilters, ledger_lines

COST = "cost"
UNCONVERTED_ON_LINE = "hardware_cost_unconverted"


def _month_amounts(
    lines: QuerySet[NodeHourLedger], *, currency: str, amount: str, where: Q | None = None
) -> list[MonthAmount]:
    rows = (
        lines.filter(where or Q())
        .annotate(s_month=TruncMonth("hour_start", tzinfo=UTC))
        .values("organization_id", currency, "s_month")
        .annotate(s_amount=amount_sum(amount), s_lines=Count("id"))
        .order_by()
    )
    return [
        MonthAmount(
            row[currency], month_of(row["s_month"]), row["s_amount"], row["s_lines"], amount, row["organization_id"]
        )
        for row in rows
    ]


def reporting_totals(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    reporting_currency: str,
    filters: ReportFilters = NO_FILTERS,
) -> ReportingTotal:
    """The lines' cost (and their unconverted hardware cost) in ``reporting_currency``, month by month."""
    lines = ledger_lines(organization_ids=organization_ids, start=start, end=end, filters=filters)
    amounts = _month_amounts(lines, currency="currency", amount=COST)
    amounts += _month_amounts(
        lines, currency="price_currency", amount=UNCONVERTED_ON_LINE, where=Q(hardware_cost_unconverted__isnull=False)
    )
    tables = rate_tables(organization_ids=organization_ids, kind=RateKind.AVERAGE)
    return reporting_total(amounts, reporting_currency=reporting_currency, tables=tables, kind=RateKind.AVERAGE)


def usage_reporting_total(
    *, organization_ids: Collection[int], start: datetime, end: datetime, filters: ReportFilters = NO_FILTERS
) -> ReportingTotal | None:
    """``reporting_totals`` in the organizations' reporting currency; ``None`` when they have none (or differ)."""
    currency = reporting_currency_of(organization_ids=organization_ids)
    if currency is None:
        return None
    return reporting_totals(
        organization_ids=organization_ids, start=start, end=end, reporting_currency=currency, filters=filters
    )
