"""What every dashboard page shares: the current organization and the period being looked at.

The organization comes from the session (set by the switcher) and is always
checked against the user's memberships; the period comes from the query string
(``?period=30d`` or ``?start=...&end=...``, ``&granularity=day``). Bad values
are not guessed at: the page says what is wrong and shows the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.http import HttpRequest, QueryDict

from fleets.models import Organization
from fleets.selectors import organizations_for_user

SESSION_ORGANIZATION = "organization_id"
GRANULARITIES = ("hour", "day", "month")
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
# Custom ranges stay well inside datetime's years 1-9999, so no period or its previous one overflows.
FIRST_DAY, LAST_DAY = date(1970, 1, 1), date(2999, 12, 31)
# The finest granularity that keeps a chart readable for a period of this length.
_AUTO_GRANULARITY = ((timedelta(days=3), "hour"), (timedelta(days=120), "day"))


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime
    granularity: str
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

    def query(self) -> str:
        if self.preset == "custom":
            last_day = self.end - timedelta(days=1)
            return f"start={self.start:%Y-%m-%d}&end={last_day:%Y-%m-%d}&granularity={self.granularity}"
        return f"period={self.preset}&granularity={self.granularity}"


def period_from_query(query: QueryDict, *, now: datetime) -> Period:
    errors: list[str] = []
    start, end, preset = _range(query, now, errors)
    granularity = query.get("granularity") or _auto_granularity(end - start)
    if granularity not in GRANULARITIES:
        errors.append(f"granularity {granularity!r} is not one of {', '.join(GRANULARITIES)}")
        granularity = _auto_granularity(end - start)
    return Period(start, end, granularity, preset, tuple(errors))


def _range(query: QueryDict, now: datetime, errors: list[str]) -> tuple[datetime, datetime, str]:
    if query.get("start") or query.get("end"):
        try:
            return (*_custom(query.get("start", ""), query.get("end", "")), "custom")
        except ValueError as error:
            errors.append(str(error))
    preset = query.get("period") or DEFAULT_PRESET
    if preset not in PRESETS:
        errors.append(f"period {preset!r} is not one of {', '.join(PRESETS)}")
        preset = DEFAULT_PRESET
    return (*preset_range(preset, now), preset)


def _custom(start_text: str, end_text: str) -> tuple[datetime, datetime]:
    try:
        first, last = date.fromisoformat(start_text), date.fromisoformat(end_text)
    except ValueError:
        raise ValueError("start and end must be dates like 2026-11-01") from None
    if first < FIRST_DAY or last > LAST_DAY:
        raise ValueError(f"start and end must lie between {FIRST_DAY} and {LAST_DAY}")
    if last < first:
        raise ValueError("the end date is before the start date")
    if (last - first).days > 3 * 366:
        raise ValueError("a custom period may span at most three years")
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    return start, datetime(last.year, last.month, last.day, tzinfo=UTC) + timedelta(days=1)


def preset_range(preset: str, now: datetime) -> tuple[datetime, datetime]:
    """``[start, end)`` in UTC; rolling presets end at the next whole hour so the current hour shows."""
    hour_end = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    rolling = {
        "24h": timedelta(hours=24),
        "7d": timedelta(days=7),
        "30d": timedelta(days=30),
        "90d": timedelta(days=90),
    }
    if preset in rolling:
        return hour_end - rolling[preset], hour_end
    if preset == "mtd":
        return month_start, hour_end
    if preset == "last-month":
        previous = (month_start - timedelta(days=1)).replace(day=1)
        return previous, month_start
    return month_start.replace(month=1), hour_end  # ytd


def _auto_granularity(length: timedelta) -> str:
    return next((name for limit, name in _AUTO_GRANULARITY if length <= limit), "month")


def current_organization(request: HttpRequest) -> Organization | None:
    """The organization chosen in the session if the user belongs to it, else their first one."""
    organizations = organizations_for_user(user=request.user).order_by("name")
    chosen = request.session.get(SESSION_ORGANIZATION)
    found = organizations.filter(pk=chosen).first() if isinstance(chosen, int) else None
    return found or organizations.first()


def page_context(request: HttpRequest, *, now: datetime) -> dict[str, Any]:
    """Template context every dashboard page starts from."""
    organization = current_organization(request)
    period = period_from_query(request.GET, now=now)
    return {
        "organization": organization,
        "organizations": organizations_for_user(user=request.user).order_by("name"),
        "period": period,
        "presets": PRESETS,
        "granularities": GRANULARITIES,
    }
