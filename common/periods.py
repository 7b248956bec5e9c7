"""Report periods and time buckets, pure: no Django.

A period is half-open, ``[start, end)``, in UTC, on whole hours (the ledger's
unit). It is named (``2026``, ``2026-Q3``, ``2026-11``) or given as two
instants. Buckets are UTC calendar hours, days or months; ``total`` is one
bucket spanning the whole period.
"""

from __future__ import annotations

import enum
import re
from datetime import UTC, datetime, timedelta

_PERIOD = re.compile(r"^(?P<year>\d{4})(?:-(?:Q(?P<quarter>[1-4])|(?P<month>0[1-9]|1[0-2])))?$", re.ASCII)
HOUR = timedelta(hours=1)
# What a report may cover: from the Unix epoch to the end of 2999. Far wider than any ledger, and far
# enough inside datetime's range (year 9999) that no bucket or neighbouring period overflows it.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(3000, 1, 1, tzinfo=UTC)


class PeriodError(ValueError):
    """A period that cannot be read, or a range that is empty, reversed or off the hour."""


class Granularity(enum.StrEnum):
    HOUR = "hour"
    DAY = "day"
    MONTH = "month"
    TOTAL = "total"


def month_add(at: datetime, months: int) -> datetime:
    """The first instant of the month ``months`` after the month of ``at`` (``at`` on a month start)."""
    index = at.year * 12 + at.month - 1 + months
    return at.replace(year=index // 12, month=index % 12 + 1)


def period_parse(text: str) -> tuple[datetime, datetime]:
    """``2026`` → the year, ``2026-Q3`` → July to September, ``2026-11`` → November, all UTC."""
    match = _PERIOD.match(text.strip())
    if match is None:
        raise PeriodError(f"period {text!r} is not YYYY, YYYY-Qn or YYYY-MM")
    year = int(match["year"])
    if not EARLIEST.year <= year < LATEST.year:
        raise PeriodError(f"period {text!r} is not between {EARLIEST.year} and {LATEST.year - 1}")
    if match["quarter"]:
        start = datetime(year, 3 * int(match["quarter"]) - 2, 1, tzinfo=UTC)
        return start, month_add(start, 3)
    if match["month"]:
        start = datetime(year, int(match["month"]), 1, tzinfo=UTC)
        return start, month_add(start, 1)
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)


def range_check(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """``(start, end)`` in UTC, or ``PeriodError``: both aware, on whole hours, start before end.

    Off-hour instants are refused rather than rounded: the ledger holds whole
    hours, and a silently widened period would report hours nobody asked for.
    """
    if start.tzinfo is None or end.tzinfo is None:
        raise PeriodError("start and end need a UTC offset, e.g. 2026-11-01T00:00:00Z")
    try:
        start, end = start.astimezone(UTC), end.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+14:00 is before the first representable UTC instant
        raise PeriodError(f"start and end must lie between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}") from None
    for name, at in (("start", start), ("end", end)):
        if at.minute or at.second or at.microsecond:
            raise PeriodError(f"{name} {at.isoformat()} is not on a whole hour (the ledger is hourly)")
    if end <= start:
        raise PeriodError("end must be after start")
    if start < EARLIEST or end > LATEST:
        raise PeriodError(f"start and end must lie between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}")
    return start, end


def bucket_end(bucket_start: datetime, granularity: Granularity, end: datetime) -> datetime:
    """Where the bucket starting at ``bucket_start`` ends, cut at the period's ``end``."""
    if granularity is Granularity.HOUR:
        natural = bucket_start + HOUR
    elif granularity is Granularity.DAY:
        natural = bucket_start + timedelta(days=1)
    elif granularity is Granularity.MONTH:
        natural = month_add(bucket_start, 1)
    else:
        natural = end
    return min(natural, end)
