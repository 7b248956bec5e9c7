"""A node's own power meter on the server: its readings stored, and rolled up per hour (the node boundary).

The collector sends what the host's meter reads (``telemetry.collector.hostmeter``):
IPMI DCMI or Redfish power (the whole node at its power supplies: boundary
``node``) or RAPL's CPU-package energy counter (boundary ``cpu_packages``).
An hour's energy follows the GPUs' rule exactly (``telemetry.energy.gpu_usage_by_hour``
on the meter's readings: the counter where there is one, else the trapezoid of
power; a gap the counter carries on across bridged), so the ledger's node
boundary (``node_meter``) is measured the way its GPU boundary is.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection

from telemetry import energy
from telemetry.models import NodeHourUsage, NodeMeterSample

BOUNDARIES = {"ipmi_dcmi": "node", "redfish": "node", "rapl": "cpu_packages"}
_COLUMNS = ("ts", "epoch", "energy_j", "power_w", "method")
_INSERTED = ("node_id", "ts", "method", "epoch", "power_w", "energy_j")
_MAX_PARAMETERS = 65535  # PostgreSQL's bound on one statement's parameters (SQLite's is the backend's own)


def _utc(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


def node_meter_store(*, node_id: int, method: str, epoch: str, readings: dict[str, list[Any]]) -> int:
    """Store a batch's meter readings (``readings``: the columns kept, with ``at``, each row's stored timestamp);
    return how many were new: a reading already stored (a re-sent batch) is left as it is."""
    at = connection.ops.adapt_datetimefield_value
    rows = [
        (node_id, at(ts), method, epoch, power_w, energy_j)
        for ts, power_w, energy_j in zip(readings["at"], readings["power_w"], readings["energy_j"], strict=True)
    ]
    per_statement = (connection.features.max_query_params or _MAX_PARAMETERS) // len(_INSERTED)
    return sum(_new_rows_insert(rows[start : start + per_statement]) for start in range(0, len(rows), per_statement))


def _new_rows_insert(rows: list[tuple[Any, ...]]) -> int:
    """One ``INSERT ... ON CONFLICT DO NOTHING``, counted by the cursor (``bulk_create(ignore_conflicts=True)``
    cannot say how many rows were new). Every row is one node's: on Citus, its shard alone."""
    values = ", ".join([f"({', '.join(['%s'] * len(_INSERTED))})"] * len(rows))
    sql = (
        f'INSERT INTO "{NodeMeterSample._meta.db_table}" ({", ".join(_INSERTED)}) '  # noqa: S608 - the model's names
        f"VALUES {values} ON CONFLICT DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [value for row in rows for value in row])
        return cursor.rowcount


def node_meter_usage_replace(
    *, node_id: int, hour_runs: Sequence[Sequence[int]], computed_at: datetime
) -> set[datetime]:
    """Recompute and replace the node's metered hours of ``hour_runs``; return the hours written or deleted."""
    gap_s, bridge_s = settings.TELEMETRY_GPU_MAX_GAP_S, settings.TELEMETRY_MAX_BRIDGE_S
    rows: list[NodeHourUsage] = []
    hours = [_utc(hour) for run in hour_runs for hour in run]
    for run in hour_runs:
        first_s, last_s = energy.sample_window_s(run, max_gap_s=gap_s)
        samples = _samples(node_id, first_s, last_s, bridge_s)
        points = [
            energy.GpuPoint(ts.timestamp(), epoch, energy_j, power_w) for ts, epoch, energy_j, power_w, _ in samples
        ]
        method = samples[-1][4] if samples else ""
        for usage in energy.gpu_usage_by_hour(points, hour_starts_s=run, max_gap_s=gap_s, max_bridge_s=bridge_s):
            if usage.energy_covered_s > 0:
                rows.append(_usage_row(node_id, usage, method, computed_at))
    written = {row.hour_start for row in rows}
    stale = NodeHourUsage.objects.filter(node_id=node_id, hour_start__in=hours).exclude(hour_start__in=written)
    deleted = set(stale.values_list("hour_start", flat=True))
    stale.delete()
    NodeHourUsage.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["node", "hour_start"],
        update_fields=["method", "boundary", "energy_j", "energy_covered_s", "mean_power_w", "computed_at"],
    )
    return written | deleted


def _samples(node_id: int, first_s: float, last_s: float, bridge_s: float) -> list[tuple[Any, ...]]:
    """The window's readings and the nearest one either side within the bridge limit."""
    readings = NodeMeterSample.objects.filter(node_id=node_id)
    first, last, bridge = _utc(first_s), _utc(last_s), timedelta(seconds=bridge_s)
    inside = list(readings.filter(ts__gte=first, ts__lte=last).order_by("ts").values_list(*_COLUMNS))
    before = readings.filter(ts__lt=first, ts__gte=first - bridge).order_by("-ts").values_list(*_COLUMNS).first()
    after = readings.filter(ts__gt=last, ts__lte=last + bridge).order_by("ts").values_list(*_COLUMNS).first()
    return [*([before] if before else []), *inside, *([after] if after else [])]


def _usage_row(node_id: int, usage: energy.GpuHourUsage, method: str, computed_at: datetime) -> NodeHourUsage:
    return NodeHourUsage(
        node_id=node_id,
        hour_start=_utc(usage.hour_start_s),
        method=method,
        boundary=BOUNDARIES.get(method, ""),
        energy_j=usage.energy_j,
        energy_covered_s=usage.energy_covered_s,
        mean_power_w=usage.mean_power_w,
        computed_at=computed_at,
    )
