"""WattTime API v3: marginal (MOER) or average (AOER) emission rates, 5-minute points.

- ``GET /login`` with HTTP basic auth → ``{"token": "..."}``, a bearer token valid
  30 minutes. A 401 on a data request logs in again once, then retries.
- ``GET /v3/historical?region=CAISO_NORTH&start=...&end=...&signal_type=co2_moer`` →
  ``{"data": [{"point_time": "...+00:00", "value": 870.0}, ...],
  "meta": {"region", "signal_type", "units": "lbs_co2_per_mwh", "warnings", ...}}``.
  The end is inclusive; requests are chunked at 30 days (the official SDK's size).
- ``GET /v3/forecast?region=...&signal_type=...`` → same shape, future points.
- ``GET /v3/signal-index?region=...&signal_type=co2_moer`` → one point whose value
  is a 0-100 percentile (``"units": "percentile"``), not an intensity.

Values in lbs/MWh are converted to g/kWh (times 0.45359237) and the 5-minute points
averaged per hour. ``co2_moer`` is marginal (advice only); ``co2_aoer`` is average.

Basis: direct. WattTime's rates are CO2 emitted at the generators (stack emissions), no
upstream part; MOER is a marginal figure and never an inventory factor whatever its basis.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from grid.errors import AuthError, BadResponse
from grid.hours import HourlyTag, Point, chunk_range, floor_hour, hourly_from_points, iso_z, parse_timestamp
from grid.intensity import AVERAGE, DIRECT, MARGINAL, HourlyIntensity, Kind, gco2_per_kwh_from_lbs_per_mwh
from grid.transport import DEFAULT_TIMEOUT_S, JsonClient

NAME = "watttime"
DEFAULT_BASE_URL = "https://api.watttime.org"
MAX_RANGE = timedelta(days=30)
POINTS_PER_HOUR = 12
KIND_BY_SIGNAL: dict[str, Kind] = {"co2_moer": MARGINAL, "co2_aoer": AVERAGE}
LBS_PER_MWH = "lbs_co2_per_mwh"


@dataclass(frozen=True)
class SignalIndex:
    """Where now sits among the region's recent MOER values, 0 (cleanest) to 100."""

    zone: str
    point_time: datetime
    percentile: Decimal
    source: str = NAME


class WattTimeProvider:
    name = NAME

    def __init__(
        self,
        *,
        username: str,
        password: str,
        base_url: str = DEFAULT_BASE_URL,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        signal_type: str = "co2_moer",
        zone_map: Mapping[str, str] | None = None,
    ) -> None:
        if not username or not password:
            raise ValueError("WattTime needs a username and a password")
        if signal_type not in KIND_BY_SIGNAL:
            raise ValueError(f"signal_type must be one of {sorted(KIND_BY_SIGNAL)}, got {signal_type!r}")
        self._client = JsonClient(NAME, base_url, timeout_s)
        self._basic = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        self._signal_type = signal_type
        self._zone_map = dict(zone_map or {})
        self._token: str | None = None

    def fetch(self, zone: str, start: datetime, end: datetime) -> list[HourlyIntensity]:
        first, points = floor_hour(start), []
        for chunk_start, chunk_end in chunk_range(first, end, MAX_RANGE):
            params = {**self._params(zone), "start": iso_z(chunk_start), "end": iso_z(chunk_end)}
            points += _points(self._get("/v3/historical", params), LBS_PER_MWH)
        return hourly_from_points(points, self._tag(zone), first, end)

    def forecast(self, zone: str) -> list[HourlyIntensity]:
        """The latest forecast, hourly; every hour flagged forecast and estimated."""
        points = _points(self._get("/v3/forecast", self._params(zone)), LBS_PER_MWH)
        if not points:
            return []
        first, last = min(p.at for p in points), max(p.at for p in points)
        estimated = [Point(p.at, p.gco2e_per_kwh, is_estimated=True) for p in points]
        return hourly_from_points(estimated, self._tag(zone, is_forecast=True), first, last + timedelta(hours=1))

    def signal_index(self, zone: str) -> SignalIndex:
        body = self._get("/v3/signal-index", {**self._params(zone), "signal_type": "co2_moer"})
        points = _points(body, "percentile")
        if len(points) != 1:
            raise BadResponse(NAME, f"signal-index: expected one point, got {len(points)}")
        return SignalIndex(zone, points[0].at, points[0].gco2e_per_kwh)

    def _params(self, zone: str) -> dict[str, str]:
        return {"region": self._zone_map.get(zone, zone), "signal_type": self._signal_type}

    def _tag(self, zone: str, *, is_forecast: bool = False) -> HourlyTag:
        return HourlyTag(zone, KIND_BY_SIGNAL[self._signal_type], NAME, POINTS_PER_HOUR, is_forecast, basis=DIRECT)

    def _get(self, path: str, params: dict[str, str]) -> Any:
        """A data request with the cached token; on 401 log in again once (tokens last 30 min)."""
        if self._token is None:
            self._login()
        try:
            return self._client.get_json(path, params=params, headers=self._bearer())
        except AuthError as exc:
            if exc.status != 401:
                raise  # 403: no access to this region or signal; a new token will not help
        self._login()
        return self._client.get_json(path, params=params, headers=self._bearer())

    def _bearer(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    def _login(self) -> None:
        self._token = None
        body = self._client.get_json("/login", headers={"Authorization": f"Basic {self._basic}"})
        token = body.get("token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise BadResponse(NAME, "login answered without a token")
        self._token = token


def _points(body: Any, expected_units: str) -> list[Point]:
    """Points in g/kWh (converted, not yet rounded), or percentiles for the signal index."""
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise BadResponse(NAME, "expected {'data': [...], 'meta': {...}}")
    meta = body.get("meta")
    units = meta.get("units") if isinstance(meta, dict) else None
    if units != expected_units:
        raise BadResponse(NAME, f"expected units {expected_units!r}, got {units!r}")
    convert = gco2_per_kwh_from_lbs_per_mwh if units == LBS_PER_MWH else Decimal
    return [_point(item, convert) for item in body["data"] if not _is_null(item)]


def _is_null(item: Any) -> bool:
    return isinstance(item, dict) and item.get("value", 0) is None


def _point(item: Any, convert: Callable[[Decimal], Decimal]) -> Point:
    try:
        at, value = parse_timestamp(item["point_time"]), item["value"]
    except (KeyError, TypeError, ValueError) as exc:
        raise BadResponse(NAME, f"bad point {item!r}: {exc}") from exc
    if not isinstance(value, int | Decimal) or isinstance(value, bool) or value < 0:
        raise BadResponse(NAME, f"bad value {value!r} at {item['point_time']}")
    return Point(at, convert(Decimal(value)))
