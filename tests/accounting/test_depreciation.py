"""Depreciation by the book, with values worked by hand in the comments."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

import pytest

from accounting.ledger import LedgerInputError, OwnedPricing, build_node_hour_line, money_quantize
from accounting.ledger.depreciation import (
    DepreciationMethod,
    LifeChange,
    OwnedAsset,
    accumulated_depreciation,
    book_value,
    depreciation_cost,
    disposal_loss,
    end_of_life,
)
from tests.helpers.ledger_inputs import HOUR as HOUR_START
from tests.helpers.ledger_inputs import RENT_PER_GPU, node

HOUR = timedelta(hours=1)


def at(year: int, month: int, day: int = 1, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


def hourly_sum(asset: OwnedAsset, start: datetime, end: datetime) -> D:
    """What the ledger's node-hour lines of ``[start, end)`` add up to, one hour at a time."""
    total, hour = D(0), start
    while hour < end:
        total += depreciation_cost(asset, hour, hour + HOUR)
        hour += HOUR
    return total


def close(value: D, expected: D) -> bool:
    """Equal but for the last of Decimal's 28 digits (two ways of dividing round it apart)."""
    return abs(value - expected) < D("1e-20")


# 48,000 over 4 years from 1 January 2024, no salvage: 1,000 a month.
FOUR_YEARS = OwnedAsset(cost=D(48_000), salvage=D(0), in_service_at=at(2024, 1), life_years=D(4))


def test_an_asset_past_its_useful_life_charges_no_depreciation() -> None:
    # bought in 2018 with a 4-year life: fully depreciated on 1 January 2022
    old = replace(FOUR_YEARS, in_service_at=at(2018, 1))

    assert end_of_life(old) == at(2022, 1)
    assert depreciation_cost(old, at(2026, 11, 3, 10), at(2026, 11, 3, 11)) == 0
    assert accumulated_depreciation(old, at(2026, 11)) == D(48_000)
    assert book_value(old, at(2026, 11)) == 0


def test_no_depreciation_before_the_asset_is_in_service() -> None:
    assert depreciation_cost(FOUR_YEARS, at(2023, 12, 31, 23), at(2024, 1)) == 0
    assert book_value(FOUR_YEARS, at(2023, 6)) == D(48_000)


def test_equal_monthly_amounts_by_the_default_method() -> None:
    # 1,000 in January (744 h: 1.344086.../h) and 1,000 in February (696 h in 2024, a leap year)
    january = depreciation_cost(FOUR_YEARS, at(2024, 1), at(2024, 2))
    february = depreciation_cost(FOUR_YEARS, at(2024, 2), at(2024, 3))

    assert january == february == D(1000)
    assert close(depreciation_cost(FOUR_YEARS, at(2024, 1, 10), at(2024, 1, 10, 1)), D(1000) / 744)
    assert close(depreciation_cost(FOUR_YEARS, at(2024, 2, 10), at(2024, 2, 10, 1)), D(1000) / 696)
    assert money_quantize(hourly_sum(FOUR_YEARS, at(2024, 2), at(2024, 3)), "USD") == D("1000.00")


def test_by_hour_the_months_differ_by_their_hours() -> None:
    # 48,000 / 35,040 h = 1.369863.../h: January 744 h = 1,019.18; February 2024 696 h = 953.42
    by_hour = replace(FOUR_YEARS, method=DepreciationMethod.HOURLY)

    assert money_quantize(depreciation_cost(by_hour, at(2024, 1), at(2024, 2)), "USD") == D("1019.18")
    assert money_quantize(depreciation_cost(by_hour, at(2024, 2), at(2024, 3)), "USD") == D("953.42")
    # 35,040 h = 1,460 days from 1 January 2024: a day short of four calendar years with a leap day in them
    assert end_of_life(by_hour) == at(2027, 12, 31)


def test_salvage_value_is_never_depreciated() -> None:
    # 10,000 less 1,000 salvage over 3 years from 15 March 2025, 10:00: 250 a life-month
    asset = OwnedAsset(cost=D(10_000), salvage=D(1000), in_service_at=at(2025, 3, 15, 10), life_years=D(3))

    assert end_of_life(asset) == at(2028, 3, 15, 10)
    assert money_quantize(hourly_sum(asset, at(2025, 3, 15), at(2028, 3, 16)), "USD") == D("9000.00")
    assert book_value(asset, at(2030, 1)) == D(1000)
    assert depreciation_cost(asset, at(2025, 4, 15, 10), at(2025, 5, 15, 10)) == D(250)


def test_early_disposal_expenses_the_book_value_left_above_salvage_in_the_disposal_hour() -> None:
    # 12,000 less 1,200 salvage over 1 year from 1 January 2026: 900 a month; disposed of on 1 April 2026
    asset = OwnedAsset(
        cost=D(12_000), salvage=D(1200), in_service_at=at(2026, 1), life_years=D(1), disposed_at=at(2026, 4)
    )

    # three months charged (2,700): book value 9,300, of which 8,100 above salvage is lost
    assert accumulated_depreciation(asset, at(2026, 12)) == D(2700)
    assert disposal_loss(asset) == D(8100)
    assert close(depreciation_cost(asset, at(2026, 3, 31, 23), at(2026, 4)), D(900) / 744 + D(8100))
    assert depreciation_cost(asset, at(2026, 4), at(2026, 4, 1, 1)) == 0
    assert close(book_value(asset, at(2026, 3, 31, 23)), D(12_000) - D(2700) + D(900) / 744)
    assert book_value(asset, at(2026, 4)) == 0
    assert money_quantize(hourly_sum(asset, at(2026, 1), at(2026, 5)), "USD") == D("10800.00")


