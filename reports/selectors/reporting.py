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
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncMonth

from accounting.ledger.fx import MonthAmount, RateKind, RateTable, ReportingTotal, month_of, reporting_total
from accounting.ledger.units import money_quantize
from accounting.models import NodeHourLedger
from accounting.rates import rate_table, rate_tables
from accounting.reporting import reporting_currency_of
from common.periods import HOUR
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


# The usage CSV's columns past the JSON fields, with a reporting currency set: each row's cost in it.
REPORTING_COLUMNS = ("reporting_currency", "cost_in_reporting_currency", "reporting_rate")


@dataclass(frozen=True)
class RowConverter:
    """Converts a usage row's cost into the reporting currency at the average rate of the row's month."""

    currency: str
    table: RateTable

    def columns(self, *, row_currency: str | None, cost: Decimal, start: datetime, end: datetime) -> dict[str, Any]:
        """``REPORTING_COLUMNS`` of one row: empty conversion (the cost unconverted, never 0) when the row spans
        months or no rate is held; the rate named as ``SEK/USD 0.095 average 2026-01 (source)``."""
        blank = {"reporting_currency": self.currency, "cost_in_reporting_currency": None, "reporting_rate": ""}
        month = month_of(start)
        if row_currency is None or month_of(end - HOUR) != month:
            return blank
        total = reporting_total([MonthAmount(row_currency, month, cost)], reporting_currency=self.currency,
                                tables={None: self.table})  # fmt: skip
        if not total.converted:
            return blank | {"reporting_rate": f"no {row_currency}/{self.currency} rate for {month:%Y-%m}"}
        rate = total.converted[0].rate
        named = "" if rate is None else f"{rate.currency}/{rate.quote_currency} {rate.rate.normalize()} {rate.kind} "
        named += "" if rate is None else f"{rate.month:%Y-%m} ({'1 / ' if rate.inverted else ''}{rate.source})"
        return blank | {
            "cost_in_reporting_currency": money_quantize(total.total, self.currency),
            "reporting_rate": named,
        }


def row_converter(*, organization_ids: Collection[int]) -> RowConverter | None:
    """The CSV's converter: one organization with a reporting currency (a row of several is not converted)."""
    currency = reporting_currency_of(organization_ids=organization_ids)
    if currency is None or len(set(organization_ids)) != 1:
        return None
    (organization_id,) = set(organization_ids)
    return RowConverter(currency, rate_table(organization_id=organization_id, kind=RateKind.AVERAGE))
