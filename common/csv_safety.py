"""CSV a spreadsheet will not run: the one rule for every exported cell.

A text cell starting with ``=``, ``+``, ``-`` or ``@`` (or a tab or carriage
return, which some spreadsheets skip before looking) would be taken for a
formula; it gets a leading apostrophe, which spreadsheets show as text.
Numbers are left alone: a negative Decimal (or its text, ``-1.5``) is a number, not a formula.
Every report CSV goes through ``csv_lines``, which applies it to each cell.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _number(text: str) -> bool:
    try:
        return Decimal(text).is_finite()
    except InvalidOperation:
        return False


def csv_safe(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _number(value):
        return "'" + value
    return value


def csv_escaped(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for row in rows:
        yield {name: csv_safe(value) for name, value in row.items()}
