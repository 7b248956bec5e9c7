"""Pure helpers for the hourly fetch task: what to fetch, and how long to wait after a failure."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import NamedTuple

from grid.errors import ProviderError, ProviderUnavailable, RateLimited
from grid.intensity import ONE_HOUR, is_utc_hour

DEFAULT_BACKOFF_BASE_S = 30.0
DEFAULT_BACKOFF_CAP_S = 3600.0


class HourRange(NamedTuple):
    """Hours ``start``, ``start + 1h``, ... before ``end`` (half-open, aware UTC)."""

    start: datetime
    end: datetime


def missing_hours(wanted_hours: Iterable[datetime], stored_hours: Iterable[datetime]) -> list[HourRange]:
    """Contiguous runs of wanted hours not yet stored, in order, so nothing stored is refetched.

    Every hour must be an aware datetime at the start of a UTC hour (ValueError otherwise).
    """
    wanted, stored = _hours(wanted_hours, "wanted"), _hours(stored_hours, "stored")
    ranges: list[HourRange] = []
    for hour in sorted(wanted - stored):
        if ranges and ranges[-1].end == hour:
            ranges[-1] = HourRange(ranges[-1].start, hour + ONE_HOUR)
        else:
            ranges.append(HourRange(hour, hour + ONE_HOUR))
    return ranges


def _hours(hours: Iterable[datetime], name: str) -> set[datetime]:
    checked = set()
    for hour in hours:
        if not is_utc_hour(hour):
            raise ValueError(f"{name} hours must be aware UTC hour starts, got {hour!r}")
        checked.add(hour.astimezone(UTC))
    return checked


def backoff_delay_s(
    attempt: int,
    *,
    retry_after_s: float | None = None,
    base_s: float = DEFAULT_BACKOFF_BASE_S,
    cap_s: float = DEFAULT_BACKOFF_CAP_S,
    rand: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number ``attempt`` (0 for the first retry).

    Exponential with full jitter: uniform in [0, min(cap, base * 2**attempt)], so
    many workers failing together do not retry together. A server's Retry-After
    is a floor: never retry earlier than it asked (even past the cap).
    """
    if attempt < 0:
        raise ValueError(f"attempt must be >= 0, got {attempt}")
    ceiling = min(cap_s, base_s * 2 ** min(attempt, 32))
    return max(ceiling * rand(), retry_after_s or 0.0)


def retry_delay_s(
    error: ProviderError,
    attempt: int,
    *,
    base_s: float = DEFAULT_BACKOFF_BASE_S,
    cap_s: float = DEFAULT_BACKOFF_CAP_S,
    rand: Callable[[], float] = random.random,
) -> float | None:
    """Delay before retrying after ``error``, or None when retrying cannot help.

    Rate limits and outages are retried; auth failures, rejected requests and bad
    responses need a person or a code change, so the caller falls back instead.
    """
    if isinstance(error, RateLimited):
        return backoff_delay_s(attempt, retry_after_s=error.retry_after_s, base_s=base_s, cap_s=cap_s, rand=rand)
    if isinstance(error, ProviderUnavailable):
        return backoff_delay_s(attempt, base_s=base_s, cap_s=cap_s, rand=rand)
    return None
