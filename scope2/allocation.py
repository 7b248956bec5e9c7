"""Market-based Scope 2 of one site over one period: instruments first, then the residual mix (pure: no Django).

GHG Protocol Scope 2 Guidance, ch. 6: the market-based method takes, for each
kWh, the emission factor of the contractual instrument that covers it; what no
instrument covers takes the residual mix of its market; where no residual mix
is known the location-based factor stands in, labelled ``location_fallback``.

Order, each step covering only what the previous ones left:

1. instruments with an hourly profile, matched hour by hour (``hourly``): what
   one hour's generation delivers beyond that hour's consumption is lost;
2. instruments with a volume, matched over their delivery period inside the
   report period (``annual``): the volume counts in proportion to the part of
   the delivery period inside the report period, and covers every hour of that
   window by the same fraction;
3. instruments covering a share of the site's consumption (``share``), e.g. a
   supplier-specific rate on the whole supply, on what is left.

Direct contracts come before certificates, certificates before supplier rates
(the guidance's hierarchy, table 6.3); among equals, the order entered. With
``matching="annual"`` profiled instruments are matched annually too: the
figure reported beside the hourly one. Energy in kWh, carbon in gCO2e.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Literal

from scope2.claims import Claim, share_check
from scope2.quality import CARBON_FREE, CriterionResult, Evidence, criteria_check, effective_factor_g_per_kwh

KWH_PER_MWH = Decimal(1000)
ZERO = Decimal(0)
HOUR = timedelta(hours=1)
KIND_ORDER = {"ppa": 0, "go": 1, "rec": 1, "supplier_rate": 2}

Matching = Literal["auto", "annual"]


@dataclass(frozen=True)
class SiteHour:
    """A site's consumption in one hour, with the location-based carbon of the kWh that have a grid factor."""

    hour_start: datetime
    facility_kwh: Decimal
    location_co2e_g: Decimal = ZERO
    location_kwh: Decimal = ZERO  # the part of facility_kwh with a grid factor


@dataclass(frozen=True)
class Instrument:
    id: int
    kind: str
    name: str
    volume_kwh: Decimal | None
    share: Decimal | None
    delivery_start: datetime
    delivery_end: datetime
    vintage_year: int
    generation_zone: str
    technology: str
    stated_factor: Decimal | None
    evidence: Evidence
    profile_kwh: Mapping[datetime, Decimal] | None = None
    biogenic_g_per_kwh: Decimal | None = None  # biomass: CO2 of combustion, a memo outside the scopes


@dataclass(frozen=True)
class ResidualMix:
    gco2e_per_kwh: Decimal
    source: str
    year: int | None = None  # the published year used (the latest not after the report year)


@dataclass
class InstrumentUse:
    instrument: Instrument
    criteria: tuple[CriterionResult, ...]
    matching: str  # hourly, annual, share; or not_used (a criterion failed), outside (no delivery in the period)
    factor_g_per_kwh: Decimal | None
    available_kwh: Decimal = ZERO
    matched_kwh: Decimal = ZERO
    co2e_g: Decimal = ZERO

    @property
    def biogenic_co2_g(self) -> Decimal | None:
        """Memo, outside the scopes: biomass CO2 of the matched kWh (``None``: not biomass or not stated)."""
        factor = self.instrument.biogenic_g_per_kwh
        return None if factor is None else self.matched_kwh * factor

    @property
    def unused_kwh(self) -> Decimal:
        """Delivered in the period but matched to no consumption: never carried to another site or period."""
        return self.available_kwh - self.matched_kwh

    @property
    def carbon_free(self) -> bool:
        return self.instrument.technology in CARBON_FREE and self.factor_g_per_kwh == 0


