"""The energy mix of consumed electricity (ESRS E1-5 para. 37): fossil, nuclear and renewable kWh.

Pure: no Django. Energy an instrument covers counts as its technology's first (renewable, nuclear or
fossil; a supplier's ``mixed`` instrument says nothing of the mix); the rest takes the grid's yearly mix
of the site's zone, from the Electricity Maps yearly files shipped in ``grid/data`` (ODbL):

    renewable share = renewableEnergy / 100
    nuclear share   = (carbonFreeEnergy - renewableEnergy) / 100
    fossil share    = (100 - carbonFreeEnergy) / 100

Where the zone has no figure, the rest is ``unknown_kwh``, stated and never guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from importlib import resources

from scope2.residual import GRID_CFE_YEARS

ZERO = Decimal(0)
PERCENT = Decimal(100)


@dataclass(frozen=True)
class GridMix:
    """A zone's yearly generation mix as shares (0-1) and where it came from."""

    renewable_share: Decimal
    carbon_free_share: Decimal
    source: str

    @property
    def nuclear_share(self) -> Decimal:
        return max(self.carbon_free_share - self.renewable_share, ZERO)

    @property
    def fossil_share(self) -> Decimal:
        return max(1 - self.carbon_free_share, ZERO)


@dataclass(frozen=True)
class EnergyMix:
    """kWh consumed by source; ``*_instruments_kwh``: the part contractual instruments covered."""

    total_kwh: Decimal = ZERO
    fossil_kwh: Decimal = ZERO
    nuclear_kwh: Decimal = ZERO
    renewable_kwh: Decimal = ZERO
    unknown_kwh: Decimal = ZERO
    renewable_instruments_kwh: Decimal = ZERO
    nuclear_instruments_kwh: Decimal = ZERO
    fossil_instruments_kwh: Decimal = ZERO

    def __add__(self, other: EnergyMix) -> EnergyMix:
        return EnergyMix(*(getattr(self, name) + getattr(other, name) for name in self.__dataclass_fields__))

    def share(self, kwh: Decimal) -> Decimal | None:
        """``kwh`` over the total consumed (0-1); ``None`` when nothing was consumed."""
        return None if self.total_kwh == 0 else kwh / self.total_kwh


def energy_mix(
    *,
    consumption_kwh: Decimal,
    renewable_instruments_kwh: Decimal = ZERO,
    nuclear_instruments_kwh: Decimal = ZERO,
    fossil_instruments_kwh: Decimal = ZERO,
    grid: GridMix | None,
) -> EnergyMix:
    """One site's mix: instruments' technologies first, the grid's mix (or unknown) for the rest."""
    covered = renewable_instruments_kwh + nuclear_instruments_kwh + fossil_instruments_kwh
    rest = max(consumption_kwh - covered, ZERO)
    if grid is None:
        grid_renewable = grid_nuclear = grid_fossil = ZERO
        unknown = rest
    else:
        grid_renewable, grid_nuclear = rest * grid.renewable_share, rest * grid.nuclear_share
        grid_fossil, unknown = rest * grid.fossil_share, ZERO
    return EnergyMix(
        total_kwh=consumption_kwh,
        fossil_kwh=fossil_instruments_kwh + grid_fossil,
        nuclear_kwh=nuclear_instruments_kwh + grid_nuclear,
        renewable_kwh=renewable_instruments_kwh + grid_renewable,
        unknown_kwh=unknown,
        renewable_instruments_kwh=renewable_instruments_kwh,
        nuclear_instruments_kwh=nuclear_instruments_kwh,
        fossil_instruments_kwh=fossil_instruments_kwh,
    )


@cache
def _grid_mixes(year: int) -> dict[str, tuple[Decimal, Decimal]]:
    name = f"electricitymaps-yearly-{year}.json"
    rows = json.loads(resources.files("grid").joinpath("data", name).read_text("utf-8"))
    return {
        zone: (Decimal(str(row["renewableEnergy"]["value"])) / PERCENT,
               Decimal(str(row["carbonFreeEnergy"]["value"])) / PERCENT)
        for zone, row in rows.items()
        if (row.get("renewableEnergy") or {}).get("value") is not None
        and (row.get("carbonFreeEnergy") or {}).get("value") is not None
    }  # fmt: skip


def grid_mix(*, zone: str, year: int) -> GridMix | None:
    """The zone's yearly renewable and carbon-free shares; the nearest shipped year stands in (as the CFE score)."""
    nearest = min(GRID_CFE_YEARS, key=lambda shipped: abs(shipped - year))
    shares = _grid_mixes(nearest).get(zone.upper())
    if shares is None:
        return None
    return GridMix(shares[0], shares[1], f"electricitymaps-yearly-{nearest} renewableEnergy, carbonFreeEnergy")
