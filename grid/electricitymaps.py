"""Electricity Maps API v3: hourly average (consumption-based) intensity, lifecycle and direct.

``emissionFactorType`` (``lifecycle`` or ``direct``) picks the factors the API applies
to each production mode: ``direct`` counts combustion at the plant only (what Scope 2
takes), ``lifecycle`` adds fuel supply, construction and end of life. By default
(``emission_factor_type="both"``) every range is asked twice, once per type, and each
hour keeps the lifecycle value (SCI, per-token figures) with the direct one beside it
(``direct_gco2e_per_kwh``); an hour only the direct answer has is kept on the direct
basis. ``lifecycle`` or ``direct`` alone asks once and stores that basis only.

- ``GET /v3/carbon-intensity/history?zone=DE`` (last 24 h, free tier) →
  ``{"zone": "DE", "history": [{"zone", "carbonIntensity", "datetime", "isEstimated", ...}]}``
- ``GET /v3/carbon-intensity/past-range?zone=DE&start=...&end=...`` (paid) → same
  items under ``"data"``; at most 10 days (240 hours) per request, so longer
  ranges are chunked.
- ``GET /v3/carbon-intensity/forecast?zone=DE&horizonHours=48`` (paid) →
  ``{"zone": "DE", "forecast": [{"carbonIntensity", "datetime"}, ...], "updatedAt": ...}``,
  hourly values ahead (for placement advice; never stored as measured hours).

Both keys ("history", "data") are accepted from both endpoints. Auth header:
``auth-token``. Error bodies: ``{"status": "error", "message": "..."}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from grid.errors import BadResponse
from grid.hours import HourlyTag, Point, chunk_range, floor_hour, hourly_from_points, iso_z, parse_timestamp
from grid.intensity import AVERAGE, DIRECT, LIFECYCLE, Basis, HourlyIntensity
from grid.transport import DEFAULT_TIMEOUT_S, JsonClient

NAME = "electricitymaps"
DEFAULT_BASE_URL = "https://api.electricitymap.org"
MAX_RANGE = timedelta(days=10)
# /history covers the last 24 hours; use it only when the whole request lies well inside.
HISTORY_SPAN = timedelta(hours=23)
FORECAST_HORIZON_H = 48
BOTH = "both"
FACTOR_TYPES = (BOTH, LIFECYCLE, DIRECT)


class ElectricityMapsProvider:
    name = NAME

    def __init__(
        self,
        *,
        api_token: str,
        base_url: str = DEFAULT_BASE_URL,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        emission_factor_type: str = BOTH,
        zone_map: Mapping[str, str] | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if not api_token:
            raise ValueError("Electricity Maps needs an api_token")
        if emission_factor_type not in FACTOR_TYPES:
            raise ValueError(
                f"emission_factor_type must be 'both', 'lifecycle' or 'direct', got {emission_factor_type!r}"
            )
        self._client = JsonClient(NAME, base_url, timeout_s)
        self._headers = {"auth-token": api_token}
        self._factor_type = emission_factor_type
        self._zone_map = dict(zone_map or {})
        self._now = now

    def fetch(self, zone: str, start: datetime, end: datetime) -> list[HourlyIntensity]:
        """Hours in ``[floor_hour(start), end)``; /history when all of it is in the last 23 h."""
        if self._factor_type != BOTH:
            return self._fetch_basis(zone, start, end, self._factor_type)  # type: ignore[arg-type]
        lifecycle = self._fetch_basis(zone, start, end, LIFECYCLE)
        direct = {hour.hour_start: hour for hour in self._fetch_basis(zone, start, end, DIRECT)}
        return both_bases(lifecycle, direct)

    def _fetch_basis(self, zone: str, start: datetime, end: datetime, basis: Basis) -> list[HourlyIntensity]:
        first = floor_hour(start)
        if first >= self._now() - HISTORY_SPAN:
            return self._hours(zone, self.history_items(zone, basis=basis), first, end, basis)
        items: list[Any] = []
        for chunk_start, chunk_end in chunk_range(first, end, MAX_RANGE):
            items += self.past_range_items(zone, chunk_start, chunk_end, basis=basis)
        return self._hours(zone, items, first, end, basis)

    def history_items(self, zone: str, *, basis: Basis | None = None) -> list[Any]:
        params = self._params(zone, basis)
        body = self._client.get_json("/v3/carbon-intensity/history", params=params, headers=self._headers)
        return _items(body, "history")

    def past_range_items(self, zone: str, start: datetime, end: datetime, *, basis: Basis | None = None) -> list[Any]:
        params = {**self._params(zone, basis), "start": iso_z(start), "end": iso_z(end)}
        body = self._client.get_json("/v3/carbon-intensity/past-range", params=params, headers=self._headers)
        return _items(body, "data")

    def forecast(self, zone: str) -> list[HourlyIntensity]:
        """The latest forecast for the next 48 hours, hourly; every hour flagged forecast and estimated."""
        params = {**self._params(zone), "horizonHours": str(FORECAST_HORIZON_H)}
        body = self._client.get_json("/v3/carbon-intensity/forecast", params=params, headers=self._headers)
        points = [
            Point(point.at, point.gco2e_per_kwh, is_estimated=True)
            for item in _items(body, "forecast")
            if (point := _point(item)) is not None
        ]
        if not points:
            return []
        first, last = min(p.at for p in points), max(p.at for p in points)
        tag = HourlyTag(zone, AVERAGE, NAME, points_per_hour=1, is_forecast=True, basis=self._one_basis())
        return hourly_from_points(points, tag, first, last + timedelta(hours=1))

    def _one_basis(self) -> Basis:
        """The basis of a single request (the forecast, for advice): lifecycle unless direct alone is configured."""
        return DIRECT if self._factor_type == DIRECT else LIFECYCLE

    def _params(self, zone: str, basis: Basis | None = None) -> dict[str, str]:
        return {"zone": self._zone_map.get(zone, zone), "emissionFactorType": basis or self._one_basis()}

    def _hours(
        self, zone: str, items: list[Any], start: datetime, end: datetime, basis: Basis
    ) -> list[HourlyIntensity]:
        points = [point for item in items if (point := _point(item)) is not None]
        return hourly_from_points(points, HourlyTag(zone, AVERAGE, NAME, points_per_hour=1, basis=basis), start, end)


def both_bases(lifecycle: list[HourlyIntensity], direct: dict[datetime, HourlyIntensity]) -> list[HourlyIntensity]:
    """Each lifecycle hour with the same hour's direct value beside it; hours only the direct answer has,
    on the direct basis. An hour is estimated when either value is."""
    hours = []
    for hour in lifecycle:
        other = direct.pop(hour.hour_start, None)
        if other is None:
            hours.append(hour)
            continue
        estimated = hour.is_estimated or other.is_estimated
        hours.append(replace(hour, direct_gco2e_per_kwh=other.gco2e_per_kwh, is_estimated=estimated))
    return sorted(hours + list(direct.values()), key=lambda hour: hour.hour_start)


def _items(body: Any, key: str) -> list[Any]:
    if not isinstance(body, dict):
        raise BadResponse(NAME, f"expected an object, got {type(body).__name__}")
    if body.get("status") == "error":
        raise BadResponse(NAME, str(body.get("message", "error without message")))
    items = body.get(key, body.get("data" if key == "history" else "history"))
    if not isinstance(items, list):
        raise BadResponse(NAME, f"expected a list under {key!r}, got keys {sorted(body)}")
    return items


def _point(item: Any) -> Point | None:
    """One hourly item; None when the hour has no value (carbonIntensity null)."""
    try:
        at = parse_timestamp(item["datetime"])
        value = item["carbonIntensity"]
    except (KeyError, TypeError, ValueError) as exc:
        raise BadResponse(NAME, f"bad item {item!r}: {exc}") from exc
    if value is None:
        return None
    if not isinstance(value, int | Decimal) or isinstance(value, bool) or value < 0:
        raise BadResponse(NAME, f"bad carbonIntensity {value!r} at {item['datetime']}")
    return Point(at, Decimal(value), is_estimated=bool(item.get("isEstimated")))
