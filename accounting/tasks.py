"""Ledger tasks: recompute what changed, and accrue held hours without telemetry."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from accounting.node_hour_lines import ledger_mark_held_hours, ledger_pending_run


@shared_task(name="accounting.ledger_pending_task")
def ledger_pending_task() -> int:
    """Recompute ledger lines whose usage, prices or intensity changed. Idempotent."""
    return ledger_pending_run(now=timezone.now())


@shared_task(name="accounting.ledger_held_hours_task")
def ledger_held_hours_task() -> int:
    """Mark held node-hours that have no line yet (a node costs money even when silent)."""
    return ledger_mark_held_hours(now=timezone.now())
