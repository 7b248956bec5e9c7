"""GB Carbon Intensity API (NESO, api.carbonintensity.org.uk; no key): half-hourly average intensity.

Zones: "GB" → national ``/intensity/{from}/{to}`` →
``{"data": [{"from": "2018-01-20T12:00Z", "to": "...", "intensity": {"forecast": 266, "actual": 263, "index": ...}}]}``;
"GB-REGION-<n>" (n = the API's regionid, 1..17, e.g. 13 = London) → regional
``/regional/intensity/{from}/{to}/regionid/{n}`` →
``{"data": {"regionid": 13, "shortname": ..., "data": [{"from", "to", "intensity": {"forecast", "index"}, ...}]}}``.

Forecast (for placement advice): ``/intensity/{from}/fw48h`` (national) and
``/regional/intensity/{from}/fw48h/regionid/{n}``: the 48 hours from ``from``, each
half-hour's ``forecast`` (``actual`` is null ahead), hours flagged forecast.

Each half-hour uses ``actual`` when published, else ``forecast`` (flagged estimated;
regional figures are forecast-only). An hour is the mean of its two half-hours;
with only one half present it is kept and flagged estimated. Requests start half an
hour early (the API's handling of ``from`` differs between reports; the extra
half-hour is filtered out) and are chunked at 13 days (the API allows at most 14).

Basis: direct. The API weighs each generation type's output by an operational (combustion)
factor per fuel, zero for wind, solar, hydro and nuclear (its methodology paper), so its
figures carry no upstream emissions: hours are stored on the direct basis, with no
lifecycle value (Scope 3 Category 3 is not known for them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from grid.errors import BadResponse, UnsupportedZone
from grid.hours import HourlyTag, Point, chunk_range, floor_hour, hourly_from_points, parse_timestamp
from grid.intensity import AVERAGE, DIRECT, HourlyIntensity
from grid.transport import DEFAULT_TIMEOUT_S, JsonClient

NAME = "carbonintensity.org.uk"
DEFAULT_BASE_URL = "https://api.carbonintensity.org.uk"
MAX_RANGE = timedelta(days=13)
HALF_HOUR = timedelta(minutes=30)
FORECAST_SPAN = timedelta(hours=48)
NATIONAL_ZONE = "GB"
_REGION_ZONE = re.compile(r"^GB-REGION-(\d{1,2})$")
REGION_IDS = range(1, 18)


def region_id(zone: str) -> int | None:
    """None for the national zone "GB", the regionid for "GB-REGION-<n>"; UnsupportedZone otherwise."""
    key = zone.strip().upper()
    if key == NATIONAL_ZONE:
        return None
    match = _REGION_ZONE.match(key)
    if match is None or int(match.group(1)) not in REGION_IDS:
        raise UnsupportedZone(f"{NAME} answers for 'GB' or 'GB-REGION-1'..'GB-REGION-17', not {zone!r}")
    return int(match.group(1))


class CarbonIntensityUKProvider:
    name = NAME

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        zone_map: Mapping[str, str] | None = None,
    ) -> None:
        self._client = JsonClient(NAME, base_url, timeout_s)
        self._zone_map = dict(zone_map or {})

    def fetch(self, zone: str, start: datetime, end: datetime) -> list[HourlyIntensity]:
        region = region_id(self._zone_map.get(zone, zone))
        first, points = floor_hour(start), []
        for chunk_start, chunk_end in chunk_range(first - HALF_HOUR, end, MAX_RANGE):
            points += [p for item in self._periods(region, chunk_start, chunk_end) if (p := _point(item)) is not None]
        return hourly_from_points(points, HourlyTag(zone, AVERAGE, NAME, points_per_hour=2, basis=DIRECT), first, end)

    def forecast(self, zone: str, *, now: datetime | None = None) -> list[HourlyIntensity]:
        """The forecast for the 48 hours from the current hour, hourly; every hour flagged forecast."""
        region = region_id(self._zone_map.get(zone, zone))
        first = floor_hour(now or datetime.now(UTC))
        if region is None:
            body = _list(self._client.get_json(f"/intensity/{_minute_z(first)}/fw48h"), "data")
        else:
            body = _list(
                _region_of(self._client.get_json(f"/regional/intensity/{_minute_z(first)}/fw48h/regionid/{region}")),
                "data",
            )
        points = [Point(p.at, p.gco2e_per_kwh, is_estimated=True) for item in body if (p := _point(item)) is not None]
        tag = HourlyTag(zone, AVERAGE, NAME, points_per_hour=2, is_forecast=True, basis=DIRECT)
        return hourly_from_points(points, tag, first, first + FORECAST_SPAN)

    def _periods(self, region: int | None, start: datetime, end: datetime) -> list[Any]:
        span = f"{_minute_z(start)}/{_minute_z(end)}"
        if region is None:
            return _list(self._client.get_json(f"/intensity/{span}"), "data")
        body = self._client.get_json(f"/regional/intensity/{span}/regionid/{region}")
        return _list(_region_of(body), "data")


def _minute_z(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def _region_of(body: Any) -> Any:
    """The region object: documented as an object under "data", seen as a one-item list too."""
    region = body.get("data") if isinstance(body, dict) else None
    if isinstance(region, list) and len(region) == 1:
        region = region[0]
    if not isinstance(region, dict):
        raise BadResponse(NAME, "expected {'data': {'regionid': ..., 'data': [...]}}")
    return region


def _list(body: Any, key: str) -> list[Any]:
    items = body.get(key) if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise BadResponse(NAME, f"expected a list under {key!r}")
    return items


def _point(item: Any) -> Point | None:
    try:
        at, intensity = parse_timestamp(item["from"]), item["intensity"]
        actual, forecast = intensity.get("actual"), intensity.get("forecast")
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise BadResponse(NAME, f"bad period {item!r}: {exc}") from exc
    value = actual if actual is not None else forecast
    if value is None:
        return None
    if not isinstance(value, int | Decimal) or isinstance(value, bool) or value < 0:
        raise BadResponse(NAME, f"bad intensity {value!r} at {item['from']}")
    return Point(at, Decimal(value), is_estimated=actual is None)
