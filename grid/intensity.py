"""The value every grid provider returns: one zone-hour of carbon intensity.

Intensity is gCO2e/kWh as a ``Decimal`` quantized to 0.001 g (one milligram per
kWh, far below any source's precision) so values are exact, compare exactly in
tests and fit a ``DecimalField(decimal_places=3)`` without further rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Literal, Protocol, runtime_checkable

Kind = Literal["average", "marginal"]
AVERAGE: Kind = "average"
MARGINAL: Kind = "marginal"

# What an intensity counts (GHG Protocol Scope 2 Guidance 2015): ``direct`` is the combustion at the
# generator only (what Scope 2 takes); ``lifecycle`` adds upstream fuel supply, plant construction and
# end of life (what SCI and per-token figures take; lifecycle - direct is Scope 3 Category 3).
Basis = Literal["lifecycle", "direct"]
LIFECYCLE: Basis = "lifecycle"
DIRECT: Basis = "direct"
BASES: tuple[Basis, ...] = (LIFECYCLE, DIRECT)

ONE_HOUR = timedelta(hours=1)
INTENSITY_QUANTUM = Decimal("0.001")
# Exact by definition of the international avoirdupois pound (1959): 1 lb = 453.59237 g,
# so 1 lb/MWh = 453.59237 g / 1000 kWh.
G_PER_KWH_PER_LB_PER_MWH = Decimal("0.45359237")


def quantize_intensity(gco2e_per_kwh: Decimal) -> Decimal:
    """The one place intensities are rounded (to 0.001 gCO2e/kWh, half-even)."""
    if not gco2e_per_kwh.is_finite():
        raise ValueError(f"intensity must be finite, got {gco2e_per_kwh}")
    return gco2e_per_kwh.quantize(INTENSITY_QUANTUM, rounding=ROUND_HALF_EVEN)


def gco2_per_kwh_from_lbs_per_mwh(lbs_per_mwh: Decimal) -> Decimal:
    """Convert WattTime's lbs CO2/MWh to gCO2/kWh, exactly (rounding is left to the hourly mean)."""
    return lbs_per_mwh * G_PER_KWH_PER_LB_PER_MWH


def mean_intensity(values: Sequence[Decimal]) -> Decimal:
    if not values:
        raise ValueError("mean of no values")
    return quantize_intensity(sum(values, Decimal(0)) / len(values))


def is_utc_hour(moment: datetime) -> bool:
    """Aware, and the start of an hour in UTC (08:00+02:00 is; 08:00+05:30 is not)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        return False
    utc = moment.astimezone(UTC)
    return (utc.minute, utc.second, utc.microsecond) == (0, 0, 0)


@dataclass(frozen=True)
class HourlyIntensity:
    """Carbon intensity of one zone for the hour starting at ``hour_start`` (UTC).

    ``zone`` is the caller's zone key (the site's grid zone), not the provider's
    region name. ``source`` says where the number came from ("electricitymaps",
    "watttime", "carbonintensity.org.uk", "csv:<name>", "electricitymaps-yearly-2024",
    "ember-2023"). ``is_estimated`` is set when the provider flags the value as
    modelled rather than measured, when only a forecast was available, or when the
    hour was only partly covered by the provider's sub-hourly points.
    ``is_forecast`` is set for values of hours that had not happened when fetched.

    ``basis`` says what ``gco2e_per_kwh`` counts (``lifecycle`` or ``direct``);
    ``direct_gco2e_per_kwh`` is the same hour's direct figure where the source gives
    one (equal to ``gco2e_per_kwh`` when the basis is direct, filled in if left out).
    """

    zone: str
    hour_start: datetime
    gco2e_per_kwh: Decimal
    kind: Kind
    source: str
    is_estimated: bool = False
    is_forecast: bool = False
    basis: Basis = LIFECYCLE
    direct_gco2e_per_kwh: Decimal | None = None

    def __post_init__(self) -> None:
        if not is_utc_hour(self.hour_start):
            raise ValueError(f"hour_start must be an aware datetime at a UTC hour start, got {self.hour_start!r}")
        if self.hour_start.tzinfo is not UTC:
            object.__setattr__(self, "hour_start", self.hour_start.astimezone(UTC))
        if not self.gco2e_per_kwh.is_finite() or self.gco2e_per_kwh < 0:
            raise ValueError(f"gco2e_per_kwh must be finite and >= 0, got {self.gco2e_per_kwh}")
        if self.kind not in (AVERAGE, MARGINAL):
            raise ValueError(f"kind must be 'average' or 'marginal', got {self.kind!r}")
        self._basis_check()

    def _basis_check(self) -> None:
        if self.basis not in BASES:
            raise ValueError(f"basis must be 'lifecycle' or 'direct', got {self.basis!r}")
        direct = self.direct_gco2e_per_kwh
        if direct is not None and (not direct.is_finite() or direct < 0):
            raise ValueError(f"direct_gco2e_per_kwh must be finite and >= 0, got {direct}")
        if self.basis == DIRECT and direct is None:
            object.__setattr__(self, "direct_gco2e_per_kwh", self.gco2e_per_kwh)
        elif self.basis == DIRECT and direct != self.gco2e_per_kwh:
            raise ValueError(f"a direct-basis value {self.gco2e_per_kwh} cannot have another direct value {direct}")


@runtime_checkable
class IntensityProvider(Protocol):
    """A source of hourly intensities (live API, uploaded CSV, shipped annual data).

    ``fetch`` returns the hours whose start lies in ``[floor_hour(start), end)``,
    sorted by hour. ``start`` and ``end`` must be aware. An hour the provider has
    no value for is absent from the result (the caller falls back to the annual
    average); failures raise ``grid.errors.ProviderError`` subclasses.
    """

    name: str

    def fetch(self, zone: str, start: datetime, end: datetime) -> list[HourlyIntensity]: ...
