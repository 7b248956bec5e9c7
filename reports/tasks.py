"""Report tasks: the OTLP push the settings name."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from reports.otlp import otlp_push_configured


@shared_task(name="reports.otlp_push_task")
def otlp_push_task() -> str:
    """Push ``WATTLEDGER_OTLP_ORGANIZATION``'s /metrics families to ``WATTLEDGER_OTLP_ENDPOINT``; off when unset.

    A failed push is logged and told in the result, not raised: the next minute's push sends the counters anew."""
    return otlp_push_configured(now=timezone.now())
