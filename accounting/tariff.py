"""Electricity tariffs as pure data: flat or time-of-use, and prices that change over time.

Units: prices are ``Decimal`` in the site's currency per kWh; instants are aware
datetimes (the ledger's hours are UTC hours).

Rules, chosen once and used everywhere:

- **An hour is priced by the local time at its start.** A UTC hour is converted to
  the site's time zone (``zoneinfo``) and the window covering that local instant
  gives the price for the whole hour. Consequences, all intended:
  on the night clocks go back, the two UTC hours that both start at 01:00 local
  are both priced as 01:00; on the night clocks go forward, no UTC hour starts at
  02:00 local, so that window simply does not occur; in a zone with a half-hour
  offset (Asia/Kolkata) an hour that straddles a window boundary takes the price
  of the window it starts in.
- **Time-of-use windows** are ``[start, end)`` in local wall-clock time. A window
  whose end is not after its start crosses midnight (23:00-07:00); its part after
  midnight belongs to the day it started on, so a Friday 23:00-07:00 window covers
  Saturday 03:00. ``start == end`` is a 24-hour window.
- **Exactly one window must cover every hour.** None or several is a
  configuration error and raises ``TariffError``; the ledger never guesses.
- **Validity periods** are ``[valid_from, valid_to)``; ``valid_to=None`` is open.
  A price change is a new period starting at its date: hours before it keep the
  old price, so history is never rewritten. Overlapping periods raise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Generic, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

ALL_DAYS: frozenset[int] = frozenset(range(7))
"""Days as ``datetime.weekday()`` numbers: Monday 0 ... Sunday 6."""
WEEKDAYS: frozenset[int] = frozenset(range(5))
WEEKEND: frozenset[int] = frozenset({5, 6})


class TariffError(ValueError):
    """A tariff that cannot price an hour unambiguously (gap, overlap, bad zone)."""


def _require_aware(at: datetime, what: str) -> None:
    if at.tzinfo is None or at.utcoffset() is None:
        raise TariffError(f"{what} must be an aware datetime, got naive {at.isoformat()}")


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise TariffError(f"{name!r} is not an IANA time zone") from exc


@dataclass(frozen=True)
class TariffPrice:
    """The electricity price applying to one hour, and which tariff/window gave it.

    ``price_per_kwh`` is in the site's currency per kWh. ``price_id`` is a trace
    tag such as ``"tariff-12:peak"``, stored on ledger lines.
    """

    price_per_kwh: Decimal
    price_id: str
    includes_vat: bool = False  # gross: the ledger makes it net at the hour's VAT (``accounting.ledger.tax``)


@dataclass(frozen=True)
class FlatTariff:
    """One price per kWh at every hour."""

    price_per_kwh: Decimal
    tariff_id: str = "flat"
    includes_vat: bool = False


@dataclass(frozen=True)
class TouWindow:
    """A local wall-clock window ``[start, end)`` on the given days, at one price per kWh."""

    start: time
    end: time
    price_per_kwh: Decimal
    name: str
    days: frozenset[int] = ALL_DAYS

    def __post_init__(self) -> None:
        if self.start.tzinfo is not None or self.end.tzinfo is not None:
            raise TariffError("window times are local wall-clock times: give naive times")
        if not self.days or not self.days <= ALL_DAYS:
            raise TariffError(f"window {self.name!r}: days must be weekday numbers 0-6")

    @property
    def crosses_midnight(self) -> bool:
        return self.end <= self.start

    def covers(self, local: datetime) -> bool:
        """Whether the local wall-clock instant ``local`` falls in this window."""
        clock, day = local.time(), local.weekday()
        if not self.crosses_midnight:
            return day in self.days and self.start <= clock < self.end
        if clock >= self.start:
            return day in self.days
        # After midnight: the window belongs to the day it started on.
        return clock < self.end and (day - 1) % 7 in self.days


@dataclass(frozen=True)
class TimeOfUseTariff:
    """Prices by local time of day (and optionally day of week) in ``time_zone``."""

    time_zone: str
    windows: tuple[TouWindow, ...]
    tariff_id: str = "tou"
    includes_vat: bool = False

    def __post_init__(self) -> None:
        _zone(self.time_zone)
        if not self.windows:
            raise TariffError(f"time-of-use tariff {self.tariff_id!r} has no windows")


Tariff = FlatTariff | TimeOfUseTariff


def price_at(tariff: Tariff, hour_start: datetime) -> TariffPrice:
    """Price of the hour starting at ``hour_start`` (aware), by the local time at its start."""
    _require_aware(hour_start, "hour_start")
    if isinstance(tariff, FlatTariff):
        return TariffPrice(tariff.price_per_kwh, tariff.tariff_id, tariff.includes_vat)
    return _time_of_use_price(tariff, hour_start)


def _time_of_use_price(tariff: TimeOfUseTariff, hour_start: datetime) -> TariffPrice:
    local = hour_start.astimezone(_zone(tariff.time_zone))
    matches = [window for window in tariff.windows if window.covers(local)]
    if len(matches) != 1:
        names = [window.name for window in matches] or "no window"
        raise TariffError(f"tariff {tariff.tariff_id!r} at {local.isoformat()} local: {names} (need exactly one)")
    window = matches[0]
    return TariffPrice(window.price_per_kwh, f"{tariff.tariff_id}:{window.name}", tariff.includes_vat)


@dataclass(frozen=True)
class Validity(Generic[T_co]):
    """``value`` in force over ``[valid_from, valid_to)``; ``valid_to=None`` means still in force."""

    valid_from: datetime
    valid_to: datetime | None
    value: T_co

    def __post_init__(self) -> None:
        _require_aware(self.valid_from, "valid_from")
        if self.valid_to is not None:
            _require_aware(self.valid_to, "valid_to")
            if self.valid_to <= self.valid_from:
                raise TariffError(f"validity ends {self.valid_to} before it starts {self.valid_from}")

    def contains(self, at: datetime) -> bool:
        return self.valid_from <= at and (self.valid_to is None or at < self.valid_to)


def in_force(periods: Iterable[Validity[T]], at: datetime) -> T | None:
    """The value in force at instant ``at``, ``None`` if no period covers it.

    Raises ``TariffError`` if two periods cover ``at``: which one applies is a
    decision for whoever entered them, not for the ledger.
    """
    _require_aware(at, "at")
    matches = [period for period in periods if period.contains(at)]
    if len(matches) > 1:
        raise TariffError(f"{len(matches)} overlapping validity periods at {at.isoformat()}")
    return matches[0].value if matches else None


def tariff_price_at(periods: Iterable[Validity[Tariff]], hour_start: datetime) -> TariffPrice | None:
    """Price of the hour starting at ``hour_start`` under the tariff in force then; ``None`` if none is."""
    tariff = in_force(periods, hour_start)
    return None if tariff is None else price_at(tariff, hour_start)


def local_midnight(day: date, time_zone: str) -> datetime:
    """The aware instant at which ``day`` begins in ``time_zone``: where a dated price change starts."""
    return datetime.combine(day, time.min, tzinfo=_zone(time_zone))


# Any Monday, to check that time-of-use windows cover each hour of a week exactly once.
_REFERENCE_MONDAY = datetime(2024, 1, 1, tzinfo=UTC)


def tariff_from_fields(
    *,
    flat_price_per_kwh: Decimal | None,
    windows: list[dict[str, Any]],
    time_zone: str,
    tariff_id: str,
    includes_vat: bool = False,
) -> Tariff:
    """The tariff that stored fields describe; raises ``ValueError`` naming the problem.

    ``windows`` is the JSON a site tariff stores (see ``accounting.models.SiteTariff``);
    a time-of-use tariff must price every hour of a week exactly once.
    """
    if flat_price_per_kwh is not None:
        return FlatTariff(Decimal(flat_price_per_kwh), tariff_id, includes_vat)
    tariff = TimeOfUseTariff(time_zone, tuple(_window(raw) for raw in windows), tariff_id, includes_vat)
    for hour in range(7 * 24):
        price_at(tariff, _REFERENCE_MONDAY + timedelta(hours=hour))  # raises on a gap or an overlap
    return tariff


def _window(raw: dict[str, Any]) -> TouWindow:
    days = frozenset(raw.get("days", range(7)))
    price = Decimal(str(raw["price_per_kwh"]))
    if price < 0:
        raise ValueError(f"window {raw.get('name')!r}: the price must not be negative")
    return TouWindow(time.fromisoformat(raw["start"]), time.fromisoformat(raw["end"]), price, raw["name"], days)
