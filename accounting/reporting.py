"""A reporting-currency total as every answer shows it (usage report, finance page, book value), and the
organization's reporting currency.

The arithmetic is ``accounting.ledger.fx``; this module only reads the choice
(``LedgerSettings.reporting_currency``) and shapes the answer: each amount with
its rate named, the total rounded once in the reporting currency, and what
stayed unconverted (never zero).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from rest_framework import serializers

from accounting.ledger.fx import MonthAmount, RateKind, ReportingTotal
from accounting.ledger.units import money_quantize
from accounting.models import LedgerSettings

BASIS = {
    RateKind.AVERAGE: "IAS 21: each month's amounts at the average rate of that month (income and expenses, "
    "IAS 21.39(b)-40), from the organization's own rate table; an amount with no rate is listed unconverted and "
    "left out of the total",
    RateKind.CLOSING: "IAS 21: a balance at the closing rate of its month (IAS 21.39(a)), from the organization's "
    "own rate table; with no rate it is listed unconverted and left out of the total",
}


def reporting_currency_of(*, organization_ids: Collection[int]) -> str | None:
    """The reporting currency the organizations share; ``None`` when none is set, or when they differ (a
    total in one currency needs one choice: ask for one organization)."""
    rows = LedgerSettings.objects.filter(organization_id__in=organization_ids).values_list("reporting_currency")
    chosen = [currency for (currency,) in rows]
    if len(chosen) != len(set(organization_ids)) or len(set(chosen)) != 1:
        return None
    return chosen[0] or None


def reporting_output(total: ReportingTotal | None) -> dict[str, Any] | None:
    """A reporting-currency total as every report shows it: each month's amount, its rate named, the total
    (rounded once, in the reporting currency) and what stayed unconverted."""
    if total is None:
        return None
    currency = total.currency
    return {
        "currency": currency,
        "rate_kind": total.kind.value,
        "basis": BASIS[total.kind],
        # Nothing converted and something unconverted: no total at all, rather than a 0 that reads as one.
        "total": money_quantize(total.total, currency) if total.converted or total.complete else None,
        "complete": total.complete,
        "amounts": [
            {**_month_amount(item.source), "converted": money_quantize(item.amount, currency),
             "rate": item.rate.named() if item.rate else None}
            for item in total.converted
        ],
        "unconverted": [_month_amount(item) for item in total.unconverted],
        "rates": [rate.named() for rate in total.rates],
    }  # fmt: skip


def _month_amount(item: MonthAmount) -> dict[str, Any]:
    return {
        "figure": item.figure, "currency": item.currency, "month": item.month.isoformat(),
        "amount": money_quantize(item.amount, item.currency), "lines": item.lines,
    }  # fmt: skip


def _money(help_text: str) -> serializers.DecimalField:
    return serializers.DecimalField(max_digits=None, decimal_places=None, allow_null=True, help_text=help_text)


class NamedRateSerializer(serializers.Serializer):
    currency = serializers.CharField(help_text="converted from")
    quote_currency = serializers.CharField(help_text="converted into")
    month = serializers.DateField(help_text="the month the rate is for (its first day)")
    kind = serializers.CharField(help_text="average (P&L figures) or closing (balances)")
    rate = serializers.CharField(help_text="quote_currency per one currency, as a decimal string")
    source = serializers.CharField(help_text="where the organization's table took it from")  # type: ignore[assignment]
    inverted = serializers.BooleanField(help_text="the table held the pair the other way round: this is 1 / its rate")


class MonthAmountSerializer(serializers.Serializer):
    figure = serializers.CharField(
        help_text="cost, or hardware_cost_unconverted: hardware cost no rate converted on its lines (not in cost)"
    )
    currency = serializers.CharField()
    month = serializers.DateField()
    amount = _money("the month's amount in currency")
    lines = serializers.IntegerField(help_text="ledger lines (node-hours) it sums")


class ConvertedAmountSerializer(MonthAmountSerializer):
    converted = _money("the amount in the reporting currency")
    rate = NamedRateSerializer(allow_null=True, help_text="null: the amount is in the reporting currency already")


class ReportingSerializer(serializers.Serializer):
    currency = serializers.CharField(help_text="the organization's reporting currency")
    rate_kind = serializers.CharField(
        help_text="average: each month's average rate; closing: a balance's month-end rate"
    )
    basis = serializers.CharField()
    total = _money(
        "the converted amounts added, in the reporting currency; without the unconverted ones (null when "
        "nothing converted)"
    )
    complete = serializers.BooleanField(help_text="false: some amount had no rate and is listed under unconverted")
    amounts = ConvertedAmountSerializer(many=True)
    unconverted = MonthAmountSerializer(many=True, help_text="amounts with no rate for their month: not in total")
    rates = NamedRateSerializer(many=True, help_text="every rate used")
