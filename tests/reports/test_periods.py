"""Periods of the pages and the reports, and their buckets: pure, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from common.periods import (
    CHART_GRANULARITIES,
    EARLIEST,
    HOUR,
    LATEST,
    PRESETS,
    Granularity,
    PeriodError,
    api_range,
    bucket_end,
    period_from_query,
    period_parse,
    preset_range,
    range_check,
)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("2026", utc(2026, 1, 1), utc(2027, 1, 1)),
        ("2026-Q1", utc(2026, 1, 1), utc(2026, 4, 1)),
        ("2026-Q4", utc(2026, 10, 1), utc(2027, 1, 1)),
        ("2026-02", utc(2026, 2, 1), utc(2026, 3, 1)),
        ("2026-12", utc(2026, 12, 1), utc(2027, 1, 1)),
    ],
)
def test_named_periods_are_half_open_utc_ranges(text, start, end):
    assert period_parse(text) == (start, end)


@pytest.mark.parametrize("text", ["", "26", "2026-13", "2026-Q5", "2026-1", "2026-11-01", "1969", "2026-q3"])
def test_unreadable_periods_raise(text):
    with pytest.raises(PeriodError):
        period_parse(text)


def test_ranges_are_converted_to_utc_and_checked():
    plus_one = timezone(timedelta(hours=1))

    assert range_check(datetime(2026, 11, 1, 1, tzinfo=plus_one), utc(2026, 11, 2)) == (
        utc(2026, 11, 1),
        utc(2026, 11, 2),
    )
    for start, end in [
        (utc(2026, 11, 2), utc(2026, 11, 1)),
        (utc(2026, 11, 1), utc(2026, 11, 1)),
        (utc(2026, 11, 1, 0, 30), utc(2026, 11, 2)),
        (datetime(2026, 11, 1), utc(2026, 11, 2)),  # noqa: DTZ001 - the naive instant under test
    ]:
        with pytest.raises(PeriodError):
            range_check(start, end)


def test_bucket_ends_follow_the_calendar_and_stop_at_the_period_end():
    end = utc(2027, 1, 1)

    assert bucket_end(utc(2026, 11, 1, 5), Granularity.HOUR, end) == utc(2026, 11, 1, 6)
    assert bucket_end(utc(2026, 11, 1), Granularity.DAY, end) == utc(2026, 11, 2)
    assert bucket_end(utc(2026, 2, 1), Granularity.MONTH, end) == utc(2026, 3, 1)
    assert bucket_end(utc(2026, 12, 1), Granularity.MONTH, end) == utc(2027, 1, 1)
    assert bucket_end(utc(2026, 12, 31), Granularity.DAY, utc(2026, 12, 31, 12)) == utc(2026, 12, 31, 12)
    assert bucket_end(utc(2026, 10, 1), Granularity.TOTAL, end) == end


# One parser for pages and reports (common.periods): each form read once, the same way by both callers.

NOW = utc(2026, 11, 17, 9) + timedelta(minutes=41)


def page(**query: str):
    return period_from_query(query, now=NOW)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_a_presets_range_is_the_one_preset_range_on_a_page(preset):
    period = page(period=preset)

    assert (period.start, period.end, period.preset) == (*preset_range(preset, NOW), preset)


def test_without_a_period_a_report_covers_what_a_page_shows_first():
    shown = page()

    # 09:41: the hour in progress is left out, the last 7 days end at the last hour over.
    assert (shown.start, shown.end) == (utc(2026, 11, 10, 9), utc(2026, 11, 17, 9))
    assert api_range(None, None, None, now=NOW) == (shown.start, shown.end)


def test_without_a_period_both_end_where_the_ledger_is_complete():
    through = utc(2026, 11, 17, 7)  # 07:00 and 08:00 still to be priced

    shown = period_from_query({}, now=NOW, through=through)

    assert (shown.start, shown.end) == (utc(2026, 11, 10, 7), through)
    assert api_range(None, None, None, now=NOW, through=through) == (shown.start, shown.end)


def test_this_month_holds_its_first_hour_while_that_hour_is_open():
    first_hour = utc(2026, 11, 1, 0) + timedelta(minutes=5)

    assert preset_range("mtd", first_hour, through=utc(2026, 11, 1)) == (utc(2026, 11, 1), utc(2026, 11, 1, 1))


def test_a_months_dates_on_a_page_are_the_apis_named_month_and_its_instants():
    shown = page(start="2026-11-01", end="2026-11-30")

    assert (shown.start, shown.end) == api_range("2026-11", None, None, now=NOW)
    assert (shown.start, shown.end) == api_range(None, utc(2026, 11, 1), utc(2026, 12, 1), now=NOW)


def test_an_end_date_is_included_on_a_page_and_an_instant_in_the_api():
    # The one reading that differs, kept because callers rely on each: the picker's "to" day is included; the API's
    # bare date is the instant at its midnight, exclusive like every end (tests/dashboards/test_pages.py asks the API
    # for one day as start=D&end=D+1).
    shown = page(start="2026-11-01", end="2026-11-02")

    assert (shown.start, shown.end) == (utc(2026, 11, 1), utc(2026, 11, 3))
    assert api_range(None, utc(2026, 11, 1), utc(2026, 11, 2), now=NOW) == (utc(2026, 11, 1), utc(2026, 11, 2))


def test_pages_and_reports_share_one_pair_of_bounds():
    assert range_check(EARLIEST, LATEST) == (EARLIEST, LATEST)
    assert page(start="1970-01-01", end="1970-01-01").start == EARLIEST
    assert page(start="2999-01-01", end="2999-12-31").end == LATEST
    for start, end in [("1969-12-31", "1970-01-02"), ("2999-12-31", "3000-01-01"), ("9999-12-30", "9999-12-31")]:
        assert page(start=start, end=end).errors == ("start and end must lie between 1970-01-01 and 2999-12-31",)
    for start, end in [(EARLIEST - HOUR, EARLIEST + HOUR), (LATEST - HOUR, LATEST + HOUR)]:
        with pytest.raises(PeriodError, match="between 1970-01-01 and 3000-01-01"):
            range_check(start, end)


def test_a_page_charts_every_granularity_but_total_and_names_them_as_the_api_does():
    assert set(CHART_GRANULARITIES) == set(Granularity) - {Granularity.TOTAL}
    assert page(granularity="day").granularity is Granularity.DAY
    assert page(granularity="total").errors == ("granularity 'total' is not one of hour, day, month",)
    assert page(period="24h").granularity is Granularity.HOUR and page(period="90d").granularity is Granularity.DAY
    assert page(period="ytd").granularity is Granularity.MONTH
