"""Uploaded CSV read record by record, with the line each starts on; a record the reader refuses names where.

Python's ``csv`` reader raises ``csv.Error`` for a cell longer than
``csv.field_size_limit()`` (131,072 characters) naming neither the line nor the
cell; uploads turn ``CsvUnreadable`` into a 400 that names both. The limit is
process-wide, so it is left as it is: no upload needs a cell a hundredth as long.
Pure: no framework (the grid's CSV parser uses it).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence

_FIELD_LIMIT = "field larger than field limit"


class CsvUnreadable(ValueError):
    """A record the csv reader cannot read: its first ``line``, the 1-based ``column`` if known, and why."""

    def __init__(self, *, line: int, column: int | None, reason: str) -> None:
        super().__init__(f"line {line}{'' if column is None else f', column {column}'}: {reason}")
        self.line, self.column, self.reason = line, column, reason

    def named(self, header: Sequence[str]) -> str:
        """The message with the column's name from ``header`` (the file's first record), where it has one."""
        if self.column is None or not 0 < self.column <= len(header):
            return str(self)
        return f"line {self.line}, column {self.column} ({header[self.column - 1].strip()}): {self.reason}"


class _Lines:
    """The lines a reader takes, keeping those of the record being read."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = iter(lines)
        self.record: list[str] = []

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        self.record.append(line)
        return line


def csv_records(lines: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """``(first line, cells)`` of each record of ``lines`` (blank lines are records without cells)."""
    source = _Lines(lines)
    reader = csv.reader(source)
    while True:
        source.record.clear()
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise _unreadable(error, reader.line_num - len(source.record) + 1, source.record) from None
        yield reader.line_num - len(source.record) + 1, cells


def _unreadable(error: csv.Error, line: int, record: list[str]) -> CsvUnreadable:
    if _FIELD_LIMIT not in str(error):
        return CsvUnreadable(line=line, column=None, reason=str(error))
    limit = csv.field_size_limit()
    return CsvUnreadable(line=line, column=_long_cell("".join(record), limit), reason=f"longer than {limit} characters")


def _long_cell(record: str, limit: int) -> int | None:
    """The 1-based column of the first cell of ``record`` past ``limit`` characters, reading quotes as csv does."""
    column, length, quoted = 1, 0, False
    for char in record:
        if char == '"':
            quoted = not quoted  # a doubled quote inside quotes toggles twice: one character, counted as none
        elif char == "," and not quoted:
            column, length = column + 1, 0
        else:
            length += 1
            if length > limit:
                return column
    return None
