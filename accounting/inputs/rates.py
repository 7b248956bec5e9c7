"""Writes of the exchange-rate table: create, change, delete, each audited, lock-checked and re-opening lines.

A rate is in force for its month: a change (before or after) touching a locked
period is refused (``governance.locks.lock_check``, as a dated price is), and a
change of an ``average`` rate re-opens the month's stored lines that convert a
price through that pair (``ledger_lines_reopen``, as a price change does). A
``closing`` rate weighs on no line (book values and balances read it when asked),
so it re-opens none. Audit subject: ``exchange_rate``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from django.db import transaction
from django.db.models import Max, Min

from accounting.inputs.reopen import ledger_lines_reopen
from accounting.inputs.services import InputChange, _assign, _organization_lock, validated
from accounting.models import ExchangeRate, NodeHourLedger
from common.api import InputInvalid
from common.periods import HOUR, month_bounds
from governance.audit import audit_record, snapshot
from governance.intervals import Window
from governance.locks import lock_check

EXCHANGE_RATE_FIELDS = ("currency", "quote_currency", "month", "kind", "rate", "source")
_KEY = ("organization_id", "currency", "quote_currency", "month", "kind")


def month_window(month: date) -> Window:
    """The UTC instants of the calendar month starting ``month``: when its rate is in force."""
    return month_bounds(datetime(month.year, month.month, 1, tzinfo=UTC))


def _node_windows(rows: list[dict[str, Any]]) -> dict[int, list[Window]]:
    """Per node, the span of its stored lines of each average rate's month that convert a price through its
    pair (from the first such line to the last): what a change of the rate re-opens."""
    windows: dict[int, list[Window]] = {}
    averages = {tuple(row[name] for name in _KEY): row for row in rows if row["kind"] == ExchangeRate.Kind.AVERAGE}
    for row in averages.values():
        pair = [row["currency"], row["quote_currency"]]
        start, end = month_window(row["month"])
        lines = NodeHourLedger.objects.filter(
            organization_id=row["organization_id"], hour_start__gte=start, hour_start__lt=end,
            price_currency__in=pair, currency__in=pair,
        )  # fmt: skip
        spans = lines.order_by().values("node_id").annotate(first=Min("hour_start"), last=Max("hour_start"))
        for span in spans:
            windows.setdefault(span["node_id"], []).append((span["first"], span["last"] + HOUR))
    return windows


def _key_of(row: ExchangeRate) -> dict[str, Any]:
    return {name: getattr(row, name) for name in _KEY}


def exchange_rate_save(
    *, row: ExchangeRate, data: Mapping[str, Any], user: Any, now: datetime, replace: bool = False
) -> InputChange:
    """Create (``row`` unsaved, with its organization) or change a rate: the fields of ``data``.

    ``replace`` (the CSV upload): a new row whose pair, month and kind the table already holds replaces
    that rate; otherwise such a row is refused, naming the rate to change instead.
    """
    with transaction.atomic():
        _organization_lock(row.organization_id)
        stored = ExchangeRate.objects.filter(pk=row.pk).first() if row.pk else None
        row = stored or row
        before_key = _key_of(stored) if stored else None
        before = snapshot(stored)
        _assign(row, data, EXCHANGE_RATE_FIELDS)
        if stored is None:
            held = ExchangeRate.objects.filter(**_key_of(row)).first()
            if held is not None and not replace:
                raise InputInvalid(f"month: the table holds this rate already (id {held.pk}): change that one")
            if held is not None:
                before, before_key, held.rate, held.source, row = (
                    snapshot(held),
                    _key_of(held),
                    row.rate,
                    row.source,
                    held,
                )
        validated(row)
        keys = [_key_of(row)] + ([before_key] if before_key else [])
        lock_check(organization_id=row.organization_id, windows=[month_window(key["month"]) for key in keys])
        row.save()
        reopened = ledger_lines_reopen(node_windows=_node_windows(keys), now=now)
        audit_record(
            organization_id=row.organization_id, user=user, subject="exchange_rate", object_id=row.pk,
            before=before, after=snapshot(row), at=now, ledger_hours_reopened=reopened,
        )  # fmt: skip
    return InputChange(row, reopened)


def exchange_rate_delete(*, row: ExchangeRate, user: Any, now: datetime) -> InputChange:
    """Delete a rate: refused in a locked month; the lines that converted through it re-open (unconverted)."""
    with transaction.atomic():
        _organization_lock(row.organization_id)
        key, before, row_id = _key_of(row), snapshot(row), row.pk
        lock_check(organization_id=row.organization_id, windows=[month_window(row.month)])
        row.delete()
        reopened = ledger_lines_reopen(node_windows=_node_windows([key]), now=now)
        audit_record(
            organization_id=key["organization_id"], user=user, subject="exchange_rate", object_id=row_id,
            before=before, after=None, at=now, ledger_hours_reopened=reopened,
        )  # fmt: skip
    return InputChange(row, reopened)
