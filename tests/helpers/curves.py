"""Load curves read two ways: from the served site-hours (as SQLite and PostgreSQL keep them) and from the
lines and the endpoint-hours (as on a Citus coordinator)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from reports.curves import LoadCurve, load_curve_rows, load_curves


def curves_from_lines(monkeypatch: pytest.MonkeyPatch, **asked: Any) -> list[LoadCurve]:
    """``load_curves(**asked)`` with the served site-hours out of use: read from the lines."""
    with monkeypatch.context() as patched:
        patched.setattr("reports.curves.site_hours_in_use", lambda: False)
        return load_curves(**asked)


def curves_same(stored: list[LoadCurve], from_lines: list[LoadCurve]) -> bool:
    """The same curves: to the last digit on PostgreSQL (``numeric`` sums); on SQLite, which sums decimals as
    doubles, the same rows as the report shows them (unit figures to 4 significant digits)."""
    if connection.vendor == "postgresql" and stored != from_lines:
        return False
    return load_curve_rows(stored) == load_curve_rows(from_lines) and len(stored) == len(from_lines)
