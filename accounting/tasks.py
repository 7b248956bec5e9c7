"""Ledger tasks: recompute what changed, accrue held hours without telemetry, check node-price and exchange-rate
uploads."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from accounting.accruals import ledger_mark_held_hours
from accounting.inputs.upload_kinds import EXCHANGE_RATES_UPLOAD, NODE_PRICES_UPLOAD
from accounting.inputs.upload_runs import upload_run
from accounting.node_hour_lines import ledger_pending_run


@shared_task(name="accounting.ledger_pending_task")
def ledger_pending_task() -> int:
    """Recompute ledger lines whose usage, prices or intensity changed. Idempotent."""
    return ledger_pending_run(now=timezone.now())


@shared_task(name="accounting.ledger_held_hours_task")
def ledger_held_hours_task() -> int:
    """Mark held node-hours that have no line yet, however long ago, a bounded batch per node and run (a node
    costs money even when silent: ``accounting.accruals``). Idempotent."""
    return ledger_mark_held_hours(now=timezone.now())


@shared_task(name="accounting.node_prices_upload_task")
def node_prices_upload_task(upload_id: int) -> str:
    """Check and save a stored node-price CSV upload. Idempotent: an upload not queued is left alone."""
    return upload_run(upload_id=upload_id, spec=NODE_PRICES_UPLOAD, now=timezone.now())


@shared_task(name="accounting.exchange_rates_upload_task")
def exchange_rates_upload_task(upload_id: int) -> str:
    """Check and save a stored exchange-rate CSV upload. Idempotent: an upload not queued is left alone."""
    return upload_run(upload_id=upload_id, spec=EXCHANGE_RATES_UPLOAD, now=timezone.now())
