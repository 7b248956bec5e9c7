from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from telemetry.partitions import partitions_maintain


@shared_task(name="telemetry.partitions_maintain_task")
def partitions_maintain_task() -> dict[str, object]:
    """Create raw-sample partitions ahead and apply retention. Idempotent."""
    return partitions_maintain(now=timezone.now())
