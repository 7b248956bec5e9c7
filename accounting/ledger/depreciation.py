"""Depreciation of an owned asset by the book (IAS 16), as pure arithmetic over ``Decimal``.

The depreciable amount is cost less residual (salvage) value; it is spread from
the in-service date (available for use) over the useful life, and stops at the
end of that life or at disposal (derecognition), whichever comes first.

Two straight-line methods, both linear in a *life clock* that counts units of
life elapsed since the in-service instant:

- ``MONTHLY`` (the default): the clock counts life-months, anchored at the
  in-service instant (month ``k`` runs from in-service + ``k`` calendar months
  to in-service + ``k + 1``, days clamped to the month's end). Each life-month
  carries ``depreciable / life_months`` whatever its length, spread evenly over
  its hours: an hour carries the month's amount / the month's hours, so
  February and January cost the same per month. A fractional life ends part
  way through its last month, at the same hourly rate as that month's.
- ``HOURLY``: the clock counts hours; the life is ``life_years x 8,760`` hours
  and each hour carries ``depreciable / life_h``.

A change of useful life (``LifeChange``: the new *total* life from in-service)
is a change in estimate (IAS 8), applied prospectively: from its date, the
depreciable amount left (book value then, less salvage) is spread over the
life left. A change dated at or before in-service replaces the first estimate.

At disposal the book value left above salvage is expensed in full, in the span
that holds the disposal instant (``disposal_loss``): the salvage value is taken
as the disposal proceeds, so that cost less salvage is expensed in every case.
After disposal the asset is off the books (book value 0).

Money in the asset's currency, unrounded (rounded once, when shown).
"""

from __future__ import annotations

import calendar
import enum
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from accounting.ledger.inputs import LedgerInputError
from accounting.ledger.units import H_PER_YEAR, ZERO

MONTHS_PER_YEAR = Decimal(12)
_MICROSECOND = timedelta(microseconds=1)
_MICROSECONDS_PER_HOUR = Decimal(3_600_000_000)


class DepreciationMethod(enum.StrEnum):
    MONTHLY = "month"  # straight line by month: equal monthly amounts (the default)
    HOURLY = "hour"  # straight line by hour: equal hourly amounts over 8,760-hour years


@dataclass(frozen=True)
class LifeChange:
    """From ``effective_at`` on, the asset's total useful life (from in-service) is ``life_years``."""

    effective_at: datetime
    life_years: Decimal


@dataclass(frozen=True)
class OwnedAsset:
    """An owned asset as its fixed-asset register holds it.

    ``cost``: acquisition cost; ``salvage``: residual value (0 to ``cost``);
    ``in_service_at``: when depreciation begins (aware); ``life_years``: useful
    life; ``disposed_at``: when it left the books (``None``: still held).
    """

    cost: Decimal
    salvage: Decimal
    in_service_at: datetime
    life_years: Decimal
    method: DepreciationMethod = DepreciationMethod.MONTHLY
    life_changes: tuple[LifeChange, ...] = ()
    disposed_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.cost < 0:
            raise LedgerInputError(f"cost must not be negative, got {self.cost}")
        if not ZERO <= self.salvage <= self.cost:
            raise LedgerInputError(f"salvage must be within 0 and the cost {self.cost}, got {self.salvage}")
        if any(life <= 0 for life in (self.life_years, *(c.life_years for c in self.life_changes))):
            raise LedgerInputError("a useful life must be positive")
        instants = (self.in_service_at, self.disposed_at, *(c.effective_at for c in self.life_changes))
        if any(at is not None and at.utcoffset() is None for at in instants):
            raise LedgerInputError("in-service, disposal and life-change instants must be aware datetimes")

    @property
    def depreciable(self) -> Decimal:
        """Cost less salvage: what the asset's life expenses in all."""
        return self.cost - self.salvage


def _add_months(start: datetime, months: int) -> datetime:
    """``start`` plus whole calendar ``months``, the day clamped to the month's last."""
    index = start.year * 12 + start.month - 1 + months
    year, month = divmod(index, 12)
    day = min(start.day, calendar.monthrange(year, month + 1)[1])
    return start.replace(year=year, month=month + 1, day=day)


