"""UTC hour arithmetic and the one sub-hourly → hourly aggregation all providers share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from grid.intensity import LIFECYCLE, ONE_HOUR, Basis, HourlyIntensity, Kind, mean_intensity


def require_aware(moment: datetime, name: str = "datetime") -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got naive {moment.isoformat()}")


def floor_hour(moment: datetime) -> datetime:
    """The UTC hour containing ``moment`` (which must be aware)."""
    require_aware(moment)
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def hour_starts(start: datetime, end: datetime) -> list[datetime]:
    """Hour starts in ``[floor_hour(start), end)``."""
    require_aware(end, "end")
    hour, hours = floor_hour(start), []
    while hour < end:
        hours.append(hour)
        hour += ONE_HOUR
    return hours


def chunk_range(start: datetime, end: datetime, max_span: timedelta) -> list[tuple[datetime, datetime]]:
    """Split ``[start, end)`` into consecutive pieces no longer than ``max_span``."""
    chunks = []
    while start < end:
        chunk_end = min(end, start + max_span)
        chunks.append((start, chunk_end))
        start = chunk_end
    return chunks


def parse_timestamp(text: object) -> datetime:
    """An ISO-8601 timestamp with an offset or Z, as aware UTC; ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"timestamp must be a string, got {text!r}")
    moment = datetime.fromisoformat(text.strip())
    require_aware(moment, "timestamp")
    return moment.astimezone(UTC)


def iso_z(moment: datetime) -> str:
    """``2024-05-01T13:00:00Z``: the form every provider accepts in query strings."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Point:
    """One provider value at ``at`` (aware UTC), before hourly aggregation."""

    at: datetime
    gco2e_per_kwh: Decimal
    is_estimated: bool = False


@dataclass(frozen=True)
class HourlyTag:
    """What every hour built from one provider answer shares."""

    zone: str
    kind: Kind
    source: str
    points_per_hour: int
    is_forecast: bool = False
    basis: Basis = LIFECYCLE


def hourly_from_points(
    points: Iterable[Point], tag: HourlyTag, start: datetime, end: datetime
) -> list[HourlyIntensity]:
    """Mean of the points of each hour in ``[floor_hour(start), end)``, sorted by hour.

    A repeated timestamp (overlapping request chunks) counts once, the last one
    winning. An hour with fewer points than ``points_per_hour`` is kept but
    flagged estimated: its mean stands for minutes it has no data for.
    """
    first = floor_hour(start)
    by_hour: dict[datetime, dict[datetime, Point]] = {}
    for point in points:
        hour = floor_hour(point.at)
        if first <= hour < end:
            by_hour.setdefault(hour, {})[point.at] = point
    return [_hour(tag, hour, list(by_hour[hour].values())) for hour in sorted(by_hour)]


def _hour(tag: HourlyTag, hour: datetime, points: list[Point]) -> HourlyIntensity:
    partial = len(points) < tag.points_per_hour
    return HourlyIntensity(
        zone=tag.zone,
        hour_start=hour,
        gco2e_per_kwh=mean_intensity([p.gco2e_per_kwh for p in points]),
        kind=tag.kind,
        source=tag.source,
        is_estimated=partial or any(p.is_estimated for p in points),
        is_forecast=tag.is_forecast,
        basis=tag.basis,
    )