@dataclass
class SiteAllocation:
    consumption_kwh: Decimal
    location_co2e_g: Decimal
    location_unknown_kwh: Decimal
    uses: list[InstrumentUse]
    residual_kwh: Decimal = ZERO  # covered by no instrument
    residual_mix_kwh: Decimal = ZERO
    residual_mix_co2e_g: Decimal = ZERO
    residual_mix_source: str | None = None
    location_fallback_kwh: Decimal = ZERO
    location_fallback_co2e_g: Decimal = ZERO
    unknown_kwh: Decimal = ZERO  # neither residual mix nor a grid factor: not in market_co2e_g
    hourly_carbon_free_kwh: dict[datetime, Decimal] = field(default_factory=dict)

    @property
    def instruments_kwh(self) -> Decimal:
        return sum((use.matched_kwh for use in self.uses), ZERO)

    @property
    def market_co2e_g(self) -> Decimal:
        instruments_g = sum((use.co2e_g for use in self.uses), ZERO)
        return instruments_g + self.residual_mix_co2e_g + self.location_fallback_co2e_g


def _window(instrument: Instrument, start: datetime, end: datetime) -> tuple[datetime, datetime] | None:
    low, high = max(start, instrument.delivery_start), min(end, instrument.delivery_end)
    return (low, high) if low < high else None


def _use(
    instrument: Instrument, *, site_zone: str, start: datetime, end: datetime, matching: Matching
) -> InstrumentUse:
    window = _window(instrument, start, end)
    criteria = criteria_check(
        kind=instrument.kind,
        site_zone=site_zone,
        generation_zone=instrument.generation_zone,
        vintage_year=instrument.vintage_year,
        reporting_year=(window[0] if window else start).year,
        technology=instrument.technology,
        stated_factor=instrument.stated_factor,
        evidence=instrument.evidence,
    )
    factor = effective_factor_g_per_kwh(technology=instrument.technology, stated=instrument.stated_factor)
    if window is None:
        how = "outside"
    elif not all(result.met for result in criteria):
        how = "not_used"
    elif instrument.share is not None:
        how = "share"
    else:
        how = "hourly" if instrument.profile_kwh is not None and matching == "auto" else "annual"
    return InstrumentUse(instrument, criteria, how, factor)


def _volume_in(instrument: Instrument, low: datetime, high: datetime) -> Decimal:
    """kWh an instrument delivers in [low, high): its profile's hours, or its volume pro rata temporis."""
    if instrument.profile_kwh is not None:
        return sum((kwh for hour, kwh in instrument.profile_kwh.items() if low <= hour < high), ZERO)
    delivery_s = Decimal((instrument.delivery_end - instrument.delivery_start).total_seconds())
    return (instrument.volume_kwh or ZERO) * Decimal((high - low).total_seconds()) / delivery_s


def _volume_high(instrument: Instrument, high: datetime, end: datetime, volume_end: datetime | None) -> datetime:
    if volume_end is None or high < end:  # the delivery ends inside the period: nothing more to bring
        return high
    return min(volume_end, instrument.delivery_end)


def _match_hourly(
    use: InstrumentUse, window: tuple[datetime, datetime], left: dict[datetime, Decimal], carbon_free: dict
) -> None:
    """Each hour's generation covers that hour's consumption; an hour without consumption wastes it."""
    low, high = window
    for hour, generated_kwh in (use.instrument.profile_kwh or {}).items():
        if not low <= hour < high:
            continue
        matched = min(generated_kwh, left.get(hour, ZERO))
        use.available_kwh += generated_kwh
        use.matched_kwh += matched
        if matched:
            left[hour] -= matched
            if use.carbon_free:
                carbon_free[hour] += matched


def _match_pooled(use: InstrumentUse, available_kwh: Decimal, window_hours: list[datetime], left: dict) -> None:
    """Cover up to ``available_kwh`` of what is left in the window, every hour by the same fraction."""
    left_kwh = sum((left[hour] for hour in window_hours), ZERO)
    matched = min(available_kwh, left_kwh)
    use.available_kwh += available_kwh
    use.matched_kwh += matched
    if left_kwh:
        kept = 1 - matched / left_kwh
        for hour in window_hours:
            left[hour] *= kept


