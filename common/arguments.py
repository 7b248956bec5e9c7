"""The argument types of the management commands: each refuses what the API refuses, as argparse does.

A type that raises ``argparse.ArgumentTypeError`` has the argument named in the refusal (a ``CommandError``
under ``call_command``, exit status 2 with usage on the command line). argparse turns only ``ValueError`` and
``TypeError`` into a refusal: anything else a conversion raises (``OverflowError`` from an id past SQLite's
integers, or from ``0001-01-01T00:00:00+14:00`` converted to UTC) would be a traceback, so each type bounds
its value first, with the bounds the API uses (``common.scope.ID_MAX``, ``common.periods``).
"""

from __future__ import annotations

import argparse
import math
from datetime import UTC, datetime

from common.periods import instant_problem
from common.scope import ID_MAX


def positive_id(text: str) -> int:
    """A row's id: ASCII digits, 1 to ``ID_MAX`` (a bigint), as a path or query of the API names one."""
    digits = text.isascii() and text.isdigit() and len(text) <= len(str(ID_MAX))  # int() of 5,000 digits is slow
    if not digits or not 1 <= int(text) <= ID_MAX:
        raise argparse.ArgumentTypeError(f"{text!r} is not an id (a whole number from 1 to {ID_MAX})")
    return int(text)


def aware_instant(text: str) -> datetime:
    """An ISO 8601 instant with its UTC offset ("Z" or "+02:00"), in UTC, inside the product's dated-input
    range (``common.periods.instant_problem``); a naive, malformed or out-of-range one is refused."""
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 datetime") from None
    if at.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no UTC offset; add Z or +HH:MM")
    if problem := instant_problem(at):  # checked before converting: out of range, the conversion overflows
        raise argparse.ArgumentTypeError(f"{text!r} {problem}")
    return at.astimezone(UTC)


def positive_number(text: str) -> float:
    """A finite number above 0 (seconds, hours): ``nan``, ``inf``, 0 and negatives are refused."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number above 0")
    return value
