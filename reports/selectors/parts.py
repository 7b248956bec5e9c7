"""Ledger lines summed once per a few keys, for pages that show several roll-ups of the same lines.

A dashboard shows a period's total, its rows per fleet, its buckets over time,
its split by tenure: each a sum of the same ledger lines. Summing them once, at
the finest grain the page needs (a few hundred parts for a quarter), and adding
the parts in Python replaces a scan of the period's lines per view. Parts add
exactly: ``LedgerTotals`` holds Decimals, and adding partial sums of Decimals
gives the sum of the lines, so a roll-up equals the report's own query for it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.db.models import Aggregate, Expression, F
from django.db.models.functions import TruncDay, TruncMonth

from common.periods import Granularity
from reports.aggregates import RowsAggregate, ledger_sums, ledger_sums_from, rows_aggregates, site_hours_can_sum
from reports.metrics import LedgerSums, ledger_sums_merge
from reports.selectors.lines import NO_FILTERS, ReportFilters, ledger_rows, site_hours_serve

BUCKET = "bucket"
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class LedgerPart:
    """The lines of one combination of keys (and of one currency, when money is summed).

    ``key``: the grouping values by name (``bucket``: the bucket's start, with a
    granularity); ``extra``: the values of the caller's extra aggregates.
    """

    key: dict[str, Any]
    sums: LedgerSums
    extra: dict[str, Any]


def bucket_expression(granularity: Granularity) -> Expression | F | None:
    """The SQL start of a line's bucket (UTC); ``None`` for the whole period."""
    if granularity is Granularity.HOUR:
        return F("hour_start")
    if granularity is Granularity.DAY:
        return TruncDay("hour_start", tzinfo=UTC)
    if granularity is Granularity.MONTH:
        return TruncMonth("hour_start", tzinfo=UTC)
    return None


def ledger_parts(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    keys: Sequence[str] = (),
    granularity: Granularity = Granularity.TOTAL,
    filters: ReportFilters = NO_FILTERS,
    money: bool = True,
    annotations: Mapping[str, Any] | None = None,
    extra: Mapping[str, Aggregate | RowsAggregate] | None = None,
    site_hour_annotations: bool = False,
) -> list[LedgerPart]:
    """The period's lines summed per bucket x ``keys`` (fields, lookups, or names of ``annotations``). One query.

    With ``money`` the parts are per currency too (their totals carry it); without,
    they hold carbon, energy and tokens only, and add across currencies. The query reads the lines'
    site-hours (``accounting.site_hours``) where they give the same sums: ``keys`` and ``filters`` they hold,
    every ``extra`` in both forms (``RowsAggregate``), ``annotations`` none or, as the caller says with
    ``site_hour_annotations``, conditions on keys or on a sum being null only.
    """
    named = [key for key in keys if key not in (annotations or {})]
    site_hours = (
        (not annotations or site_hour_annotations)
        and site_hours_can_sum(extra)
        and site_hours_serve(organization_ids=organization_ids, start=start, end=end, keys=named, filters=filters)
    )
    lines = ledger_rows(organization_ids=organization_ids, start=start, end=end, filters=filters, site_hours=site_hours)
    grouping = list(keys)
    bucket = bucket_expression(granularity)
    if bucket is not None:
        lines, grouping = lines.annotate(**{BUCKET: bucket}), [BUCKET, *grouping]
    if annotations:
        lines = lines.annotate(**annotations)
    aggregates = {
        **ledger_sums(money=money, site_hours=site_hours),
        **rows_aggregates(extra or {}, site_hours=site_hours),
    }
    rows = lines.values(*grouping, *(["currency"] if money else [])).annotate(**aggregates).order_by()
    return [
        LedgerPart(
            key={name: row[name] for name in grouping},
            sums=ledger_sums_from(row, currency=row["currency"] if money else None),
            extra={name: row[name] for name in extra or {}},
        )
        for row in rows
    ]


def parts_sum(parts: Iterable[LedgerPart], by: Callable[[LedgerPart], K]) -> dict[K, LedgerSums]:
    """The parts added per ``by(part)``, sorted by that key (raises ``CurrencyMismatchError`` on mixed money)."""
    sums: dict[K, LedgerSums] = {}
    for part in parts:
        key = by(part)
        sums[key] = ledger_sums_merge(sums[key], part.sums) if key in sums else part.sums
    return dict(sorted(sums.items(), key=lambda item: _sortable(item[0])))


def parts_total(parts: Iterable[LedgerPart]) -> LedgerSums | None:
    """All parts added; ``None`` when there are none (no lines)."""
    return parts_sum(parts, lambda _: None).get(None)


def _sortable(key: Any) -> Any:
    # A key may hold None (no fleet, no bucket): it sorts first instead of failing to compare.
    if isinstance(key, tuple):
        return tuple(_sortable(k) for k in key)
    return (key is not None, key)
