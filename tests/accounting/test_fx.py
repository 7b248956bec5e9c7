"""The exchange-rate arithmetic (``accounting.ledger.fx``) and the ISO 4217 list, without a database."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from accounting.ledger.fx import FxRate, MonthAmount, RateKind, RateTable, month_of, reporting_total
from common.currencies import currency_problem

JAN = date(2026, 1, 1)
FEB = date(2026, 2, 1)


def rate(currency: str, quote: str, value: str, month: date = JAN, kind: RateKind = RateKind.AVERAGE) -> FxRate:
    return FxRate(currency, quote, month, kind, Decimal(value), "ECB")


@pytest.mark.parametrize("value", ["0", "-1", "NaN"])
def test_a_rate_of_zero_or_below_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        rate("USD", "SEK", value)


def test_a_pair_held_the_other_way_round_is_found_as_its_reciprocal_and_named_so() -> None:
    table = RateTable([rate("SEK", "USD", "0.1")])

    found = table.find("USD", "SEK", JAN, RateKind.AVERAGE)

    assert found is not None
    assert (found.rate, found.inverted, found.currency, found.quote_currency) == (Decimal(10), True, "USD", "SEK")
    assert table.find("USD", "SEK", FEB, RateKind.AVERAGE) is None  # another month: none
    assert table.find("USD", "SEK", JAN, RateKind.CLOSING) is None  # another kind: none


def test_each_month_converts_at_its_own_rate_and_a_missing_one_stays_unconverted() -> None:
    table = RateTable([rate("EUR", "USD", "1.08"), rate("EUR", "USD", "1.10", FEB)])
    amounts = [
        MonthAmount("EUR", JAN, Decimal("100"), 10),
        MonthAmount("EUR", FEB, Decimal("100"), 10),
        MonthAmount("USD", JAN, Decimal("5"), 1),
        MonthAmount("SEK", JAN, Decimal("1000"), 3),
    ]

    total = reporting_total(amounts, reporting_currency="USD", tables={None: table})

    assert [item.amount for item in total.converted] == [Decimal("108.00"), Decimal(5), Decimal("110.00")]
    assert total.total == Decimal("223.00")
    assert (total.complete, total.unconverted) == (False, [MonthAmount("SEK", JAN, Decimal("1000"), 3)])
    assert [(r.month, r.rate) for r in total.rates] == [(JAN, Decimal("1.08")), (FEB, Decimal("1.10"))]


def test_a_months_rate_is_keyed_by_its_first_day_in_utc() -> None:
    assert month_of(datetime(2026, 1, 31, 23, tzinfo=UTC)) == JAN


@pytest.mark.parametrize(("code", "ok"), [("USD", True), ("SEK", True), ("XYZ", False), ("usd", False), ("HRK", False)])
def test_currencies_are_checked_against_the_one_iso_4217_list(code: str, ok: bool) -> None:
    assert (currency_problem(code) is None) is ok
