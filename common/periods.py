"""What a period is, for the dashboard pages and the report API alike: pure, no Django.

A period is half-open, ``[start, end)``, in UTC, on whole hours (the ledger's
unit), between ``EARLIEST`` and ``LATEST``. It is written in one of four ways:

- a preset of the pages' picker (``24h``, ``7d``, ``30d``, ``90d``, ``mtd``,
  ``last-month``, ``ytd``), relative to now; without any period both pages and
  reports show ``DEFAULT_PRESET``. A preset that runs up to now ends where the
  ledger is complete (``through``: the end of the last hour whose node-hours are
  all final, ``reports.selectors.complete``; without it, the end of the last hour
  over), never inside the hour in progress: a figure shown by default changes
  only when data or inputs for its hours change;
- a calendar period of the API (``2026``, ``2026-Q3``, ``2026-11``);
- a page's two dates (``start=2026-11-01&end=2026-11-30``): whole UTC days, the
  end day included, as the picker's "from ... to ..." says;
- the API's two instants (``start=2026-11-01T00:00:00Z&end=2026-12-01T00:00:00Z``):
  on whole hours, the end excluded. A bare date there is the instant at its
  midnight (DRF reads it so), so the same ``end`` date is one day shorter on the
  API than on a page: each form keeps the reading its callers rely on. Pages
  link to the API with instants (``dashboards.common.api_query``).

Buckets are UTC calendar hours, days or months; ``total`` is one bucket
spanning the whole period. The pages chart hours, days or months, the finest
that keeps a chart readable unless one is asked for. Pages read their query with
``period_from_query`` and show what is wrong beside the default; the API calls
``api_range`` (through ``common.scope``) and answers 400.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

_PERIOD = re.compile(r"^(?P<year>\d{4})(?:-(?:Q(?P<quarter>[1-4])|(?P<month>0[1-9]|1[0-2])))?$", re.ASCII)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
# What a period may cover: from the Unix epoch to the end of 2999. Far wider than any ledger, and far
# enough inside datetime's range (year 9999) that no bucket or neighbouring period overflows it.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(3000, 1, 1, tzinfo=UTC)
# The pages' custom ranges are picked in days: they span at most this many (three years).
CUSTOM_DAYS_MAX = 3 * 366
# The bounds in the words of each form: the instant the last hour ends, the last day included.
_OUTSIDE = f"start and end must lie between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}"
_OUTSIDE_DAYS = f"start and end must lie between {EARLIEST:%Y-%m-%d} and {LATEST - DAY:%Y-%m-%d}"


class PeriodError(ValueError):
    """A period that cannot be read, or a range that is empty, reversed or off the hour."""


class Granularity(enum.StrEnum):
    HOUR = "hour"
    DAY = "day"
    MONTH = "month"
    TOTAL = "total"


# What a chart can be drawn in: every granularity but ``total`` (one bucket is a tile, not a chart).
CHART_GRANULARITIES = (Granularity.HOUR, Granularity.DAY, Granularity.MONTH)
# The finest granularity that keeps a chart readable for a period of this length.
_AUTO_GRANULARITY = ((timedelta(days=3), Granularity.HOUR), (timedelta(days=120), Granularity.DAY))

PRESETS = {
    "24h": "Last 24 hours",
    "7d": "Last 7 days",
    "30d": "Last 30 days",
    "90d": "Last 90 days",
    "mtd": "This month",
    "last-month": "Last month",
    "ytd": "This year",
}
DEFAULT_PRESET = "7d"
_ROLLING = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30), "90d": timedelta(days=90)}


def instant_problem(value: datetime | None) -> str | None:
    """Why ``value`` cannot date an input (a node's commissioning, an asset's in-service date), or ``None``: it
    names its time zone and lies between ``EARLIEST`` and ``LATEST`` like every period, so an asset's whole life
    after it stays inside datetime's range."""
    if value is None:
        return None
    if value.tzinfo is None:
        return "must name its time zone (UTC: ...Z)"
    if not EARLIEST <= value <= LATEST:  # compared without converting: 0001-01-01T00:00+14:00 does not overflow
        return f"must lie between {EARLIEST:%Y-%m-%d} and {LATEST:%Y-%m-%d}"
    return None