def _shares_check(uses: Sequence[InstrumentUse]) -> None:
    shares = [use.instrument for use in uses if use.matching == "share"]
    for index, instrument in enumerate(shares):
        claim = Claim(
            instrument.id, instrument.name, instrument.delivery_start, instrument.delivery_end, instrument.share or ZERO
        )
        others = [
            Claim(other.id, other.name, other.delivery_start, other.delivery_end, other.share or ZERO)
            for other in shares[:index]
        ]
        share_check(site="this site", claim=claim, others=others)


def site_allocate(
    *,
    hours: Sequence[SiteHour],
    instruments: Sequence[Instrument],
    site_zone: str,
    start: datetime,
    end: datetime,
    residual: ResidualMix | None,
    matching: Matching = "auto",
    volume_end: datetime | None = None,
) -> SiteAllocation:
    """Allocate ``instruments`` (all claimed for this site) to its consumption ``hours`` in [start, end).

    ``volume_end`` (after ``end``): a volume instrument brings what it delivers up to then, not only up to
    ``end``: a year-to-date allocation takes the year's volumes (``scope2.year_to_date``)."""
    ordered = sorted(instruments, key=lambda item: (KIND_ORDER.get(item.kind, 3), item.id))
    uses = [_use(item, site_zone=site_zone, start=start, end=end, matching=matching) for item in ordered]
    _shares_check(uses)
    consumed = {hour.hour_start: hour.facility_kwh for hour in hours if start <= hour.hour_start < end}
    left = dict(consumed)
    carbon_free = dict.fromkeys(consumed, ZERO)
    for use in (use for use in uses if use.matching == "hourly"):
        _match_hourly(use, _window(use.instrument, start, end) or (start, start), left, carbon_free)
    for use in (use for use in uses if use.matching in ("annual", "share")):
        low, high = _window(use.instrument, start, end) or (start, start)
        window_hours = [hour for hour in left if low <= hour < high]
        if use.matching == "annual":
            available = _volume_in(use.instrument, low, _volume_high(use.instrument, high, end, volume_end))
        else:
            available = (use.instrument.share or ZERO) * sum((consumed[hour] for hour in window_hours), ZERO)
        _match_pooled(use, available, window_hours, left)
    for use in uses:
        use.co2e_g = use.matched_kwh * (use.factor_g_per_kwh or ZERO)
    allocation = _totals(hours, start, end, uses)
    allocation.hourly_carbon_free_kwh = carbon_free
    _residual(allocation, hours, left, residual)
    return allocation


def _totals(hours: Sequence[SiteHour], start: datetime, end: datetime, uses: list[InstrumentUse]) -> SiteAllocation:
    inside = [hour for hour in hours if start <= hour.hour_start < end]
    consumption = sum((hour.facility_kwh for hour in inside), ZERO)
    with_factor = sum((hour.location_kwh for hour in inside), ZERO)
    location_g = sum((hour.location_co2e_g for hour in inside), ZERO)
    return SiteAllocation(consumption, location_g, consumption - with_factor, uses)


def _residual(
    allocation: SiteAllocation, hours: Sequence[SiteHour], left: dict[datetime, Decimal], residual: ResidualMix | None
) -> None:
    # Exact, from the totals; the hourly remainders (pooled matching divides) serve the fallback only.
    allocation.residual_kwh = allocation.consumption_kwh - allocation.instruments_kwh
    if residual is not None:
        allocation.residual_mix_kwh = allocation.residual_kwh
        allocation.residual_mix_co2e_g = allocation.residual_kwh * residual.gco2e_per_kwh
        allocation.residual_mix_source = residual.source
        return
    for hour in hours:
        remaining = left.get(hour.hour_start, ZERO)
        if not remaining:
            continue
        if not hour.location_kwh:
            allocation.unknown_kwh += remaining
            continue
        # The hour's grid factor, over the part of its energy that has one.
        known = remaining * hour.location_kwh / hour.facility_kwh
        allocation.location_fallback_kwh += known
        allocation.location_fallback_co2e_g += known * hour.location_co2e_g / hour.location_kwh
        allocation.unknown_kwh += remaining - known
