"""Which of a period's endpoint-hours are read from the ledger's serving days (``accounting.serving_days``).

A node's whole UTC day is read from its stored sums where every hour of it is final (``complete.final_q``):
the day lies inside the period, before the hour in progress, and none of the node's hours that day is marked
for (re)computation. Every other final endpoint-hour (the period's first and last part days, today, a marked
node-day's final hours) is read hour by hour. The two parts never overlap and together are the final hours.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from accounting.serving_days import serving_days_in_use
from common.periods import DAY, day_of, whole_days
from reports.selectors.complete import FinalRows


@dataclass(frozen=True)
class ServingSplit:
    """The whole UTC days ``[first, last)`` read from the serving days, but the node-days in ``marked`` (node ids by
    day), which are read hour by hour with the rest; ``first == last``: every hour read hour by hour."""

    first: datetime
    last: datetime
    marked: dict[datetime, frozenset[int]]

    def hours(self, path: str = "") -> Q:
        """The condition on endpoint-hours (``node_id``, ``hour_start``), or on the lines joined to them (at
        ``path``, ending in ``__``), that keeps those read hour by hour (beside ``FinalRows.condition``)."""
        if self.first >= self.last:
            return Q()
        kept = Q(**{f"{path}hour_start__lt": self.first}) | Q(**{f"{path}hour_start__gte": self.last})
        for day, node_ids in sorted(self.marked.items()):
            day_hours = {f"{path}hour_start__gte": day, f"{path}hour_start__lt": day + DAY}
            kept |= Q(**day_hours, **{f"{path}node_id__in": sorted(node_ids)})
        return kept

    def days(self) -> Q | None:
        """The condition on ``LedgerServingDay`` for the node-days read from their sums (``None``: none are)."""
        if self.first >= self.last:
            return None
        days = Q(day_start__gte=self.first, day_start__lt=self.last)
        for day, node_ids in sorted(self.marked.items()):
            days &= ~Q(day_start=day, node_id__in=sorted(node_ids))
        return days


def serving_split(*, start: datetime, end: datetime, final: FinalRows) -> ServingSplit:
    """The split of ``[start, end)``'s final endpoint-hours (``final``: its marks and the end of the hours over)."""
    if final.marks is None or not serving_days_in_use():
        return ServingSplit(start, start, {})
    first, last = whole_days(start, min(end, final.through))
    marked: dict[datetime, set[int]] = {}
    for hour, node_ids in final.marks.items():
        if first <= hour < last:
            marked.setdefault(day_of(hour), set()).update(node_ids)
    return ServingSplit(first, last, {day: frozenset(node_ids) for day, node_ids in marked.items()})
