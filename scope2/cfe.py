"""24/7 carbon-free-energy score of a site over a period (pure: no Django).

Hourly, as in Google's 24/7 CFE methodology: in each hour, the carbon-free
energy is what carbon-free instruments matched hour by hour (their hourly
profile) plus the grid's carbon-free share of the rest. The score is the sum
over hours divided by the consumption. Instruments without an hourly profile
cannot prove when their energy was made and count only in the annual figure
reported beside it: (carbon-free instrument kWh matched annually + the grid's
share of the rest) / consumption.

The grid's carbon-free share is the zone's yearly figure (Electricity Maps
yearly data, shipped) for every hour: Wattledger stores no hourly generation
mix, and says so with the score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

ZERO = Decimal(0)


@dataclass(frozen=True)
class CfeScore:
    consumption_kwh: Decimal
    contracted_cfe_kwh: Decimal
    grid_cfe_kwh: Decimal | None  # None: the zone's carbon-free share is unknown

    @property
    def score(self) -> Decimal | None:
        """Carbon-free share of consumption (0-1); without a grid share, a lower bound from contracts alone."""
        if not self.consumption_kwh:
            return None
        return (self.contracted_cfe_kwh + (self.grid_cfe_kwh or ZERO)) / self.consumption_kwh


def cfe_hourly(
    *,
    consumption_kwh: Mapping[datetime, Decimal],
    contracted_kwh: Mapping[datetime, Decimal],
    grid_share: Decimal | None,
) -> CfeScore:
    """``contracted_kwh``: per hour, carbon-free instrument energy matched in that very hour (≤ consumption)."""
    total = sum(consumption_kwh.values(), ZERO)
    contracted = sum((contracted_kwh.get(hour, ZERO) for hour in consumption_kwh), ZERO)
    grid = None if grid_share is None else (total - contracted) * grid_share
    return CfeScore(total, contracted, grid)


def cfe_annual(*, consumption_kwh: Decimal, contracted_kwh: Decimal, grid_share: Decimal | None) -> CfeScore:
    """``contracted_kwh``: carbon-free instrument energy matched over the period (annual matching)."""
    grid = None if grid_share is None else (consumption_kwh - contracted_kwh) * grid_share
    return CfeScore(consumption_kwh, contracted_kwh, grid)
