"""Simulated hourly grid intensity: a zone's shipped annual average shaped by a plausible day.

Pure arithmetic (no ORM). The daily shape is in the site's local time: solar
generation pulls intensity down around midday (deeply in California, less in
Germany and Poland), the evening peak pushes it up, and a slow day-to-day
swing stands in for the weather (wind). Each day's shape averages 1, so the
simulated hours keep the annual average they start from. The values are
stored with the source ``simulated:annual-shaped``, so no report mistakes them
for measurements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from grid import AVERAGE, HourlyIntensity, annual_intensity, quantize_intensity
from grid.annual import normalize_zone

HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class DailyShape:
    """Relative intensity over a local day: 1 - solar dip + evening peak, times a weather swing."""

    solar_dip: float  # fraction removed at solar noon
    evening_peak: float  # fraction added at the evening peak
    weather_swing: float  # amplitude of the day-to-day swing
    weather_period_days: float = 4.7

    def raw(self, local_hour: float) -> float:
        solar = self.solar_dip * math.exp(-(((local_hour - 12.75) / 2.6) ** 2))
        evening = self.evening_peak * math.exp(-(((local_hour - 19.5) / 1.8) ** 2))
        return 1.0 - solar + evening

    def factor(self, local_hour: float, day_number: int) -> float:
        mean = sum(self.raw(hour + 0.5) for hour in range(24)) / 24
        weather = 1.0 + self.weather_swing * math.sin(2 * math.pi * day_number / self.weather_period_days)
        return self.raw(local_hour) / mean * weather


# Zones the demo uses; any other zone gets a mild generic day.
SHAPES: dict[str, DailyShape] = {
    "US-CAL-CISO": DailyShape(solar_dip=0.45, evening_peak=0.25, weather_swing=0.05),  # the "duck curve"
    "SE-SE3": DailyShape(solar_dip=0.03, evening_peak=0.10, weather_swing=0.15),  # hydro and nuclear: flat
    "DE": DailyShape(solar_dip=0.30, evening_peak=0.15, weather_swing=0.20),  # solar by day, wind by week
    "PL": DailyShape(solar_dip=0.12, evening_peak=0.08, weather_swing=0.08),  # coal: little moves it
}
GENERIC_SHAPE = DailyShape(solar_dip=0.10, evening_peak=0.08, weather_swing=0.05)


def shaped_hours(
    *, zone: str, time_zone: str, start: datetime, end: datetime, now: datetime, source: str
) -> list[HourlyIntensity]:
    """One value per UTC hour of ``[start, end)`` (both on hours); hours not over at ``now`` are forecasts.

    Empty when the shipped data knows nothing of the zone.
    """
    key, local_zone, shape = normalize_zone(zone), ZoneInfo(time_zone), SHAPES.get(normalize_zone(zone), GENERIC_SHAPE)
    values, annual_by_year = [], {}
    hour = start.astimezone(UTC)
    while hour < end:
        if hour.year not in annual_by_year:
            annual_by_year[hour.year] = annual_intensity(key, hour.year)
        annual = annual_by_year[hour.year]
        if annual is not None:
            local = hour.astimezone(local_zone)
            factor = shape.factor(local.hour + 0.5, local.toordinal())
            gco2e = quantize_intensity(annual.gco2e_per_kwh * Decimal(str(round(factor, 6))))
            values.append(
                HourlyIntensity(key, hour, gco2e, AVERAGE, source, is_estimated=True, is_forecast=hour + HOUR > now)
            )
        hour += HOUR
    return values
