"""The rollup tests' hour, a rollup run, and the usage tables as rows."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from django.utils import timezone

from telemetry.models import EndpointHourUsage, GpuHourUsage
from telemetry.rollup import rollup_pending_run

HOUR_S = 3600
# A complete hour two hours back: in retention, not in the future, never the current hour.
H = (int(time.time()) // HOUR_S - 2) * HOUR_S


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


def run() -> int:
    return rollup_pending_run(now=timezone.now())


def table() -> list[dict]:
    """Both usage tables, without the ids and times that a recomputation renews."""
    gpu = GpuHourUsage.objects.order_by("gpu_id", "hour_start").values()
    endpoint = EndpointHourUsage.objects.order_by("endpoint_id", "hour_start").values()
    return [{k: v for k, v in row.items() if k not in {"id", "computed_at"}} for row in [*gpu, *endpoint]]
