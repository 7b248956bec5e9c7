"""Hourly intensities a user uploads as CSV.

Format (header required, columns in any order, names case-insensitive)::

    zone,hour_start,gco2e_per_kwh,kind
    DE,2024-05-01T13:00:00Z,312.5,average
    DE,2024-05-01T16:00:00+02:00,298,average

- ``zone``: a zone key, stored upper-cased ("de" → "DE").
- ``hour_start``: ISO-8601 with an offset or Z, and it must be the start of a UTC
  hour (a non-aligned time is rejected, not truncated: truncating would silently
  move a value to an hour the user did not mean). "+05:30" times are therefore
  never hour starts.
- ``gco2e_per_kwh``: a decimal number, 0 to 2000 inclusive.
- ``kind`` (optional column, blank allowed): "average" (default) or "marginal".
- ``basis`` (optional column, blank allowed): what ``gco2e_per_kwh`` counts, "lifecycle"
  (default: with upstream fuel supply and plant construction) or "direct" (combustion only).
- ``direct_gco2e_per_kwh`` (optional column, blank allowed): the same hour's direct figure,
  0 to the lifecycle figure; on a "direct" row it may only repeat ``gco2e_per_kwh``.
  Scope 2 takes the direct figure; lifecycle minus direct is Scope 3 Category 3.

Every problem is collected with its line number (the header is line 1) and the
whole file is rejected with a ``CsvError`` listing up to 20 of them; a file is
accepted entirely or not at all. The same (zone, hour_start, kind) twice is an error.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from datetime import datetime
from decimal import Decimal, InvalidOperation

from common.csv_reading import CsvUnreadable, csv_records
from grid.hours import parse_timestamp
from grid.intensity import (
    AVERAGE,
    BASES,
    DIRECT,
    LIFECYCLE,
    MARGINAL,
    Basis,
    HourlyIntensity,
    Kind,
    is_utc_hour,
    quantize_intensity,
)

REQUIRED_COLUMNS = ("zone", "hour_start", "gco2e_per_kwh")
OPTIONAL_COLUMNS = ("kind", "basis", "direct_gco2e_per_kwh")
HEADER_HINT = "zone,hour_start,gco2e_per_kwh[,kind,basis,direct_gco2e_per_kwh]"
MAX_GCO2E_PER_KWH = Decimal(2000)
MAX_PROBLEMS_SHOWN = 20


class CsvError(ValueError):
    """The upload was rejected; ``problems`` holds every problem found, "line N: ..." each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:MAX_PROBLEMS_SHOWN]
        more = len(problems) - len(shown)
        lines = shown + ([f"... and {more} more problem(s)"] if more else [])
        super().__init__(f"{len(problems)} problem(s) in the CSV:\n" + "\n".join(lines))


class _Row:
    def __init__(self, line: int, problems: list[str]) -> None:
        self.line, self.problems = line, problems

    def problem(self, message: str) -> None:
        self.problems.append(f"line {self.line}: {message}")


def parse_intensity_csv(source: str | bytes | Iterable[str], *, source_name: str) -> list[HourlyIntensity]:
    """Parse an uploaded CSV into hours tagged ``csv:<source_name>``, sorted by zone and hour."""
    if not source_name.strip():
        raise ValueError("source_name must not be blank")
    records = csv_records(_lines(source))
    header = _first_record(records)
    columns = _header(header)
    problems: list[str] = []
    rows: dict[tuple[str, datetime, Kind], tuple[int, HourlyIntensity]] = {}
    try:
        for line, fields in records:
            row = _Row(line, problems)
            value = _parse_row(fields, columns, row, f"csv:{source_name.strip()}")
            if value is not None:
                _add(rows, (value.zone, value.hour_start, value.kind), row, value)
    except CsvUnreadable as unreadable:  # a cell past the reader's limit: the rest of the file cannot be read
        problems.append(unreadable.named(header or []))
    if problems:
        raise CsvError(problems)
    return sorted((value for _, value in rows.values()), key=lambda v: (v.zone, v.hour_start, v.kind))


def _lines(source: str | bytes | Iterable[str]) -> Iterable[str]:
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CsvError([f"the file is not UTF-8 text: {exc}"]) from exc
    return io.StringIO(source, newline="") if isinstance(source, str) else source


def _first_record(records: Iterator[tuple[int, list[str]]]) -> list[str] | None:
    try:
        return next(records, (1, None))[1]
    except CsvUnreadable as unreadable:
        raise CsvError([str(unreadable)]) from None


