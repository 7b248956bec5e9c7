"""The lock check for inputs without a period of their own: refused where a stored line of theirs is locked."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from accounting.models import NodeHourLedger
from governance.intervals import Window
from governance.locks import _refusal
from governance.models import LockedPeriod


def lock_check_lines(*, organization_id: int, node_ids: Iterable[int], windows: Iterable[Window] | None = None) -> None:
    """For inputs without a period (site PUE, GPU assets): refuse if a stored line of the nodes is locked
    (within ``windows``, the hours the input weighs on; default: every hour)."""
    ids, windows = list(node_ids), None if windows is None else list(windows)
    for lock in LockedPeriod.objects.filter(organization_id=organization_id):
        lines = NodeHourLedger.objects.filter(node_id__in=ids, hour_start__gte=lock.start, hour_start__lt=lock.end)
        if windows is not None:
            within = Q()
            for start, end in windows:
                within |= Q(hour_start__gte=start) & (Q() if end is None else Q(hour_start__lt=end))
            lines = lines.filter(within) if windows else lines.none()
        if lines.exists():
            raise _refusal(lock)
