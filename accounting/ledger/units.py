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


def per_1m(quantity: Decimal, tokens: int | Decimal) -> Decimal | None:
    """``quantity`` per million ``tokens``: quantity / tokens x 1e6 (the study's and price lists' convention);
    ``None`` without tokens (a figure over nothing is unknown, not zero). Every per-1M-token figure is this."""
    return None if tokens <= 0 else quantity / tokens * TOKENS_PER_MILLION


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


UNIT_FIGURE_DIGITS = 4
"""Significant digits shown of a unit figure (per 1M tokens, per GPU-hour, per kWh, J per token, g per 1k tokens)."""


def significant(value: Decimal, digits: int = UNIT_FIGURE_DIGITS) -> Decimal:
    """``value`` half up to ``digits`` significant digits, in plain notation: the one rounding of unit figures.

    A unit figure is a quotient (cost per 1M tokens, gCO2e per 1k tokens, J per
    token ...): rounding it to the currency's minor unit would show 0.0982 USD
    as 0.10, so it keeps a fixed number of significant digits instead,
    trailing zeros included (``0.09820``, ``4.640``, ``12350``). Zero stays 0.
    """
    if not value.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    if value == 0:
        return Decimal(0)
    shown = _to_digits(value, value.adjusted() - digits + 1)
    if shown.adjusted() > value.adjusted():  # 9.9996 -> 10.000 has one digit too many
        shown = _to_digits(shown, shown.adjusted() - digits + 1)
    return shown


def _to_digits(value: Decimal, exponent: int) -> Decimal:
    rounded = value.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_UP)
    # 12345 to 4 digits is 1.235E+4 as quantized; shown as 12350, never in exponent notation.
    return rounded.quantize(Decimal(1)) if exponent > 0 else rounded


def kwh_from_j(energy_j: Decimal) -> Decimal:
    """Energy in kWh from energy in joules."""
    return energy_j / J_PER_KWH


def j_from_kwh(energy_kwh: Decimal) -> Decimal:
    """Energy in joules from energy in kWh."""
    return energy_kwh * J_PER_KWH


def h_from_years(years: Decimal) -> Decimal:
    """Hours in ``years`` of 365 days."""
    return years * H_PER_YEAR