def _header(header: list[str] | None) -> dict[str, int]:
    if header is None:
        raise CsvError([f"line 1: the file is empty; expected a header {HEADER_HINT}"])
    names = [name.strip().lstrip("\ufeff").lower() for name in header]
    missing = [name for name in REQUIRED_COLUMNS if name not in names]
    unknown = [name for name in names if name not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    repeated = sorted({name for name in names if names.count(name) > 1})
    problems = [f"line 1: missing column {name!r}" for name in missing]
    problems += [f"line 1: unknown column {name!r}" for name in unknown]
    problems += [f"line 1: column {name!r} appears twice" for name in repeated]
    if problems:
        raise CsvError(problems)
    return {name: index for index, name in enumerate(names)}


def _parse_row(fields: list[str], columns: dict[str, int], row: _Row, source: str) -> HourlyIntensity | None:
    if not any(field.strip() for field in fields):
        return None  # blank line
    if len(fields) != len(columns):
        row.problem(f"expected {len(columns)} fields, got {len(fields)}")
        return None
    text = {name: fields[index].strip() for name, index in columns.items()}
    zone, hour = _zone(text["zone"], row), _hour(text["hour_start"], row)
    value, kind = _value(text["gco2e_per_kwh"], row), _kind(text.get("kind", ""), row)
    basis, problems = _basis(text.get("basis", ""), row), len(row.problems)
    direct = _direct(text.get("direct_gco2e_per_kwh", ""), value, basis, row)
    if zone is None or hour is None or value is None or kind is None or basis is None:
        return None
    if len(row.problems) > problems:  # the direct figure was refused
        return None
    return HourlyIntensity(zone=zone, hour_start=hour, gco2e_per_kwh=value, kind=kind, source=source,
                           basis=basis, direct_gco2e_per_kwh=direct)  # fmt: skip


def _zone(text: str, row: _Row) -> str | None:
    if not text:
        row.problem("zone is empty")
        return None
    return text.upper()


def _hour(text: str, row: _Row) -> datetime | None:
    try:
        moment = parse_timestamp(text)
    except ValueError:
        row.problem(f"hour_start {text!r} is not an ISO-8601 time with an offset or Z (e.g. 2024-05-01T13:00:00Z)")
        return None
    if not is_utc_hour(moment):
        row.problem(f"hour_start {text!r} is not the start of a UTC hour")
        return None
    return moment


def _value(text: str, row: _Row) -> Decimal | None:
    try:
        value = Decimal(text)
    except InvalidOperation:
        row.problem(f"gco2e_per_kwh {text!r} is not a number")
        return None
    if not value.is_finite() or not 0 <= value <= MAX_GCO2E_PER_KWH:
        row.problem(f"gco2e_per_kwh {text!r} is outside 0..{MAX_GCO2E_PER_KWH}")
        return None
    return quantize_intensity(value)


def _basis(text: str, row: _Row) -> Basis | None:
    basis = text.lower() or LIFECYCLE
    for known in BASES:
        if basis == known:
            return known
    row.problem(f"basis {text!r} must be 'lifecycle' or 'direct'")
    return None


def _direct(text: str, value: Decimal | None, basis: Basis | None, row: _Row) -> Decimal | None:
    """The row's direct figure; None when not given, or refused (then a problem is recorded)."""
    if not text:
        return None
    try:
        direct = Decimal(text)
    except InvalidOperation:
        row.problem(f"direct_gco2e_per_kwh {text!r} is not a number")
        return None
    if not direct.is_finite() or direct < 0 or (value is not None and direct > value):
        row.problem(f"direct_gco2e_per_kwh {text!r} is outside 0..gco2e_per_kwh (direct is part of lifecycle)")
        return None
    if basis == DIRECT and value is not None and quantize_intensity(direct) != value:
        row.problem(f"direct_gco2e_per_kwh {text!r} differs from gco2e_per_kwh on a 'direct' row")
        return None
    return quantize_intensity(direct)


def _kind(text: str, row: _Row) -> Kind | None:
    kind = text.lower() or AVERAGE
    if kind == AVERAGE:
        return AVERAGE
    if kind == MARGINAL:
        return MARGINAL
    row.problem(f"kind {text!r} must be 'average' or 'marginal'")
    return None


def _add(
    rows: dict[tuple[str, datetime, Kind], tuple[int, HourlyIntensity]],
    key: tuple[str, datetime, Kind],
    row: _Row,
    value: HourlyIntensity,
) -> None:
    if key in rows:
        row.problem(f"duplicate of line {rows[key][0]} ({key[0]} {key[1].isoformat()} {key[2]})")
    else:
        rows[key] = (row.line, value)
