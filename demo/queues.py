"""Drain the rollup and ledger queues in this process, with progress, as beat would over the next minutes."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.utils import timezone

from accounting.models import LedgerPending, NodeHourLedger
from accounting.node_hour_lines import ledger_mark, ledger_pending_run
from demo.progress import Progress, Stream
from fleets.models import Node
from telemetry.models import RollupPending, UsageChanged
from telemetry.rollup import rollup_pending_run

HOUR = timedelta(hours=1)
# Node-hours per call: small enough for a smooth progress bar, large enough to cost nothing.
ROLLUP_STEP = 48
LEDGER_STEP = 500


def rollup_drain(*, stream: Stream) -> tuple[int, float]:
    """Roll up every node-hour marked so far; returns (node-hours done, seconds)."""
    now = timezone.now()  # marks made later (live data) are left to beat, so this ends
    progress = Progress(stream, "rollup", RollupPending.objects.filter(marked_at__lte=now).count(), "node-hours")
    done = 0
    while step := rollup_pending_run(now=now, limit=ROLLUP_STEP):
        done += step
        progress.update(done)
    return done, progress.finish(actual=done)


def ledger_missing_mark(*, nodes: Iterable[Node], start: datetime, end: datetime) -> int:
    """Mark the complete hours of ``[start, end)`` that have no ledger line yet (held, but no telemetry)."""
    now, marked = timezone.now(), 0
    for node in nodes:
        lines = NodeHourLedger.objects.filter(node=node, hour_start__gte=start, hour_start__lt=end)
        stored = set(lines.values_list("hour_start", flat=True))
        for first, last in _missing_runs(stored, start, end):
            marked += ledger_mark(node_ids=[node.pk], start=first, end=last + HOUR, now=now)
    return marked


def _missing_runs(stored: set[datetime], start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """Runs of consecutive complete hours of ``[start, end)`` not in ``stored``: (first, last) hour starts."""
    runs: list[tuple[datetime, datetime]] = []
    hour = start
    while hour + HOUR <= end:
        if hour not in stored:
            runs.append((runs.pop()[0], hour) if runs and runs[-1][1] + HOUR == hour else (hour, hour))
        hour += HOUR
    return runs


def ledger_drain(*, stream: Stream) -> tuple[int, float]:
    """Compute the ledger lines of every node-hour whose inputs changed; returns (lines written, seconds)."""
    now = timezone.now()
    total = LedgerPending.objects.filter(marked_at__lte=now).count()
    total += UsageChanged.objects.filter(changed_at__lte=now).count()
    progress = Progress(stream, "ledger", total, "node-hours")
    done = 0
    while step := ledger_pending_run(now=now, limit=LEDGER_STEP):
        done += step
        progress.update(done)
    return done, progress.finish(actual=done)
