"""CSV for the reports, on ``Accept: text/csv`` or ``?format=csv``.

Reports are streamed (``csv_response``): rows are written as the database
returns them, so a year of hourly rows never sits in memory. Column names carry
units (``facility_kwh``, ``location_kgco2e``); money columns have none, the
``currency`` column beside them says it. Empty cells are unknown values, not zeros.
A text cell a spreadsheet would run as a formula (a fleet named ``=HYPERLINK(...)``) is
written with a leading apostrophe (``common.csv_safety``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from common.csv_safety import csv_safe

CSV_MEDIA_TYPE = "text/csv"


class _Line:
    """A file-like object whose ``write`` hands the line back, for ``csv.writer`` in a generator."""

    def write(self, line: str) -> str:
        return line


def csv_cell(value: Any) -> Any:
    """A value as written: empty for unknown, ISO 8601 with ``Z`` for instants, lower-case booleans."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, Decimal):
        return f"{value:f}"  # plain notation, trailing zeros kept: 0.09820, never 9.820E-2
    return value


def csv_lines(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """The header, then one line per row (columns in the order given; missing keys are empty)."""
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    for row in rows:
        yield writer.writerow([csv_cell(csv_safe(row.get(column))) for column in columns])


def csv_response(columns: Sequence[str], rows: Iterable[Mapping[str, Any]], *, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(csv_lines(columns, rows), content_type=f"{CSV_MEDIA_TYPE}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class CSVRenderer(BaseRenderer):
    """Declares ``text/csv`` for content negotiation. Report views stream their CSV with ``csv_response``;
    this renders what reaches it anyway (a list of flat rows) the same way."""

    media_type = CSV_MEDIA_TYPE
    format = "csv"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None
    ) -> bytes:
        rows = data if isinstance(data, list) else [data]
        columns = list(rows[0]) if rows and isinstance(rows[0], Mapping) else []
        return "".join(csv_lines(columns, rows)).encode(self.charset)