def _ratio(part: timedelta, whole: timedelta) -> Decimal:
    return Decimal(part // _MICROSECOND) / Decimal(whole // _MICROSECOND)


def _life_units(asset: OwnedAsset, years: Decimal) -> Decimal:
    return years * (MONTHS_PER_YEAR if asset.method is DepreciationMethod.MONTHLY else H_PER_YEAR)


def life_clock(asset: OwnedAsset, at: datetime) -> Decimal:
    """Units of life (months or hours, by method) elapsed from in-service to ``at``; negative before."""
    start = asset.in_service_at
    if asset.method is DepreciationMethod.HOURLY:
        return Decimal((at - start) // _MICROSECOND) / _MICROSECONDS_PER_HOUR
    months = (at.year - start.year) * 12 + at.month - start.month
    while _add_months(start, months) > at:
        months -= 1
    while _add_months(start, months + 1) <= at:
        months += 1
    begin, end = _add_months(start, months), _add_months(start, months + 1)
    return months + _ratio(at - begin, end - begin)


def _instant(asset: OwnedAsset, units: Decimal) -> datetime:
    """The instant the life clock reads ``units`` (the inverse of ``life_clock``), to the microsecond."""
    start = asset.in_service_at
    if asset.method is DepreciationMethod.HOURLY:
        return start + timedelta(microseconds=int(units * _MICROSECONDS_PER_HOUR))
    whole = int(units)
    begin, end = _add_months(start, whole), _add_months(start, whole + 1)
    return begin + timedelta(microseconds=int((units - whole) * Decimal((end - begin) // _MICROSECOND)))


Segment = tuple[Decimal, Decimal, Decimal]
"""``(from_units, to_units, amount per unit)`` of the life clock."""


def schedule(asset: OwnedAsset) -> tuple[Segment, ...]:
    """The straight-line segments of the asset's life, one per estimate of its useful life."""
    life = _life_units(asset, asset.life_years)
    rate, start, charged = asset.depreciable / life, ZERO, ZERO
    segments: list[Segment] = []
    for change in sorted(asset.life_changes, key=lambda c: c.effective_at):
        at, new_life = life_clock(asset, change.effective_at), _life_units(asset, change.life_years)
        if at <= 0:  # before the asset was in service: the first estimate replaced
            life, rate = new_life, asset.depreciable / new_life
            continue
        if new_life <= at:
            raise LedgerInputError(f"the life change of {change.effective_at.isoformat()} leaves no life after it")
        end = min(at, life)
        if end > start:
            segments.append((start, end, rate))
            charged += rate * (end - start)
        start, life = at, new_life
        rate = (asset.depreciable - charged) / (life - at)
    if life > start:
        segments.append((start, life, rate))
    return tuple(segments)


def end_of_life(asset: OwnedAsset) -> datetime:
    """When the asset is fully depreciated (to its salvage value), by its latest estimate of life."""
    segments = schedule(asset)
    return _instant(asset, segments[-1][1]) if segments else asset.in_service_at


def accumulated_depreciation(asset: OwnedAsset, at: datetime) -> Decimal:
    """Depreciation charged from in-service up to ``at`` (or disposal, if earlier), the disposal loss apart."""
    if asset.disposed_at is not None:
        at = min(at, asset.disposed_at)
    clock = life_clock(asset, at)
    return sum((rate * (min(clock, end) - start) for start, end, rate in schedule(asset) if clock > start), ZERO)


def disposal_loss(asset: OwnedAsset) -> Decimal:
    """Book value above salvage left at disposal, expensed then; 0 for an asset still held."""
    if asset.disposed_at is None:
        return ZERO
    return asset.depreciable - accumulated_depreciation(asset, asset.disposed_at)


def book_value(asset: OwnedAsset, at: datetime) -> Decimal:
    """Net book value at ``at``: cost less accumulated depreciation; 0 once disposed of."""
    if asset.disposed_at is not None and at >= asset.disposed_at:
        return ZERO
    return asset.cost - accumulated_depreciation(asset, at)


def depreciation_cost(asset: OwnedAsset, start: datetime, end: datetime) -> Decimal:
    """What the asset expenses over ``[start, end)``: depreciation, plus the disposal loss when disposed within."""
    charged = accumulated_depreciation(asset, end) - accumulated_depreciation(asset, start)
    disposed = asset.disposed_at is not None and start < asset.disposed_at <= end
    return charged + (disposal_loss(asset) if disposed else ZERO)
