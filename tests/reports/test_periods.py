"""Report periods and buckets: pure, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from common.periods import Granularity, PeriodError, bucket_end, period_parse, range_check


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
