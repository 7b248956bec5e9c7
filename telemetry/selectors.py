"""Reads of hourly usage for node pages and reports; none of them scans raw samples."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import QuerySet

from fleets.models import Gpu
from telemetry.models import EndpointHourUsage, GpuHourUsage

HOUR = timedelta(hours=1)
HOUR_S = 3600.0


def gpu_hour_usage_for_node(*, node_id: int, start: datetime, end: datetime) -> QuerySet[GpuHourUsage]:
    """The node's GPU-hours with ``start <= hour_start < end``, by hour then GPU index, with their GPU."""
    return (
        GpuHourUsage.objects.filter(gpu__node_id=node_id, hour_start__gte=start, hour_start__lt=end)
        .select_related("gpu")
        .order_by("hour_start", "gpu__index", "gpu_id")
    )


def endpoint_hour_usage_for_node(*, node_id: int, start: datetime, end: datetime) -> QuerySet[EndpointHourUsage]:
    """The node's endpoint-hours with ``start <= hour_start < end``, by hour then endpoint, with their endpoint."""
    return (
        EndpointHourUsage.objects.filter(endpoint__node_id=node_id, hour_start__gte=start, hour_start__lt=end)
        .select_related("endpoint")
        .order_by("hour_start", "endpoint_id")
    )


@dataclass(frozen=True)
class NodeGap:
    """An hour the node's telemetry did not fully cover: ``missing_s`` of its least-covered GPU."""

    hour_start: datetime
    missing_s: float


def node_gaps(*, node_id: int, start: datetime, end: datetime) -> list[NodeGap]:
    """The hours starting in ``[start, end)`` where some GPU of the node observed less than the whole hour.

    A GPU without a usage row in an hour observed nothing. A GPU counts from
    the hour it was first seen (earlier only where it has rows), so one added
    later does not open gaps in the past; an hour with no GPU at all is missing whole.
    ``start`` and ``end`` bound the work: one row per GPU-hour of the period is read.
    """
    gpus = list(Gpu.objects.filter(node_id=node_id).values_list("id", "first_seen_at"))
    observed = {
        (gpu_id, hour): observed_s
        for gpu_id, hour, observed_s in GpuHourUsage.objects.filter(
            gpu__node_id=node_id, hour_start__gte=start, hour_start__lt=end
        ).values_list("gpu_id", "hour_start", "observed_s")
    }
    gaps = []
    for hour in _hour_starts(start, end):
        expected = [gpu_id for gpu_id, seen in gpus if seen < hour + HOUR or (gpu_id, hour) in observed]
        least_s = min((observed.get((gpu_id, hour), 0.0) for gpu_id in expected), default=0.0)
        if least_s < HOUR_S:
            gaps.append(NodeGap(hour_start=hour, missing_s=HOUR_S - least_s))
    return gaps


def _hour_starts(start: datetime, end: datetime) -> list[datetime]:
    """UTC hour starts in ``[start, end)`` (an hour start is a whole number of seconds)."""
    first_s = math.ceil(start.timestamp() / HOUR_S) * int(HOUR_S)
    return [datetime.fromtimestamp(s, tz=UTC) for s in range(first_s, math.ceil(end.timestamp()), int(HOUR_S))]
