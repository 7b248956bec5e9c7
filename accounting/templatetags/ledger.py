"""Display filters: money rounded once here (``money_quantize``), unit figures to 4 significant
digits (``significant``, as in the API and CSV), units shown with every number."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import template

from accounting.ledger import money_quantize
from accounting.ledger.units import significant
from common.labels import short_name as _short_name

register = template.Library()


@register.filter
def money(value: Any, currency: str = "USD") -> str:
    if value is None or value == "":
        return "—"
    amount = money_quantize(Decimal(value), currency or "USD")
    return f"{amount:,} {currency}"


@register.filter
def price(value: Any, currency: str = "USD") -> str:
    """A price as entered (per hour, per kWh, a purchase price): in the currency's minor unit ("3.00 USD",
    not "3.000000 USD"), or with every significant digit it has where that is finer (0.0042 USD per kWh
    is never "0.00 USD"): a price is shown as it is charged, never rounded."""
    if value is None or value == "":
        return "—"
    amount = Decimal(value)
    rounded = money_quantize(amount, currency or "USD")
    shown = rounded if rounded == amount else amount.normalize()
    return f"{shown:,f} {currency}"


@register.filter
def normalize(value: Any) -> str:
    """A decimal without its trailing zeros (4.00 years as "4", 2.50 as "2.5")."""
    return "—" if value is None or value == "" else f"{Decimal(value).normalize():f}"


@register.filter
def unit(value: Any, currency: str = "") -> str:
    """A unit figure (per 1M tokens, J per token, g per 1k tokens ...) to 4 significant digits.

    With a currency, the figure is money per unit: 0.0982 USD shows as "0.09820 USD", never "0.10 USD".
    """
    if value is None or value == "":
        return "—"
    shown = f"{significant(Decimal(str(value))):,f}"
    return f"{shown} {currency}" if currency else shown


@register.filter
def number(value: Any, places: int = 1) -> str:
    """A number with thousands separators; "—" for anything that is not one (None, or the empty
    string a template gives for a missing key, such as a node with no ledger line in the period)."""
    try:
        return f"{float(value):,.{int(places)}f}"
    except (TypeError, ValueError):
        return "—"


@register.filter
def ms_from_s(value: Any, places: int = 0) -> str:
    """Seconds shown in milliseconds, as every latency on the pages is (TTFT 0.0973 s as "97")."""
    try:
        return number(float(value) * 1000, places)
    except (TypeError, ValueError):
        return "—"


@register.filter
def kg_from_g(value: Any, places: int = 1) -> str:
    return number(None if value is None else Decimal(value) / 1000, places)


@register.filter
def t_from_kg(value: Any, places: int = 1) -> str:
    """kg shown in tonnes: one unit per tile (a tile in tCO2e keeps its range in tCO2e too)."""
    return number(None if value is None else Decimal(value) / 1000, places)


@register.filter
def percent(value: Any, places: int = 0) -> str:
    """A share 0-1 shown as a percentage."""
    return "—" if value is None else f"{float(value) * 100:.{int(places)}f} %"


@register.filter
def duration(seconds: Any) -> str:
    if seconds is None:
        return "—"
    seconds = float(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


@register.filter
def short_name(value: Any) -> str:
    """A long model name as a cell shows it (``Llama-3.1-8B-Instruct``); the full one goes in ``title``."""
    return "" if value is None else _short_name(str(value))
