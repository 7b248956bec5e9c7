"""CSV uploads of inputs, checked row by row: all rows saved, or none and every refused row with its reason.

Rows are saved in order inside one transaction, each in its own savepoint, so
a row that overlaps an earlier row of the same file is refused like one that
overlaps a stored price; if any row is refused the whole file is rolled back.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from rest_framework import serializers

from accounting.inputs.services import InputChange
from common.api import InputInvalid
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
    except UnicodeDecodeError:
        raise UploadInvalid("the file is not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = required - set(reader.fieldnames or [])
    if missing:
        raise UploadInvalid(f"the header lacks the columns {', '.join(sorted(missing))}")
    for number, row in enumerate(reader, start=2):
        if number - 1 > UPLOAD_MAX_ROWS:
            raise UploadInvalid(f"files are limited to {UPLOAD_MAX_ROWS} rows")
        yield number, {name: (value or "").strip() for name, value in row.items() if name}


def _reason(errors: Any) -> str:
    if isinstance(errors, dict):
        return "; ".join(f"{name}: {' '.join(str(m) for m in messages)}" for name, messages in errors.items())
    return " ".join(str(message) for message in errors)


def rows_save(
    rows: Iterator[tuple[int, dict[str, str]]],
    *,
    serializer: type[serializers.Serializer],
    save: Callable[[dict[str, Any]], InputChange],
) -> UploadResult:
    """Validate each row with ``serializer`` (empty cells: absent) and ``save`` it; all or nothing."""
    result = UploadResult()
    with transaction.atomic():
        for number, row in rows:
            checked = serializer(data={name: value for name, value in row.items() if value != ""})
            if not checked.is_valid():
                result.refused.append({"line": number, "row": row, "reason": _reason(checked.errors)})
                continue
            try:
                with transaction.atomic():
                    change = save(dict(checked.validated_data))
            except (InputInvalid, PeriodLocked, LookupError) as error:
                result.refused.append({"line": number, "row": row, "reason": str(error).strip("'\"")})
                continue
            result.saved += 1
            result.ledger_hours_reopened += change.ledger_hours_reopened
        if result.refused:
            transaction.set_rollback(True)
            result.saved = result.ledger_hours_reopened = 0
    return result
