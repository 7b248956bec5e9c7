"""The hand-worked year shared by the allocation and API tests.

A site in DE draws 10 kWh of facility energy every hour of 2025 (8,760 h,
87,600 kWh), at a location-based 300 gCO2e/kWh. A solar PPA delivers, every
day: 6 kWh at 06:00 and 19:00, 10 kWh in 07-09 and 16-18 (6 hours), 20 kWh in
10-15 (6 hours): 2 x 6 + 6 x 10 + 6 x 20 = 192 kWh/day, 70,080 kWh a year.

- annual matching: 70,080 / 87,600 = 80 % covered;
- hourly matching: per day 2 x 6 + 12 x 10 = 132 kWh of the 240 consumed
  (the 10 kWh above consumption in each of the six midday hours is lost):
  132 / 240 = 55 %.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

YEAR_START = datetime(2025, 1, 1, tzinfo=UTC)
YEAR_END = datetime(2026, 1, 1, tzinfo=UTC)
HOURS = [YEAR_START + timedelta(hours=index) for index in range(8760)]
LOAD_KWH = Decimal(10)
LOCATION_G_PER_KWH = Decimal(300)
SOLAR_KWH_BY_HOUR_OF_DAY = {6: 6, 19: 6} | dict.fromkeys((7, 8, 9, 16, 17, 18), 10) | dict.fromkeys(range(10, 16), 20)
PPA_KWH = Decimal(192 * 365)  # 70,080 kWh


def solar_profile_kwh() -> dict[datetime, Decimal]:
    return {
        hour: Decimal(SOLAR_KWH_BY_HOUR_OF_DAY[hour.hour]) for hour in HOURS if hour.hour in SOLAR_KWH_BY_HOUR_OF_DAY
    }
