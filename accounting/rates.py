"""The stored exchange-rate table as the pure ``accounting.ledger.fx.RateTable``: one query per read."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date

from accounting.ledger.fx import RateKind, RateTable
from accounting.models import ExchangeRate


def rate_table(
    *, organization_id: int, start: date | None = None, end: date | None = None, kind: RateKind | None = None
) -> RateTable:
    """The organization's rates (of ``kind``, for the months from ``start``'s to ``end``'s, both given as
    first days of months; none given: every one)."""
    rows = ExchangeRate.objects.filter(organization_id=organization_id)
    if kind is not None:
        rows = rows.filter(kind=kind.value)
    if start is not None:
        rows = rows.filter(month__gte=start)
    if end is not None:
        rows = rows.filter(month__lte=end)
    return RateTable(row.as_rate() for row in rows)


def rate_tables(*, organization_ids: Collection[int], kind: RateKind | None = None) -> dict[int, RateTable]:
    """Each organization's rates (of ``kind``): a report over several organizations converts each at its own."""
    rows = ExchangeRate.objects.filter(organization_id__in=organization_ids)
    if kind is not None:
        rows = rows.filter(kind=kind.value)
    by_organization: dict[int, list] = {organization_id: [] for organization_id in organization_ids}
    for row in rows:
        by_organization[row.organization_id].append(row.as_rate())
    return {organization_id: RateTable(rates) for organization_id, rates in by_organization.items()}
