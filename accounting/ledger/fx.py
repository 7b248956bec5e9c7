"""Exchange rates and conversion: the one module where money changes currency (IAS 21).

Pure: dataclasses and ``Decimal``, no framework. The stored rate table
(``accounting.models.ExchangeRate``) is read into a ``RateTable``; the ledger
(a price in another currency than the line's, ``accounting.ledger.line``), the
reports (a reporting-currency total, ``reports.selectors.reporting``) and the
book value (a balance at the closing rate) convert only through here.

Rules (docs/accounting.md, "Currencies"):

- a rate is ``quote_currency`` per one unit of ``currency`` for a calendar month,
  of one kind: ``average`` (the month's average: income and expenses, IAS 21.22
  and 21.40) or ``closing`` (the month-end rate: balances such as a book value,
  IAS 21.23 and 21.39);
- a pair the table holds only the other way round is used as ``1 / rate``, and
  the rate found says so (``inverted``); nothing is triangulated through a third currency;
- an amount with no rate stays in its currency, unconverted, and is counted as
  such: never converted at 1, never zero.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

ZERO = Decimal(0)
ONE = Decimal(1)


class RateKind(enum.StrEnum):
    AVERAGE = "average"  # the month's average rate: P&L figures (cost, rent, depreciation, electricity)
    CLOSING = "closing"  # the rate at the month's end: balances (book value)


def month_of(instant: datetime | date) -> date:
    """The first day of ``instant``'s calendar month (UTC for an aware datetime): a rate's ``month``."""
    return date(instant.year, instant.month, 1)


@dataclass(frozen=True)
class FxRate:
    """``rate`` units of ``quote_currency`` per one unit of ``currency``, for ``month``, of one ``kind``.

    ``inverted``: the table held the pair the other way round; ``rate`` is its reciprocal.
    """

    currency: str
    quote_currency: str
    month: date
    kind: RateKind
    rate: Decimal
    source: str
    inverted: bool = False

    def __post_init__(self) -> None:
        if not self.rate.is_finite() or self.rate <= 0:
            raise ValueError(f"an exchange rate must be positive, got {self.rate}")

    def inverse(self) -> FxRate:
        return FxRate(
            self.quote_currency, self.currency, self.month, self.kind, ONE / self.rate, self.source, not self.inverted
        )

    def named(self) -> dict[str, str | bool]:
        """The rate as every converted figure names it (a report's ``rates``)."""
        return {
            "currency": self.currency, "quote_currency": self.quote_currency, "month": self.month.isoformat(),
            "kind": self.kind.value, "rate": str(self.rate), "source": self.source, "inverted": self.inverted,
        }  # fmt: skip


class RateTable:
    """An organization's rates, looked up by pair, month and kind (the inverse pair as ``1 / rate``)."""

    def __init__(self, rates: Iterable[FxRate] = ()) -> None:
        self._rates = {(r.currency, r.quote_currency, r.month, r.kind): r for r in rates}

    def find(self, currency: str, quote_currency: str, month: date, kind: RateKind) -> FxRate | None:
        """The rate converting ``currency`` into ``quote_currency`` in ``month``; ``None`` when none is held."""
        direct = self._rates.get((currency, quote_currency, month, kind))
        if direct is not None:
            return direct
        reverse = self._rates.get((quote_currency, currency, month, kind))
        return None if reverse is None else reverse.inverse()


def converted(amount: Decimal, rate: FxRate) -> Decimal:
    """``amount`` of ``rate.currency`` in ``rate.quote_currency``, unrounded (rounded once, when shown)."""
    return amount * rate.rate


@dataclass(frozen=True)
class MonthAmount:
    """An amount of one currency in one month, over ``lines`` ledger lines (what a report sums before converting).

    ``figure``: what the amount is (``cost``; ``hardware_cost_unconverted``: hardware no rate converted on
    its lines); ``organization_id``: whose rates convert it (``None``: the only table given).
    """

    currency: str
    month: date
    amount: Decimal
    lines: int = 0
    figure: str = "cost"
    organization_id: int | None = None


@dataclass(frozen=True)
class ConvertedAmount:
    """A month's amount and its value in the reporting currency; ``rate`` ``None``: already in it."""

    source: MonthAmount
    amount: Decimal
    rate: FxRate | None


@dataclass(frozen=True)
class ReportingTotal:
    """Amounts of several currencies and months as one reporting-currency total.

    ``unconverted``: the amounts with no rate for their month, left out of ``total``
    (then ``complete`` is false) and listed, never counted as zero.
    """

    currency: str
    kind: RateKind
    converted: list[ConvertedAmount] = field(default_factory=list)
    unconverted: list[MonthAmount] = field(default_factory=list)

    @property
    def total(self) -> Decimal:
        return sum((item.amount for item in self.converted), ZERO)

    @property
    def complete(self) -> bool:
        return not self.unconverted

    @property
    def rates(self) -> list[FxRate]:
        """Every rate the total used, once each, in the order first used."""
        used: dict[tuple[object, ...], FxRate] = {}
        for item in self.converted:
            if item.rate is not None:
                used.setdefault((item.rate.currency, item.rate.quote_currency, item.rate.month, item.rate.kind,
                                 item.rate.rate, item.rate.source), item.rate)  # fmt: skip
        return list(used.values())


def reporting_total(
    amounts: Iterable[MonthAmount],
    *,
    reporting_currency: str,
    tables: Mapping[Any, RateTable],
    kind: RateKind = RateKind.AVERAGE,
) -> ReportingTotal:
    """Each month's amount at that month's rate of ``kind`` into ``reporting_currency``, and their total.

    ``tables``: each organization's rates, by ``MonthAmount.organization_id`` (an int; ``{None: table}`` for
    amounts of no organization).
    """
    result = ReportingTotal(reporting_currency, kind)
    for item in sorted(amounts, key=lambda a: (a.month, a.figure, a.currency, a.organization_id or 0)):
        if item.currency == reporting_currency:
            result.converted.append(ConvertedAmount(item, item.amount, None))
            continue
        table = tables.get(item.organization_id) or RateTable()
        rate = table.find(item.currency, reporting_currency, item.month, kind)
        if rate is None:
            result.unconverted.append(item)
        else:
            result.converted.append(ConvertedAmount(item, converted(item.amount, rate), rate))
    return result
