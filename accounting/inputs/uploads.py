"""CSV uploads of inputs, checked row by row: all rows saved, or none and every refused row with its reason.

Rows are saved in order inside one transaction, so a row that overlaps an
earlier row of the same file is refused like one that overlaps a stored price;
if any row is refused the whole file is rolled back. Each row's ``save`` is
atomic itself (the services are): a refused row leaves nothing, and no second
savepoint per row is spent on it.

The POST only stores the file (``csv_check`` reads its header and counts its
rows); a worker checks and saves the rows (``accounting.inputs.upload_runs``).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from rest_framework import serializers

from accounting.inputs.services import InputChange
from common.api import InputInvalid
from common.csv_reading import CsvUnreadable, csv_records
from governance.locks import PeriodLocked

UPLOAD_MAX_BYTES = 2 * 1024 * 1024
UPLOAD_MAX_ROWS = 5000


class UploadInvalid(ValueError):
    """The file as a whole cannot be read (encoding, size, header); the message says why."""


@dataclass
class UploadResult:
    saved: int = 0
    ledger_hours_reopened: int = 0
    refused: list[dict[str, Any]] = field(default_factory=list)


def csv_rows(content: bytes, *, required: set[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) of a UTF-8 CSV file with a header naming at least ``required``."""
    if len(content) > UPLOAD_MAX_BYTES:
        raise UploadInvalid(f"files are limited to {UPLOAD_MAX_BYTES} bytes")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        where = f"byte {error.object[error.start]:#04x} at offset {error.start}"
        raise UploadInvalid(f"the file is not UTF-8 text: {where} (save the CSV as UTF-8)") from None
    records = csv_records(io.StringIO(text))
    try:
        header = next(records, (1, []))[1]
    except CsvUnreadable as unreadable:
        raise UploadInvalid(str(unreadable)) from None
    missing = required - set(header)
    if missing:
        raise UploadInvalid(f"the header lacks the columns {', '.join(sorted(missing))}")
    yield from _rows(records, header)


def _rows(records: Iterator[tuple[int, list[str]]], header: list[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Each record with cells as ``{column: cell}`` (a short record's missing cells empty), as DictReader reads."""
    count = 0
    try:
        for line, cells in records:
            if not cells:
                continue  # a blank line
            count += 1
            if count > UPLOAD_MAX_ROWS:
                raise UploadInvalid(f"files are limited to {UPLOAD_MAX_ROWS} rows")
            padded = cells + [""] * (len(header) - len(cells))
            yield line, {name: cell.strip() for name, cell in zip(header, padded, strict=False) if name}
    except CsvUnreadable as unreadable:
        raise UploadInvalid(unreadable.named(header)) from None


def csv_check(content: bytes, *, required: set[str]) -> int:
    """The file's data rows, counted; ``UploadInvalid`` for a file no row of which can be read (size, encoding,
    header, row limit): what the POST answers at once, before the file is stored."""
    return sum(1 for _ in csv_rows(content, required=required))


def _reason(errors: Any) -> str:
    if isinstance(errors, dict):
        return "; ".join(f"{name}: {' '.join(str(m) for m in messages)}" for name, messages in errors.items())
    return " ".join(str(message) for message in errors)


def rows_save(
    rows: Iterator[tuple[int, dict[str, str]]],
    *,
    serializer: type[serializers.Serializer],
    save: Callable[[dict[str, Any]], InputChange],
    progress: Callable[[int], None] = lambda done: None,
) -> UploadResult:
    """Validate each row with ``serializer`` (empty cells: absent) and ``save`` it (atomic); all or nothing.

    ``progress`` is told the number of rows done after each row.
    """
    result = UploadResult()
    with transaction.atomic():
        for done, (number, row) in enumerate(rows, 1):
            _row_save(number, row, serializer=serializer, save=save, result=result)
            progress(done)
        if result.refused:
            transaction.set_rollback(True)
            result.saved = result.ledger_hours_reopened = 0
    return result


def _row_save(
    number: int, row: dict[str, str], *, serializer: type[serializers.Serializer], save: Any, result: UploadResult
) -> None:
    checked = serializer(data={name: value for name, value in row.items() if value != ""})
    if not checked.is_valid():
        result.refused.append({"line": number, "row": row, "reason": _reason(checked.errors)})
        return
    try:
        change = save(dict(checked.validated_data))
    except (InputInvalid, PeriodLocked, LookupError) as error:
        result.refused.append({"line": number, "row": row, "reason": str(error).strip("'\"")})
        return
    result.saved += 1
    result.ledger_hours_reopened += change.ledger_hours_reopened
