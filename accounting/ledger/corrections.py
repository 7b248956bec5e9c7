"""Corrections of locked ledger lines: what a recompute would change, booked apart, never rewritten in place.

A locked node-hour keeps its stored line. When a recompute gives another line
(late telemetry, a revised grid value, an input or formula change), the
difference is booked as a correction in the first open period. Everything here
is pure: mappings of column name to value in, deltas out.

- ``booked(line, deltas)``: what the ledger already holds for the hour: its stored
  line plus every correction (and reversal) booked for it so far.
- ``correction_deltas(booked, would_be)``: the further difference to book, or
  ``None`` when there is none (so recomputing again books nothing: idempotent).
- ``correction_cause(previous, would_be)``: why the line would change.
- ``booking_hour(now_hour, locks)``: the first hour at or after ``now_hour`` outside
  every lock, where a correction is dated.
- ``reversed_deltas(deltas)``: the deltas of a reversal (an unlocked hour rewritten).

An unknown figure (``None``: no tariff, no grid intensity) counts as 0 in the
difference: a locked hour that had no intensity and now has one books the whole
figure as its correction.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

# The figures a correction restates: money (in the line's currency), energy (kWh), carbon (g) and tokens.
# The hardware cost is restated with its split, as a line carries it: hardware = rent + depreciation + opex.
MONEY_FIELDS = (
    "hardware_cost", "rent_cost", "depreciation_cost", "opex_cost", "electricity_cost",
    "energy_tax_cost", "vat_amount", "vat_cost", "cost",
)  # fmt: skip
QUANTITY_FIELDS = (
    "it_kwh",
    "facility_kwh",
    "location_co2e_g",
    "market_co2e_g",
    "embodied_co2e_g_low",
    "embodied_co2e_g_central",
    "embodied_co2e_g_high",
)
TOKEN_FIELDS = ("prompt_tokens", "generation_tokens")
CORRECTED_FIELDS = MONEY_FIELDS + QUANTITY_FIELDS + TOKEN_FIELDS

# A difference below this (a millionth of a currency unit, kWh or gram) is the stored column's representation
# (12 decimal places; SQLite keeps about 15 significant digits), not a restatement: it books nothing.
RESOLUTION = Decimal("0.000001")

# What telemetry alone changes on a line, and what a grid value alone changes; anything else is an input or
# a formula (a price, a tariff, a PUE, a catalog figure, a release's arithmetic).
TELEMETRY_FIELDS = (
    "observed_s",
    "bridged_s",
    "gpu_kwh",
    "energy_counter_j",
    "energy_integrated_j",
    "prompt_tokens",
    "generation_tokens",
    "cached_prompt_tokens",
    "util_observed_s",
)
INTENSITY_FIELDS = ("location_gco2e_per_kwh", "location_source", "location_is_fallback")

Deltas = dict[str, Decimal | int]
Window = tuple[datetime, datetime]
_HOUR = timedelta(hours=1)


class Cause(enum.StrEnum):
    LATE_TELEMETRY = "late_telemetry"
    REVISED_INTENSITY = "revised_intensity"
    INPUTS_OR_FORMULA = "inputs_or_formula"
    REVERSAL = "reversal"  # the hour was unlocked and its line rewritten: the correction is undone


def _number(value: Any) -> Decimal:
    return Decimal(0) if value is None else Decimal(str(value))


def booked(line: Mapping[str, Any] | None, deltas: Iterable[Mapping[str, Any]]) -> Deltas:
    """The hour's figures as booked: its stored line (none: zero) plus every delta booked for it."""
    totals: Deltas = {name: _zero(name) for name in CORRECTED_FIELDS}
    for row in [line or {}, *deltas]:
        for name in CORRECTED_FIELDS:
            totals[name] += _typed(name, row.get(name))
    return totals


def _zero(name: str) -> Decimal | int:
    return 0 if name in TOKEN_FIELDS else Decimal(0)


def _typed(name: str, value: Any) -> Decimal | int:
    return int(value or 0) if name in TOKEN_FIELDS else _number(value)


def correction_deltas(*, booked: Mapping[str, Decimal | int], would_be: Mapping[str, Any]) -> Deltas | None:
    """The difference ``would_be - booked`` per corrected field; ``None`` when every one is below ``RESOLUTION``."""
    deltas: Deltas = {name: _typed(name, would_be.get(name)) - booked[name] for name in CORRECTED_FIELDS}
    if all(abs(Decimal(value)) < RESOLUTION for value in deltas.values()):
        return None
    return deltas


def reversed_deltas(deltas: Mapping[str, Decimal | int]) -> Deltas:
    return {name: -deltas[name] for name in CORRECTED_FIELDS}


def _differs(a: Any, b: Any) -> bool:
    """Whether two values of a column differ: figures (a JSON snapshot holds them as text) past ``RESOLUTION``."""
    if a is None or b is None or isinstance(a, bool) or isinstance(b, bool):
        return a != b
    try:
        return abs(Decimal(str(a)) - Decimal(str(b))) >= RESOLUTION
    except ArithmeticError:  # not figures: a source's name
        return a != b


def correction_cause(*, previous: Mapping[str, Any], would_be: Mapping[str, Any]) -> Cause:
    """Why ``would_be`` differs from ``previous`` (the line as last computed): telemetry first, then the grid
    value, else an input or formula. A recompute that changes two at once is booked under the first.

    An hour that had no line (``previous`` empty): late telemetry if it now has any, else an input (a held
    hour's rent or depreciation accrued after the lock)."""
    if not previous:
        measured = any(_differs(would_be.get(name) or 0, 0) for name in TELEMETRY_FIELDS)
        return Cause.LATE_TELEMETRY if measured else Cause.INPUTS_OR_FORMULA
    for fields, cause in ((TELEMETRY_FIELDS, Cause.LATE_TELEMETRY), (INTENSITY_FIELDS, Cause.REVISED_INTENSITY)):
        if any(_differs(previous.get(name), would_be.get(name)) for name in fields):
            return cause
    return Cause.INPUTS_OR_FORMULA


def is_locked(hour: datetime, locks: Iterable[Window]) -> bool:
    return any(start <= hour < end for start, end in locks)


def booking_hour(*, now_hour: datetime, locks: Iterable[Window]) -> datetime:
    """The first hour at or after ``now_hour`` that no lock holds: the start of the first open period."""
    ordered = sorted(locks)
    hour = now_hour
    moved = True
    while moved:
        moved = False
        for start, end in ordered:
            if start <= hour < end:
                hour, moved = _ceil_hour(end), True
    return hour


def _ceil_hour(instant: datetime) -> datetime:
    floored = instant.replace(minute=0, second=0, microsecond=0)
    return floored if floored == instant else floored + _HOUR
