"""Exact constants, unit conversions and the one place money is rounded.

Everything in the ledger is a ``Decimal``: energy, money and carbon. Floats never
enter, so a line recomputed next year gives the same digits it gave today.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

J_PER_KWH = Decimal("3.6e6")
"""Joules in one kilowatt-hour (exact)."""

S_PER_H = Decimal(3600)
"""Seconds in one hour."""

H_PER_YEAR = Decimal(8760)
"""Hours in a (365-day) year, the unit of expected lifetimes in the catalog."""

G_PER_KG = Decimal(1000)
"""Grams in one kilogram."""

TOKENS_PER_MILLION = Decimal(1_000_000)
TOKENS_PER_THOUSAND = Decimal(1000)
PERCENT = Decimal(100)
ZERO = Decimal(0)
ONE = Decimal(1)

# ISO 4217 minor units that are not 2. Everything else displays with two decimals.
_CURRENCY_EXPONENTS: dict[str, int] = {
    **dict.fromkeys(("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG"), 0),
    **dict.fromkeys(("RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"), 0),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
}


def currency_exponent(currency: str) -> int:
    """Decimal places shown for ``currency`` (ISO 4217 code): 2 unless listed above."""
    return _CURRENCY_EXPONENTS.get(currency.upper(), 2)


def money_quantize(value: Decimal, currency: str) -> Decimal:
    """Round an amount of ``currency`` for display, half up, to its minor unit.

    This is the only function in the ledger that rounds money. Lines and totals
    keep full precision; callers quantize once, at the edge (template, CSV, API).
    """
    exponent = Decimal(1).scaleb(-currency_exponent(currency))
    return value.quantize(exponent, rounding=ROUND_HALF_UP)


def kwh_from_j(energy_j: Decimal) -> Decimal:
    """Energy in kWh from energy in joules."""
    return energy_j / J_PER_KWH


def j_from_kwh(energy_kwh: Decimal) -> Decimal:
    """Energy in joules from energy in kWh."""
    return energy_kwh * J_PER_KWH


def h_from_years(years: Decimal) -> Decimal:
    """Hours in ``years`` of 365 days."""
    return years * H_PER_YEAR
