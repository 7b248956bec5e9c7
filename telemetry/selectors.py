"""Reads of hourly usage for node pages and reports; none of them scans raw samples.

Each read of one node's rows names the node (the tables' keys lead with it; on Citus, the node's shard).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import Count, F, Max, Min, Q, QuerySet

from fleets.models import Gpu
from telemetry.models import EndpointHourUsage, GpuHourUsage

HOUR = timedelta(hours=1)
HOUR_S = 3600.0


def gpu_hour_usage_for_node(*, node_id: int, start: datetime, end: datetime) -> QuerySet[GpuHourUsage]:
    """The node's GPU-hours with ``start <= hour_start < end``, by hour then GPU index, with their GPU."""
    return (
        GpuHourUsage.objects.filter(node_id=node_id, hour_start__gte=start, hour_start__lt=end)
        .select_related("gpu")
        .order_by("hour_start", "gpu__index", "gpu_id")
    )


def endpoint_hour_usage_for_node(*, node_id: int, start: datetime, end: datetime) -> QuerySet[EndpointHourUsage]:
    """The node's endpoint-hours with ``start <= hour_start < end``, by hour then endpoint, with their endpoint."""
    return (
        EndpointHourUsage.objects.filter(node_id=node_id, hour_start__gte=start, hour_start__lt=end)
        .select_related("endpoint")
        .order_by("hour_start", "endpoint_id")
    )


def gpu_hour_usage_for_gpus(
    *, node_id: int, gpu_ids: Collection[int], start: datetime, end: datetime
) -> QuerySet[GpuHourUsage]:
    """The GPU-hours of node ``node_id``'s GPUs ``gpu_ids`` with ``start <= hour_start < end`` (unordered).

    Given the ids (the node's GPUs, already at hand), PostgreSQL reads each GPU's range
    of the (node, gpu, hour_start) index: for a node over a quarter, ~20 ms. Filtered by a
    join on the node instead, it cannot tell that the node has a handful of GPUs and
    scans every GPU-hour of the period (~200 ms at 500 GPUs).
    """
    return GpuHourUsage.objects.filter(
        node_id=node_id, gpu_id__in=list(gpu_ids), hour_start__gte=start, hour_start__lt=end
    )


@dataclass(frozen=True)
class NodeGap:
    """An hour the node's telemetry did not fully measure, as data quality: of its least-covered GPU,
    ``measured_s`` (samples at most the max gap apart), ``bridged_s`` (gaps a counter bridged, the longest
    ``bridged_gap_s`` long) and ``missing_s`` (what no counter proves)."""

    hour_start: datetime
    missing_s: float
    measured_s: float = 0.0
    bridged_s: float = 0.0
    bridged_gap_s: float = 0.0


def node_gaps(*, node_id: int, start: datetime, end: datetime) -> list[NodeGap]:
    """The hours starting in ``[start, end)`` where some GPU of the node measured less than the whole hour.

    A GPU without a usage row in an hour observed nothing. A GPU counts from
    the hour it was first seen (earlier only where it has rows), so one added
    later does not open gaps in the past; an hour with no GPU at all is missing whole.
    ``start`` and ``end`` bound the work: one row per hour of the period is read,
    the node's GPU-hours counted and their least coverage taken in SQL.
    """
    gpus = list(Gpu.objects.filter(node_id=node_id).values_list("id", "first_seen_at"))
    per_hour = {
        hour: (seen_rows, least_s, measured_s, bridged_s, gap_s)
        for hour, seen_rows, least_s, measured_s, bridged_s, gap_s in gpu_hour_usage_for_gpus(
            node_id=node_id, gpu_ids=[gpu_id for gpu_id, _ in gpus], start=start, end=end
        )
        .values("hour_start")
        .annotate(
            seen_rows=Count("gpu_id", filter=Q(gpu__first_seen_at__lt=F("hour_start") + HOUR)),
            least_s=Min(F("observed_s") + F("bridged_s")),
            measured_s=Min("observed_s"),
            bridged_s=Max("bridged_s"),
            gap_s=Max("bridged_gap_s"),
        )
        .values_list("hour_start", "seen_rows", "least_s", "measured_s", "bridged_s", "gap_s")
        .order_by()
    }
    gaps = []
    for hour in _hour_starts(start, end):
        seen = sum(1 for _, first_seen in gpus if first_seen < hour + HOUR)
        seen_rows, least_s, measured_s, bridged_s, gap_s = per_hour.get(hour, (0, 0.0, 0.0, 0.0, 0.0))
        # Every GPU with a row is expected; one seen by then without a row observed nothing.
        if seen_rows != seen:
            least_s = measured_s = 0.0
        if measured_s < HOUR_S:
            gaps.append(NodeGap(hour, HOUR_S - least_s, measured_s, bridged_s, gap_s))
    return gaps


def _hour_starts(start: datetime, end: datetime) -> list[datetime]:
    """UTC hour starts in ``[start, end)`` (an hour start is a whole number of seconds)."""
    first_s = math.ceil(start.timestamp() / HOUR_S) * int(HOUR_S)
    return [datetime.fromtimestamp(s, tz=UTC) for s in range(first_s, math.ceil(end.timestamp()), int(HOUR_S))]
