"""Whether a report's period is closed, what was restated in it since, and the corrections booked in it.

A locked period's lines never change (``accounting.corrections``): what would have
changed them is a ``LedgerCorrection`` restating a locked hour, booked in the
first open period. A report of the locked period reads the closed lines, and says
how much was restated (``corrections_restating``); the report of the period a
correction is booked in shows it as a figure of its own (``corrections_booked``).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from accounting.ledger.corrections import CORRECTED_FIELDS, TOKEN_FIELDS, Cause
from accounting.models import LedgerCorrection
from governance.intervals import windows_minus
from governance.models import LockedPeriod


class Closed(enum.StrEnum):
    ALL = "all"  # every hour of the period is locked, for every organization asked for
    PARTLY = "partly"
    NO = "no"


def period_closed(*, organization_ids: Collection[int], start: datetime, end: datetime) -> Closed:
    """Whether every hour of ``[start, end)`` is locked for each of the organizations, some, or none."""
    states = set()
    for organization_id in organization_ids:
        locks = LockedPeriod.objects.filter(organization_id=organization_id, start__lt=end, end__gt=start)
        left = windows_minus([(start, end)], list(locks.values_list("start", "end")))
        states.add(Closed.NO if left == [(start, end)] else Closed.ALL if not left else Closed.PARTLY)
    if states == {Closed.ALL}:
        return Closed.ALL
    return Closed.NO if states <= {Closed.NO} else Closed.PARTLY


@dataclass(frozen=True)
class CorrectionSums:
    """Corrections in one currency: how many (reversals among them) and their deltas summed, unrounded."""

    currency: str
    count: int
    reversals: int
    sums: dict[str, Decimal | int]


def _sums(corrections: QuerySet[LedgerCorrection]) -> list[CorrectionSums]:
    grouped = corrections.values("currency").annotate(
        s_count=Count("id"), s_reversals=Count("id", filter=Q(cause=Cause.REVERSAL)),
        **{f"s_{name}": Sum(name) for name in CORRECTED_FIELDS},
    ).order_by("currency")  # fmt: skip
    return [_correction_sums(row) for row in grouped]


def _correction_sums(row: Mapping[str, Any]) -> CorrectionSums:
    sums = {name: _zero_if_none(name, row[f"s_{name}"]) for name in CORRECTED_FIELDS}
    return CorrectionSums(currency=row["currency"], count=row["s_count"], reversals=row["s_reversals"], sums=sums)


def _zero_if_none(name: str, value: Decimal | int | None) -> Decimal | int:
    if value is None:
        return 0 if name in TOKEN_FIELDS else Decimal(0)
    return value


def corrections_restating(*, organization_ids: Collection[int], start: datetime, end: datetime) -> list[CorrectionSums]:
    """The standing corrections (not reversed) of hours in ``[start, end)``, per currency: what was restated."""
    standing = LedgerCorrection.objects.filter(
        organization_id__in=organization_ids, restated_hour__gte=start, restated_hour__lt=end, reversed_at__isnull=True
    ).exclude(cause=Cause.REVERSAL)
    return _sums(standing)


def corrections_booked(*, organization_ids: Collection[int], start: datetime, end: datetime) -> list[CorrectionSums]:
    """Every correction and reversal booked in ``[start, end)``, per currency: the period's own figures."""
    return _sums(corrections_in(organization_ids=organization_ids, start=start, end=end))


def corrections_in(
    *, organization_ids: Collection[int], start: datetime, end: datetime, by: str = "booked"
) -> QuerySet[LedgerCorrection]:
    """The corrections booked in ``[start, end)`` (``by="booked"``) or restating an hour of it (``"restated"``)."""
    field = "booked_hour" if by == "booked" else "restated_hour"
    where = {"organization_id__in": organization_ids, f"{field}__gte": start, f"{field}__lt": end}
    return LedgerCorrection.objects.filter(**where).select_related("node").order_by(field, "id")