def test_disposal_after_the_end_of_life_loses_nothing() -> None:
    asset = replace(FOUR_YEARS, disposed_at=at(2029, 1))

    assert disposal_loss(asset) == 0


def test_a_shorter_life_applies_prospectively_from_its_date() -> None:
    # a year at 1,000 a month (12,000; book value 36,000), then a 3-year life in all: 36,000 over 24 months = 1,500
    shorter = replace(FOUR_YEARS, life_changes=(LifeChange(at(2025, 1), D(3)),))

    assert depreciation_cost(shorter, at(2024, 12), at(2025, 1)) == D(1000)
    assert depreciation_cost(shorter, at(2025, 1), at(2025, 2)) == D(1500)
    assert end_of_life(shorter) == at(2027, 1)
    assert accumulated_depreciation(shorter, at(2027, 1)) == D(48_000)
    assert depreciation_cost(shorter, at(2027, 1), at(2027, 2)) == 0


def test_a_longer_life_mid_month_spreads_the_book_value_left_over_the_life_left() -> None:
    # 6 years in all from 16 January 2024 00:00 (15/31 of January gone: 15/31 x 1,000 charged);
    # left: 47,516.13 over 72 - 15/31 months = 71.5161 months = 664.41 a month
    longer = replace(FOUR_YEARS, life_changes=(LifeChange(at(2024, 1, 16), D(6)),))
    left = D(48_000) - D(1000) * 15 / 31

    assert money_quantize(depreciation_cost(longer, at(2024, 3), at(2024, 4)), "USD") == D("664.41")
    assert close(depreciation_cost(longer, at(2024, 3), at(2024, 4)), left / (72 - D(15) / 31))
    assert end_of_life(longer) == at(2030, 1)
    assert money_quantize(accumulated_depreciation(longer, at(2031, 1)), "USD") == D("48000.00")


def test_a_change_dated_before_in_service_replaces_the_first_estimate() -> None:
    replaced = replace(FOUR_YEARS, life_changes=(LifeChange(at(2023, 6), D(2)),))

    assert depreciation_cost(replaced, at(2024, 1), at(2024, 2)) == D(2000)


def test_a_fractional_life_ends_part_way_through_its_last_month() -> None:
    # 2.5 years = 30 months; 0.1 year = 1.2 months: a fifth of February 2024's 696 h after January
    assert end_of_life(replace(FOUR_YEARS, life_years=D("2.5"))) == at(2026, 7)
    assert end_of_life(replace(FOUR_YEARS, life_years=D("0.1"))) == at(2024, 2) + timedelta(hours=139, minutes=12)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"salvage": D(50_000)}, "salvage"),
        ({"salvage": D(-1)}, "salvage"),
        ({"cost": D(-1), "salvage": D(-1)}, "cost"),
        ({"life_years": D(-1)}, "life"),
        ({"in_service_at": datetime(2024, 1, 1)}, "aware"),  # noqa: DTZ001 - the naive instant refused
    ],
)
def test_bad_values_are_refused(change: dict, message: str) -> None:
    with pytest.raises(LedgerInputError, match=message):
        replace(FOUR_YEARS, **change)


def test_a_life_change_that_leaves_no_life_after_it_is_refused() -> None:
    with pytest.raises(LedgerInputError, match="no life after it"):
        end_of_life(replace(FOUR_YEARS, life_changes=(LifeChange(at(2026, 1), D(1)),)))


# --- on the node-hour line ----------------------------------------------------------------------


def test_a_line_splits_rent_depreciation_and_running_cost() -> None:
    # June 2024 (720 h): 1,000 / 720 an hour of depreciation, + 0.25 running cost; rent per GPU for a rented one
    owned = OwnedPricing(D(48_000), D(35_040), D("0.25"), "price-7", FOUR_YEARS)
    line = build_node_hour_line(node(pricing=owned))
    rented = build_node_hour_line(node(pricing=RENT_PER_GPU))

    assert close(line.depreciation_cost, D(1000) / 720)
    assert (line.opex_cost, line.rent_cost) == (D("0.25"), 0)
    assert line.hardware_cost == line.depreciation_cost + line.opex_cost
    assert (rented.rent_cost, rented.depreciation_cost, rented.opex_cost) == (rented.hardware_cost, 0, 0)


def test_the_disposal_hour_books_the_loss_over_the_minutes_held() -> None:
    # decommissioned at 14:30 on 3 June 2024: half an hour's depreciation, then the book value left is lost
    disposed = replace(FOUR_YEARS, disposed_at=HOUR_START + timedelta(minutes=30))
    owned = OwnedPricing(D(48_000), D(35_040), D(0), "price-7", disposed)
    line = build_node_hour_line(node(pricing=owned, held_h=D("0.5"), held_from=HOUR_START))

    assert close(line.depreciation_cost, D(1000) / 720 / 2 + disposal_loss(disposed))
    assert money_quantize(disposal_loss(disposed), "USD") == D("42913.19")  # 48,000 - 5 x 1,000 - 62.5 / 720 h x 1,000
