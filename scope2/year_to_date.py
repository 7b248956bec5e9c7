"""Market-based Scope 2 of any period as a slice of its year's allocation (pure: no Django).

Annual matching allocates a year's instruments to the year's consumption. A quarter (or a month, or any period
inside a year) is that allocation's year-to-date figure through the period's end minus its year-to-date
figure through the period's start, so that the quarters of a year add up to the year exactly:

    period(start, end) = YTD(end) - YTD(start),   YTD(t) = allocation of [1 Jan, t) with the year's volumes

A year-to-date allocation takes each volume instrument's whole delivery inside the year (``volume_end``), not
only what it delivered by ``t``: a 20 MWh guarantee of origin for the year covers the first 20 MWh the site
consumes, whenever in the year. Hourly matching is additive by construction and gives the same figures either
way. A period spanning years is cut at each 1 January and its slices added; each slice takes its own year's
residual mix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from scope2.allocation import (
    ZERO,
    Instrument,
    InstrumentUse,
    Matching,
    ResidualMix,
    SiteAllocation,
    SiteHour,
    site_allocate,
)

ADDED = (
    "consumption_kwh", "location_co2e_g", "location_unknown_kwh", "residual_kwh", "residual_mix_kwh",
    "residual_mix_co2e_g", "location_fallback_kwh", "location_fallback_co2e_g", "unknown_kwh",
)  # fmt: skip
USE_ADDED = ("available_kwh", "matched_kwh", "co2e_g")


def year_start(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


def year_slices(start: datetime, end: datetime) -> list[tuple[int, datetime, datetime]]:
    """[start, end) cut at each 1 January (UTC): (year, slice start, slice end)."""
    slices, low = [], start
    while low < end:
        high = min(end, year_start(low.year + 1))
        slices.append((low.year, low, high))
        low = high
    return slices


def _combined(a: SiteAllocation, b: SiteAllocation, sign: int) -> SiteAllocation:
    """``a + sign * b``, field by field; the uses' criteria, matching and factor are ``a``'s."""
    uses = [
        replace(use, **{name: getattr(use, name) + sign * getattr(other, name) for name in USE_ADDED})
        for use, other in zip(a.uses, b.uses, strict=True)
    ]
    carbon_free = dict(a.hourly_carbon_free_kwh)
    for hour, kwh in b.hourly_carbon_free_kwh.items():
        carbon_free[hour] = carbon_free.get(hour, ZERO) + sign * kwh
    return replace(
        a,
        uses=uses,
        hourly_carbon_free_kwh=carbon_free,
        residual_mix_source=a.residual_mix_source or b.residual_mix_source,
        **{name: getattr(a, name) + sign * getattr(b, name) for name in ADDED},
    )


def _outside(use: InstrumentUse, low: datetime, high: datetime) -> InstrumentUse:
    """An instrument delivering nothing in the slice and moving nothing in it is shown ``outside``."""
    delivering = use.instrument.delivery_start < high and low < use.instrument.delivery_end
    if delivering or use.matched_kwh or use.available_kwh or use.matching == "not_used":
        return use
    return replace(use, matching="outside")


def period_allocate(
    *,
    hours: Sequence[SiteHour],
    instruments: Sequence[Instrument],
    site_zone: str,
    start: datetime,
    end: datetime,
    residual_of: Callable[[int], ResidualMix | None],
    matching: Matching,
) -> SiteAllocation:
    """The site's allocation of [start, end) as year-to-date slices; ``hours`` from 1 January of start's year."""
    total: SiteAllocation | None = None
    for year, low, high in year_slices(start, end):
        common = dict(hours=hours, instruments=instruments, site_zone=site_zone, residual=residual_of(year),
                      matching=matching, volume_end=year_start(year + 1))  # fmt: skip
        part = site_allocate(start=year_start(year), end=high, **common)  # type: ignore[arg-type]
        if low > year_start(year):
            part = _combined(part, site_allocate(start=year_start(year), end=low, **common), -1)  # type: ignore[arg-type]
        part.hourly_carbon_free_kwh = {h: kwh for h, kwh in part.hourly_carbon_free_kwh.items() if low <= h < high}
        part.uses = [_outside(use, low, high) for use in part.uses]
        total = part if total is None else _combined(total, part, 1)
    if total is None:
        return site_allocate(hours=[], instruments=instruments, site_zone=site_zone, start=start, end=start,
                             residual=None, matching=matching)  # fmt: skip
    return total
