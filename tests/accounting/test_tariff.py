"""Tariffs: flat, time-of-use in the site's zone (DST, midnight, weekends), prices over time."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal as D

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounting.ledger import LedgerTotals, RatePer, RentedPricing, build_node_hour_line
from accounting.tariff import (
    ALL_DAYS,
    WEEKDAYS,
    WEEKEND,
    FlatTariff,
    TariffError,
    TariffPrice,
    TimeOfUseTariff,
    TouWindow,
    Validity,
    in_force,
    local_midnight,
    price_at,
    tariff_price_at,
)
from tests.helpers.ledger_inputs import gpu, node

PEAK = D("0.30")
OFF_PEAK = D("0.12")
WEEKEND_DAY = D("0.18")

# Peak 07:00-23:00, off-peak 23:00-07:00 (crossing midnight), London time.
DAY_NIGHT = TimeOfUseTariff(
    "Europe/London",
    (
        TouWindow(time(7), time(23), PEAK, "peak"),
        TouWindow(time(23), time(7), OFF_PEAK, "off-peak"),
    ),
    tariff_id="uk-e7",
)
# Weekdays peak by day, weekends cheaper by day, every night off-peak.
WEEK = TimeOfUseTariff(
    "Europe/London",
    (
        TouWindow(time(7), time(23), PEAK, "peak", WEEKDAYS),
        TouWindow(time(7), time(23), WEEKEND_DAY, "weekend", WEEKEND),
        TouWindow(time(23), time(7), OFF_PEAK, "night", ALL_DAYS),
    ),
    tariff_id="uk-week",
)


def utc(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


def test_flat_tariff_prices_every_hour_the_same() -> None:
    assert price_at(FlatTariff(D("0.21"), "flat-1"), utc(2024, 1, 1, 3)) == TariffPrice(D("0.21"), "flat-1")


@pytest.mark.parametrize(
    ("hour_start", "price", "window"),
    [
        # winter: London = UTC
        (utc(2024, 1, 15, 6), OFF_PEAK, "off-peak"),
        (utc(2024, 1, 15, 7), PEAK, "peak"),
        (utc(2024, 1, 15, 22), PEAK, "peak"),
        (utc(2024, 1, 15, 23), OFF_PEAK, "off-peak"),
        (utc(2024, 1, 16, 0), OFF_PEAK, "off-peak"),  # after midnight, same window
        # summer: London = UTC+1, so the windows start an hour earlier in UTC
        (utc(2024, 7, 15, 6), PEAK, "peak"),  # 07:00 BST
        (utc(2024, 7, 15, 22), OFF_PEAK, "off-peak"),  # 23:00 BST
    ],
)
def test_time_of_use_window_crossing_midnight_in_the_site_zone(hour_start: datetime, price: D, window: str) -> None:
    assert price_at(DAY_NIGHT, hour_start) == TariffPrice(price, f"uk-e7:{window}")


def test_when_clocks_go_back_both_hours_starting_at_one_local_take_its_price() -> None:
    # 27 Oct 2024: 00:00 UTC = 01:00 BST and 01:00 UTC = 01:00 GMT
    one_am = TimeOfUseTariff(
        "Europe/London",
        (TouWindow(time(1), time(2), D("0.05"), "one"), TouWindow(time(2), time(1), D("0.40"), "rest")),
    )

    assert price_at(one_am, utc(2024, 10, 27, 0)).price_per_kwh == D("0.05")
    assert price_at(one_am, utc(2024, 10, 27, 1)).price_per_kwh == D("0.05")
    assert price_at(one_am, utc(2024, 10, 27, 2)).price_per_kwh == D("0.40")


def test_when_clocks_go_forward_the_skipped_local_hour_is_never_priced() -> None:
    # 31 Mar 2024: 00:00 UTC = 00:00 GMT, 01:00 UTC = 02:00 BST; no hour starts at 01:00 local
    one_am = TimeOfUseTariff(
        "Europe/London",
        (TouWindow(time(1), time(2), D("0.05"), "one"), TouWindow(time(2), time(1), D("0.40"), "rest")),
    )
    day = [utc(2024, 3, 30, 23) + timedelta(hours=h) for h in range(24)]

    assert all(price_at(one_am, h).price_id == "tou:rest" for h in day)


def test_half_hour_zone_prices_a_straddling_hour_by_its_start() -> None:
    # Kolkata is UTC+5:30: 01:00 UTC starts at 06:30 local, before the 07:00 peak
    kolkata = TimeOfUseTariff("Asia/Kolkata", DAY_NIGHT.windows)

    assert price_at(kolkata, utc(2024, 1, 15, 1)).price_per_kwh == OFF_PEAK
    assert price_at(kolkata, utc(2024, 1, 15, 2)).price_per_kwh == PEAK  # 07:30 local


@pytest.mark.parametrize(
    ("hour_start", "window"),
    [
        (utc(2024, 1, 19, 12), "peak"),  # Friday noon
        (utc(2024, 1, 19, 23), "night"),  # Friday 23:00
        (utc(2024, 1, 20, 3), "night"),  # Saturday 03:00: Friday's night window
        (utc(2024, 1, 20, 12), "weekend"),  # Saturday noon
        (utc(2024, 1, 22, 3), "night"),  # Monday 03:00: Sunday's night window
        (utc(2024, 1, 22, 7), "peak"),  # Monday 07:00
    ],
)
def test_weekday_and_weekend_windows(hour_start: datetime, window: str) -> None:
    assert price_at(WEEK, hour_start).price_id == f"uk-week:{window}"


def test_a_window_crossing_midnight_belongs_to_the_day_it_starts_on() -> None:
    friday_night = TouWindow(time(23), time(7), OFF_PEAK, "fri-night", frozenset({4}))
    local = datetime(2024, 1, 20, 3)  # noqa: DTZ001 - local wall-clock time
    saturday_3am, friday_3am = local, local - timedelta(days=1)

    assert friday_night.covers(saturday_3am)
    assert not friday_night.covers(friday_3am)


def test_a_gap_or_an_overlap_between_windows_raises() -> None:
    gap = TimeOfUseTariff("UTC", (TouWindow(time(7), time(23), PEAK, "peak"),))
    overlap = TimeOfUseTariff("UTC", (*DAY_NIGHT.windows, TouWindow(time(12), time(13), PEAK, "lunch")))

    with pytest.raises(TariffError, match="no window"):
        price_at(gap, utc(2024, 1, 15, 3))
    with pytest.raises(TariffError, match="peak"):
        price_at(overlap, utc(2024, 1, 15, 12))


def test_bad_zones_naive_times_and_bad_days_are_refused() -> None:
    with pytest.raises(TariffError):
        TimeOfUseTariff("Mars/Olympus", DAY_NIGHT.windows)
    with pytest.raises(TariffError):
        price_at(DAY_NIGHT, datetime(2024, 1, 15, 3))  # noqa: DTZ001 - naive on purpose
    with pytest.raises(TariffError):
        TouWindow(time(1), time(2), PEAK, "x", frozenset({7}))
    with pytest.raises(TariffError):
        TimeOfUseTariff("UTC", ())


# --- validity periods ------------------------------------------------------------------------

OLD = FlatTariff(D("0.20"), "tariff-1")
NEW = FlatTariff(D("0.25"), "tariff-2")
CHANGE = local_midnight(date(2024, 6, 15), "Europe/Berlin")  # 14 June 22:00 UTC (CEST)


def test_local_midnight_is_the_instant_a_dated_change_starts() -> None:
    assert utc(2024, 6, 14, 22) == CHANGE


def test_in_force_picks_the_period_containing_the_instant() -> None:
    periods = [Validity(utc(2024, 1, 1), CHANGE, OLD), Validity(CHANGE, None, NEW)]

    assert in_force(periods, utc(2023, 12, 31)) is None
    assert in_force(periods, utc(2024, 1, 1)) is OLD  # valid_from is inclusive
    assert in_force(periods, CHANGE - timedelta(microseconds=1)) is OLD
    assert in_force(periods, CHANGE) is NEW  # valid_to is exclusive
    assert in_force(periods, utc(2030, 1, 1)) is NEW


def test_overlapping_or_inverted_periods_raise() -> None:
    with pytest.raises(TariffError, match="overlapping"):
        in_force([Validity(utc(2024, 1, 1), None, OLD), Validity(CHANGE, None, NEW)], utc(2024, 7, 1))
    with pytest.raises(TariffError):
        Validity(CHANGE, CHANGE, OLD)


def test_price_change_mid_period_applies_from_its_date_and_keeps_history() -> None:
    # June, 1 kWh facility per hour: 334 hours before the change (13 days x 24 + 22) at 0.20 = 66.80,
    # the other 386 hours at 0.25 = 96.50; 163.30 in all
    before = [Validity(utc(2024, 1, 1), None, OLD)]
    after = [Validity(utc(2024, 1, 1), CHANGE, OLD), Validity(CHANGE, None, NEW)]
    hours = [utc(2024, 6, 1) + timedelta(hours=h) for h in range(720)]
    rent = RentedPricing(D(0), RatePer.NODE, includes_power=False)

    def june(periods: list[Validity[FlatTariff]]) -> LedgerTotals:
        # 3,600,000 J = 1 kWh at PUE 1
        one_kwh = (gpu(0, energy_j=D(3_600_000)),)
        return LedgerTotals.sum(
            build_node_hour_line(
                node(hour_start=h, gpus=one_kwh, pue=D(1), pricing=rent, tariff=tariff_price_at(periods, h))
            )
            for h in hours
        )

    assert june(after).electricity_cost == D("163.30")
    # history is not rewritten: hours before the change price the same before and after it is entered
    early = [h for h in hours if h < CHANGE]
    assert [tariff_price_at(before, h) for h in early] == [tariff_price_at(after, h) for h in early]
    assert june(before).electricity_cost == D("144.00")


def test_no_tariff_in_force_gives_no_price() -> None:
    assert tariff_price_at([Validity(CHANGE, None, NEW)], utc(2024, 1, 1)) is None


# --- properties ------------------------------------------------------------------------------

hours_2020s = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 12, 31)).map(  # noqa: DTZ001
    lambda dt: dt.replace(minute=0, second=0, microsecond=0, tzinfo=UTC)
)


@settings(max_examples=300, deadline=None)
@given(hour_start=hours_2020s, zone=st.sampled_from(["Europe/London", "America/New_York", "Asia/Kolkata", "UTC"]))
def test_a_complete_tariff_prices_every_utc_hour_exactly_once(hour_start: datetime, zone: str) -> None:
    tariff = TimeOfUseTariff(zone, WEEK.windows)

    assert price_at(tariff, hour_start).price_per_kwh in {PEAK, WEEKEND_DAY, OFF_PEAK}