def hour_instant_problem(value: datetime | None) -> str | None:
    """Why ``value`` cannot start or end a dated input (a price, tariff, PUE, market factor, instrument, lock),
    or ``None``: the ledger is hourly, so an input comes into force on a whole UTC hour, inside the bounds of
    ``instant_problem``."""
    if value is None:
        return None
    if problem := instant_problem(value):
        return problem
    at = value.astimezone(UTC)
    if (at.minute, at.second, at.microsecond) != (0, 0, 0):
        return f"must be on a whole UTC hour (the ledger is hourly), not {at:%H:%M:%S}"
    return None


def month_bounds(at: datetime) -> tuple[datetime, datetime]:
    """The UTC calendar month holding ``at``: ``[its first instant, the next month's first instant)``."""
    utc = at.astimezone(UTC)
    start = datetime(utc.year, utc.month, 1, tzinfo=UTC)
    return start, month_add(start, 1)


def month_add(at: datetime, months: int) -> datetime:
    """The first instant of the month ``months`` after the month of ``at`` (``at`` on a month start)."""
    index = at.year * 12 + at.month - 1 + months
    return at.replace(year=index // 12, month=index % 12 + 1)


def preset_range(preset: str, now: datetime, *, through: datetime | None = None) -> tuple[datetime, datetime]:
    """``[start, end)`` in UTC; presets up to now end at ``through`` (the end of the last complete hour; without
    it, the end of the last hour over), so the hour in progress is not shown unless asked for.

    This month and this year start on their first hour whatever ``through`` says: while their
    first hour is still open they hold just it (a period is never empty).
    """
    hour_end = min(through, now) if through is not None else now
    hour_end = hour_end.replace(minute=0, second=0, microsecond=0)
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if preset in _ROLLING:
        return hour_end - _ROLLING[preset], hour_end
    if preset == "mtd":
        return month_start, max(hour_end, month_start + HOUR)
    if preset == "last-month":
        return month_add(month_start, -1), month_start
    year_start = month_start.replace(month=1)
    return year_start, max(hour_end, year_start + HOUR)  # ytd


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


def day_parse(text: str) -> date | None:
    """The date ``text`` names (ISO 8601, no time of day), or ``None`` for anything else."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def day_start(day: date) -> datetime:
    """Midnight UTC at the start of ``day``: where a range whose first day is ``day`` starts."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def day_end(day: date) -> datetime:
    """Midnight UTC after ``day``: where a range whose last day (included) is ``day`` ends."""
    return day_start(day) + DAY


def day_of(moment: datetime) -> datetime:
    """The start of ``moment``'s UTC day."""
    return day_start(moment.astimezone(UTC).date())


def whole_days(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    """The whole UTC days ``[first, last)`` inside ``[start, end)`` (``first == last``: none)."""
    first = day_of(start) if day_of(start) == start else day_of(start) + DAY
    return first, max(first, day_of(end))


def api_range(
    period: str | None,
    start: datetime | None,
    end: datetime | None,
    *,
    now: datetime,
    through: datetime | None = None,
) -> tuple[datetime, datetime]:
    """A report's ``[start, end)``: ``period``, or ``start`` and ``end``, or neither (``DEFAULT_PRESET``, ending at
    ``through``: see ``preset_range``)."""
    if not (period or start or end):
        return preset_range(DEFAULT_PRESET, now, through=through)
    if period and (start or end):
        raise PeriodError("give period, or start and end, not both")
    if period:
        return period_parse(period)
    if start is None or end is None:
        raise PeriodError("give period (2026, 2026-Q3, 2026-11), or both start and end, or neither (last 7 days)")
    return range_check(start, end)


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
        raise PeriodError(_OUTSIDE) from None
    for name, at in (("start", start), ("end", end)):
        if at.minute or at.second or at.microsecond:
            raise PeriodError(f"{name} {at.isoformat()} is not on a whole hour (the ledger is hourly)")
    if end <= start:
        raise PeriodError("end must be after start")
    if start < EARLIEST or end > LATEST:
        raise PeriodError(_OUTSIDE)
    return start, end


def holds_open_hours(end: datetime, complete_through: datetime) -> bool:
    """Whether a period ending at ``end`` asks for hours after ``complete_through`` (not all final yet)."""
    return end > complete_through


def bucket_end(bucket_start: datetime, granularity: Granularity, end: datetime) -> datetime:
    """Where the bucket starting at ``bucket_start`` ends, cut at the period's ``end``."""
    if granularity is Granularity.HOUR:
        natural = bucket_start + HOUR
    elif granularity is Granularity.DAY:
        natural = bucket_start + DAY
    elif granularity is Granularity.MONTH:
        natural = month_add(bucket_start, 1)
    else:
        natural = end
    return min(natural, end)


def auto_granularity(length: timedelta) -> Granularity:
    """The finest chart granularity that keeps a period of ``length`` readable."""
    return next((name for limit, name in _AUTO_GRANULARITY if length <= limit), Granularity.MONTH)


@dataclass(frozen=True)
class Period:
    """The period a dashboard page shows, with what was wrong in the query that asked for it."""

    start: datetime
    end: datetime
    granularity: Granularity
    preset: str  # a key of PRESETS, or "custom"
    errors: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        if self.preset in PRESETS:
            return PRESETS[self.preset]
        return f"{self.start:%Y-%m-%d} to {(self.end - timedelta(seconds=1)):%Y-%m-%d}"

    def previous(self) -> Period:
        """The period of the same length just before this one (for "change vs previous")."""
        length = self.end - self.start
        return Period(self.start - length, self.start, self.granularity, "custom")

    @property
    def last_day(self) -> datetime:
        """The last day a custom range includes: what its picker's "to" box shows, so a resubmit keeps the range."""
        return self.end - DAY

    def query(self) -> str:
        if self.preset == "custom":
            return f"start={self.start:%Y-%m-%d}&end={self.last_day:%Y-%m-%d}&granularity={self.granularity}"
        return f"period={self.preset}&granularity={self.granularity}"


def period_from_query(query: Mapping[str, str], *, now: datetime, through: datetime | None = None) -> Period:
    """A page's period from its query string; a bad value is named in ``errors`` and the default shown.

    ``through``: the end of the last complete hour, where presets up to now end (``preset_range``)."""
    errors: list[str] = []
    start, end, preset = _page_range(query, now, errors, through)
    asked = query.get("granularity")
    if asked and asked not in CHART_GRANULARITIES:
        errors.append(f"granularity {asked!r} is not one of {', '.join(CHART_GRANULARITIES)}")
    granularity = Granularity(asked) if asked in CHART_GRANULARITIES else auto_granularity(end - start)
    return Period(start, end, granularity, preset, tuple(errors))


def _page_range(
    query: Mapping[str, str], now: datetime, errors: list[str], through: datetime | None
) -> tuple[datetime, datetime, str]:
    if query.get("start") or query.get("end"):
        try:
            return (*page_days(query.get("start", ""), query.get("end", "")), "custom")
        except PeriodError as error:
            errors.append(str(error))
    preset = query.get("period") or DEFAULT_PRESET
    if preset not in PRESETS:
        errors.append(f"period {preset!r} is not one of {', '.join(PRESETS)}")
        preset = DEFAULT_PRESET
    return (*preset_range(preset, now, through=through), preset)


def page_days(start_text: str, end_text: str) -> tuple[datetime, datetime]:
    """A page's custom range: two dates, whole UTC days with the last included, at most three years."""
    first, last = day_parse(start_text), day_parse(end_text)
    if first is None or last is None:
        raise PeriodError("start and end must be dates like 2026-11-01")
    if first < EARLIEST.date() or last >= LATEST.date():  # checked before any arithmetic: 9999-12-31 is refused
        raise PeriodError(_OUTSIDE_DAYS)
    if last < first:
        raise PeriodError("the end date is before the start date")
    if (last - first).days > CUSTOM_DAYS_MAX:
        raise PeriodError("a custom period may span at most three years")
    return day_start(first), day_end(last)
