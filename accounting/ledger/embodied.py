"""Amortizing embodied carbon over the hours an asset is held.

The rule (SCI's time-based allocation, extended to second-hand assets)::

    unallocated   = max(0, 1 - prior_use_h / total_life_h)
    own_life_h    = own_life_h if given else max(0, total_life_h - prior_use_h)
    rate_g_per_h  = embodied_kgco2e x 1000 x unallocated / own_life_h      (0 if own_life_h is 0)
    embodied_g    = rate_g_per_h x held_h [x utilization 0-1 under UTILIZATION]

``held_h``: the hours held before the end of the asset's life (its in-service
instant + ``own_life_h``): the hour a life ends in counts only its part before
the end, as the hour a node is commissioned or a card installed in counts only
its part after, so a life started at either is charged exactly ``own_life_h``.

- A new asset (``prior_use_h = 0``): ``embodied x 1000 x hours / total_life_h``,
  the DESIGN formula.
- A second-hand asset: the fraction of its embodied emissions matching the
  life already used belongs to earlier owners; what is left is spread over the
  hours *we* expect to use it. Bought at 2 of 4 years and kept 2 years, its
  hourly rate equals a new one's; kept 3 years, the rate falls by a third (the
  carbon benefit of reuse shows up); bought past its expected life, it carries
  none. Summed over every owner's use, the asset is counted once.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from accounting.ledger.inputs import AmortizationMethod, EmbodiedAsset
from accounting.ledger.units import G_PER_KG, ONE, PERCENT, ZERO


@dataclass(frozen=True)
class EmbodiedG:
    """Embodied emissions in gCO2e, low / central / high."""

    low: Decimal = ZERO
    central: Decimal = ZERO
    high: Decimal = ZERO

    def __add__(self, other: EmbodiedG) -> EmbodiedG:
        return EmbodiedG(self.low + other.low, self.central + other.central, self.high + other.high)

    def scaled(self, factor: Decimal) -> EmbodiedG:
        return EmbodiedG(self.low * factor, self.central * factor, self.high * factor)


def own_life_h(asset: EmbodiedAsset) -> Decimal:
    """Hours of service we expect from ``asset``: given, or the rest of its expected life."""
    if asset.own_life_h is not None:
        return asset.own_life_h
    return max(asset.total_life_h - asset.prior_use_h, ZERO)


def unallocated_fraction(asset: EmbodiedAsset) -> Decimal:
    """Share (0-1) of the embodied emissions not already allocated to earlier owners' use."""
    return max(ONE - asset.prior_use_h / asset.total_life_h, ZERO)


def embodied_rate_g_per_h(asset: EmbodiedAsset) -> EmbodiedG:
    """gCO2e per hour held, low / central / high, under the remaining-life rule above."""
    life_h = own_life_h(asset)
    if life_h == 0:
        return EmbodiedG()
    kg = asset.embodied_kgco2e
    factor = G_PER_KG * unallocated_fraction(asset) / life_h
    return EmbodiedG(kg.low * factor, kg.central * factor, kg.high * factor)


def utilization_weight(method: AmortizationMethod, mean_util_pct: Decimal | None) -> Decimal:
    """1 under TIME; the utilization fraction under UTILIZATION (1 when utilization is unknown)."""
    if method is AmortizationMethod.TIME or mean_util_pct is None:
        return ONE
    return mean_util_pct / PERCENT


def embodied_co2e_g(asset: EmbodiedAsset, held_h: Decimal, weight: Decimal = ONE) -> EmbodiedG:
    """Embodied gCO2e attributed to ``held_h`` hours of ``asset``, times ``weight`` (0-1)."""
    return embodied_rate_g_per_h(asset).scaled(held_h * weight)
