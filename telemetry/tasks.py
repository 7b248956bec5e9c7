from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from telemetry.partitions import partitions_maintain
from telemetry.prometheus_sync import prometheus_sources_run
from telemetry.rollup import rollup_pending_run


@shared_task(name="telemetry.partitions_maintain_task")
def partitions_maintain_task() -> dict[str, object]:
    """Create raw-sample partitions ahead and apply retention. Idempotent."""
    return partitions_maintain(now=timezone.now())


@shared_task(name="telemetry.rollup_pending_task")
def rollup_pending_task() -> int:
    """Recompute the hourly usage of node-hours with new samples; return how many. Idempotent."""
    return rollup_pending_run(now=timezone.now())


@shared_task(name="telemetry.prometheus_import_task")
def prometheus_import_task() -> dict[str, str]:
    """Import what each enabled Prometheus source has new since its watermark; each source on its own."""
    return prometheus_sources_run(now=timezone.now())
