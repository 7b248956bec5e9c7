"""Hourly usage from raw samples: mark the hours new samples change, claim them, recompute and replace.

Ingest calls :func:`rollup_pending_mark` for the hours its new samples can
change. The beat task calls :func:`rollup_pending_run`, which claims marked
node-hours one node at a time and calls :func:`rollup_node_hours`: it reads the
node's raw samples in the hours' sample window
(:func:`telemetry.energy.sample_window_s`), computes with the pure functions of
``telemetry.energy`` and replaces the usage rows, so running it twice, or on two
workers, gives the same table. Every node-hour it writes is recorded in
``UsageChanged`` for the accounting app.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import groupby
from operator import itemgetter
from typing import Any

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Q
from django.utils import timezone

from common.stages import NodeHourStage
from fleets.models import Gpu
from telemetry import energy, rollup_sql
from telemetry.collector import wire
from telemetry.energy.hours import hours_validated
from telemetry.histogram import histogram_from_cumulative
from telemetry.installations import gpu_installations_refresh
from telemetry.models import (
    EndpointEpoch,
    EndpointHourUsage,
    GpuHourUsage,
    GpuSample,
    RollupPending,
    ServingEndpoint,
    ServingSample,
    UsageChanged,
)
from telemetry.nearest import Probe, nearest_rows
from telemetry.node_meter import node_meter_usage_replace
from telemetry.parking import NodeHourQueue, columns_fit, queue_run

logger = logging.getLogger(__name__)

# Node-hours per transaction. One node-hour of 8 GPUs at 1 Hz is ~29k samples: ~25 ms
# of one core on PostgreSQL (``telemetry.rollup_sql``: the query ~15 ms, numpy ~10 ms,
# plus ~3 ms a claim for claiming and writing), ~0.45 s read and computed in Python
# (SQLite). A claim of 12 holds its locks ~0.35 s (~6 s on SQLite): ingest of that node
# waits for it when it re-marks a claimed hour (and on SQLite every writer waits), so
# it must stay short; larger claims save little more.
HOURS_PER_CLAIM = 12

# Raw columns read for GpuPoints (``_gpu_point``): memory is stored in MiB, points carry bytes.
_GPU_COLUMNS = (
    "gpu_id",
    "ts",
    "epoch_id",
    "energy_j",
    "power_w",
    "util_pct",
    "mem_util_pct",
    "mem_used_mib",
    "temp_c",
)
_MIB = 1 << 20
_SERVING_COLUMNS = (
    "endpoint_id",
    "ts",
    "epoch_id",
    "prompt_tokens",
    "generation_tokens",
    "requests",
    "ttft_bucket_counts",
    "cached_prompt_tokens",
    "ttft_sum_s",
    "itl_bucket_counts",
    "itl_sum_s",
)
_KEY_FIELDS = {"id", "node", "gpu", "endpoint", "hour_start"}


def _utc(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


def _hour_s(at: datetime) -> int:
    """Unix seconds of an aware datetime that starts an hour; raise otherwise."""
    if timezone.is_naive(at) or not at.timestamp().is_integer():
        raise ValueError(f"{at!r} is not an aware datetime on a whole second")
    return hours_validated([int(at.timestamp())])[0]


# --- marking (called by ingest, inside its transaction) ----------------------------


def rollup_pending_mark(*, node_id: int, first_ts: datetime, last_ts: datetime, now: datetime) -> int:
    """Mark every hour that samples in ``[first_ts, last_ts]`` can change; return how many.

    A sample changes the intervals to its neighbours, up to the larger max gap
    away, so the hours from ``first_ts - gap`` to ``last_ts + gap`` are marked.
    An hour already pending gets the new ``marked_at``, so a rollup running on
    it now does not delete its mark (see :func:`rollup_pending_run`).
    """
    sql, params = rollup_pending_mark_statement(node_id=node_id, first_ts=first_ts, last_ts=last_ts, now=now)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
    return len(params) // 3


def rollup_pending_mark_statement(
    *, node_id: int, first_ts: datetime, last_ts: datetime, now: datetime | None = None
) -> tuple[str, list[Any]]:
    """The statement of :func:`rollup_pending_mark`, for a caller that runs it with others (ingest).

    ``now`` (the mark's time) defaults to the current time.
    """
    gap = timedelta(seconds=max(settings.TELEMETRY_GPU_MAX_GAP_S, settings.TELEMETRY_SERVING_MAX_GAP_S))
    first_s = energy.hour_start_s_of((first_ts - gap).timestamp())
    last_s = energy.hour_start_s_of((last_ts + gap).timestamp())
    # In hour order, so concurrent ingests of one node lock the rows in the same order.
    hours = range(first_s, last_s + 1, energy.HOUR_S)
    # One plain upsert (PostgreSQL and SQLite alike): it runs in every ingest request.
    adapt = connection.ops.adapt_datetimefield_value
    params = [value for hour in hours for value in (node_id, adapt(_utc(hour)), adapt(now or timezone.now()))]
    sql = (
        f'INSERT INTO "{RollupPending._meta.db_table}" (node_id, hour_start, marked_at) '  # noqa: S608
        f"VALUES {', '.join(['(%s, %s, %s)'] * len(hours))} "
        "ON CONFLICT (node_id, hour_start) DO UPDATE SET marked_at = excluded.marked_at"
    )
    return sql, params


# --- computing one node's hours ----------------------------------------------------


def rollup_node_hours(*, node_id: int, hour_starts: list[datetime]) -> int:
    """Recompute and replace the usage of the node's GPUs and endpoints for ``hour_starts``.

    Rows of GPUs and endpoints that now have no data in an hour are deleted.
    Each hour where a row was written or deleted is marked in ``UsageChanged``.
    ``hour_starts``: aware datetimes on UTC hours, with the hours of any gap
    that reaches into them (a counter may bridge it: see ``_hours_across_gaps``).
    Returns the usage rows written. Raises :class:`telemetry.parking.ColumnRangeError`
    for a value no column can hold.
    """
    hours_s = hours_validated(_hour_s(h) for h in hour_starts)
    if not hours_s:
        return 0
    requested, extra = set(hours_s), set(_hours_across_gaps(node_id, hours_s))
    computed_at = timezone.now()
    while True:
        hours_s = hours_validated([*requested, *extra])
        try:
            gpu_rows = _gpu_usage_rows(node_id, hours_s, computed_at)
            endpoint_rows = _endpoint_usage_rows(node_id, hours_s, computed_at)
            break
        except energy.CounterImpossible as error:
            # An impossible interval in a gap's hour that was not asked for is that hour's to park (its
            # samples marked it), not these hours': leave it out and compute the rest.
            if error.hours & requested or not error.hours & extra:
                raise
            extra -= error.hours
    # A sum past its column (counters glitching near 2**63) is refused here, naming the column,
    # rather than by the database mid-transaction; the caller parks the hour.
    columns_fit([*gpu_rows, *endpoint_rows])
    with transaction.atomic():
        changed = _usage_replace(GpuHourUsage, "gpu", gpu_rows, node_id, hours_s)
        changed |= _usage_replace(EndpointHourUsage, "endpoint", endpoint_rows, node_id, hours_s)
        changed |= node_meter_usage_replace(node_id=node_id, hour_runs=_hour_runs(hours_s), computed_at=computed_at)
        _usage_changed_mark(node_id, changed, computed_at)
        gpu_installations_refresh(node_id=node_id, now=computed_at)
    return len(gpu_rows) + len(endpoint_rows)


def _hour_runs(hours_s: Sequence[int]) -> list[list[int]]:
    """Sorted hours cut into runs of consecutive hours: each run is read and computed as one window."""
    runs: list[list[int]] = []
    for hour in hours_s:
        if runs and hour == runs[-1][-1] + energy.HOUR_S:
            runs[-1].append(hour)
        else:
            runs.append([hour])
    return runs


def _ts_within(windows: list[tuple[float, float]]) -> Q:
    condition = Q()
    for first_s, last_s in windows:
        condition |= Q(ts__gte=_utc(first_s), ts__lte=_utc(last_s))
    return condition


@dataclass(frozen=True)
class _Source:
    """How to read and compute one kind of owner (GPU or endpoint) of one node."""

    samples: models.QuerySet[Any]  # the raw table's rows of the node (every read names it: its key leads with it)
    columns: tuple[str, ...]  # (owner, ts, ...): what ``point`` takes
    max_gap_s: float
    point: Callable[[tuple[Any, ...]], Any]
    usage: Callable[[list[Any], list[int], int], Iterable[Any]]  # (points, hour run, owner) -> pure usage per hour
    label: str  # how an error names an owner: "GPU", "endpoint"

    def nearest(self, owner_id: int, at_s: float, *, later: bool, inclusive: bool = False) -> Any:
        """The owner's row nearest ``at_s`` (before it, or ``later``), within the bridge limit; or None.

        The far end of a gap a counter may bridge: one indexed lookup on (owner, ts).
        """
        at, bridge = _utc(at_s), timedelta(seconds=settings.TELEMETRY_MAX_BRIDGE_S)
        rows = self.samples.filter(**{self.columns[0]: owner_id})
        if later:
            rows = rows.filter(ts__gte=at) if inclusive else rows.filter(ts__gt=at)
            rows = rows.filter(ts__lte=at + bridge).order_by("ts")
        else:
            rows = rows.filter(ts__lte=at) if inclusive else rows.filter(ts__lt=at)
            rows = rows.filter(ts__gte=at - bridge).order_by("-ts")
        return rows.values_list(*self.columns).first()


def _gpu_source(node_id: int) -> _Source:
    gap_s = settings.TELEMETRY_GPU_MAX_GAP_S
    return _Source(
        samples=GpuSample.objects.filter(node_id=node_id),
        columns=_GPU_COLUMNS,
        max_gap_s=gap_s,
        point=_gpu_point,
        usage=lambda points, run, _: energy.gpu_usage_by_hour(
            points, hour_starts_s=run, max_gap_s=gap_s, max_bridge_s=settings.TELEMETRY_MAX_BRIDGE_S
        ),
        label="GPU",
    )


def _hours_across_gaps(node_id: int, hours_s: Sequence[int]) -> list[int]:
    """The hours outside ``hours_s`` that a gap reaching into them covers.

    Samples that change ``hours_s`` may open, close or split a gap that a
    counter bridges, and such a gap spreads its increase over every hour it
    covers: those hours are recomputed with these. Per owner and run of
    hours, the gap across each end of the run (the samples nearest the
    boundary on either side, more than the max gap apart) is looked up: one
    statement per kind of owner (``telemetry.nearest``).
    """
    extra: set[int] = set()
    kinds = (
        (GpuSample, "gpu_id", settings.TELEMETRY_GPU_MAX_GAP_S, Gpu.objects.filter(node_id=node_id)),
        (ServingSample, "endpoint_id", settings.TELEMETRY_SERVING_MAX_GAP_S,
         ServingEndpoint.objects.filter(node_id=node_id)),
    )  # fmt: skip
    runs = _hour_runs(hours_s)
    for model, owner_column, max_gap_s, owners in kinds:
        boundaries = [
            (owner_id, _utc(boundary_s))
            for owner_id in owners.values_list("id", flat=True)
            for run in runs
            for boundary_s in (run[0], run[-1] + energy.HOUR_S)
        ]
        probes = [Probe(owner_id, at, later=later, inclusive=later) for owner_id, at in boundaries
                  for later in (False, True)]  # fmt: skip
        found = nearest_rows(model, node_id=node_id, owner_column=owner_column, columns=(), probes=probes)
        for before, after in zip(found[::2], found[1::2], strict=True):
            extra |= _gap_hours(before, after, max_gap_s)
    return sorted(extra - set(hours_s))


def _gap_hours(before: tuple[Any, ...] | None, after: tuple[Any, ...] | None, max_gap_s: float) -> set[int]:
    """The hours of the gap between the samples either side of a boundary (``(ts, ...)``), if one is longer
    than the max gap."""
    if before is None or after is None:
        return set()
    start_s, end_s = before[0].timestamp(), after[0].timestamp()
    if end_s - start_s <= max_gap_s:
        return set()
    return set(range(energy.hour_start_s_of(start_s), energy.hour_start_s_of(end_s) + 1, energy.HOUR_S))


def _owner_usage(source: _Source, owner_ids: list[int], hours_s: Sequence[int]) -> list[tuple[int, Any]]:
    """``(owner, pure usage)`` for each requested hour with data (a sample in it, or observed time).

    One query for every owner, ordered by owner and time; each run of hours is
    computed from the samples of its own window, as the pure functions require.
    """
    runs = _hour_runs(hours_s)
    windows = [energy.sample_window_s(run, max_gap_s=source.max_gap_s) for run in runs]
    rows = source.samples.filter(_ts_within(windows), **{f"{source.columns[0]}__in": owner_ids})
    by_owner = {
        owner: [source.point(row) for row in owner_rows]
        for owner, owner_rows in groupby(rows.order_by(*source.columns[:2]).values_list(*source.columns), itemgetter(0))
    }
    usages: list[tuple[int, Any]] = []
    for owner in sorted(owner_ids):
        points = by_owner.get(owner, [])
        sample_hours = {energy.hour_start_s_of(p.ts_s) for p in points}
        for run, (first_s, last_s) in zip(runs, windows, strict=True):
            # The window's samples and the far ends of gaps a counter may bridge into it.
            ends = (source.nearest(owner, first_s, later=False), source.nearest(owner, last_s, later=True))
            window = [p for p in points if first_s <= p.ts_s <= last_s]
            try:
                usage = source.usage([*window, *(source.point(row) for row in ends if row is not None)], run, owner)
            except energy.CounterImpossible as error:  # the hour is parked, naming the owner
                raise error.owned(f"{source.label} {owner}") from None
            usages += [(owner, u) for u in usage if u.observed_s + u.bridged_s > 0 or u.hour_start_s in sample_hours]
    return usages


def _gpu_point(row: tuple[Any, ...]) -> energy.GpuPoint:
    _, ts, epoch_id, energy_j, power_w, util_pct, mem_util_pct, mem_used_mib, temp_c = row
    mem_used_bytes = None if mem_used_mib is None else mem_used_mib * _MIB  # raw rows keep whole MiB
    return energy.GpuPoint(
        ts.timestamp(), str(epoch_id), energy_j, power_w, util_pct, mem_util_pct, mem_used_bytes, temp_c
    )


def _gpu_usage_rows(node_id: int, hours_s: Sequence[int], computed_at: datetime) -> list[GpuHourUsage]:
    gpu_ids = list(Gpu.objects.filter(node_id=node_id).values_list("id", flat=True))
    return [
        _gpu_usage_model(node_id, gpu_id, usage, computed_at)
        for gpu_id, usage in _gpu_usages(node_id, gpu_ids, hours_s)
    ]


def _gpu_usages(node_id: int, gpu_ids: list[int], hours_s: Sequence[int]) -> list[tuple[int, energy.GpuHourUsage]]:
    """``(gpu, pure usage)`` per hour with data. On PostgreSQL computed in the database, no sample read
    into Python objects (``telemetry.rollup_sql``: columns into numpy, equal to the pure function to the last
    bit); elsewhere by it."""
    gap_s = settings.TELEMETRY_GPU_MAX_GAP_S
    if connection.vendor == "postgresql" and gap_s <= rollup_sql.MAX_GAP_S:
        runs = _hour_runs(hours_s)
        usages = rollup_sql.gpu_usage_by_hour_sql(
            node_id=node_id,
            gpu_ids=gpu_ids,
            hour_runs=runs,
            max_gap_s=gap_s,
            max_bridge_s=settings.TELEMETRY_MAX_BRIDGE_S,
        )
        if usages is not None:
            return usages
        logger.warning(
            "GPUs %s store a reading that stands for NULL in the SQL rollup; hours computed in Python", gpu_ids
        )
    return _gpu_usages_python(node_id, gpu_ids, hours_s)


def _gpu_usages_python(
    node_id: int, gpu_ids: list[int], hours_s: Sequence[int]
) -> list[tuple[int, energy.GpuHourUsage]]:
    return _owner_usage(_gpu_source(node_id), gpu_ids, hours_s)


def _gpu_usage_model(node_id: int, gpu_id: int, usage: energy.GpuHourUsage, computed_at: datetime) -> GpuHourUsage:
    values = {name: getattr(usage, name) for name in _value_fields(GpuHourUsage) if name != "computed_at"}
    values["energy_method"] = usage.energy_method.value
    return GpuHourUsage(
        node_id=node_id, gpu_id=gpu_id, hour_start=_utc(usage.hour_start_s), computed_at=computed_at, **values
    )


# Per endpoint epoch: its TTFT and inter-token latency histograms' bounds.
_EpochBounds = dict[int, tuple[tuple[float, ...], tuple[float, ...]]]


def _serving_source(node_id: int, bounds: _EpochBounds, gpus: dict[int, int]) -> _Source:
    """``gpus``: per endpoint epoch, the GPUs it served from (its counters' bounds scale with them). A sample is
    bounded by its own epoch's: an increase is counted up in the epoch of the reading that ends it (across two
    epochs, a restart: the new reading), whatever GPUs the endpoint serves from now."""
    gap_s = settings.TELEMETRY_SERVING_MAX_GAP_S
    counter_bounds = {str(epoch_id): wire.serving_bounds(count) for epoch_id, count in gpus.items()}
    return _Source(
        samples=ServingSample.objects.filter(node_id=node_id),
        columns=_SERVING_COLUMNS,
        max_gap_s=gap_s,
        point=lambda row: _serving_point(row, bounds),
        usage=lambda points, run, _: energy.endpoint_usage_by_hour(
            points,
            hour_starts_s=run,
            max_gap_s=gap_s,
            max_bridge_s=settings.TELEMETRY_MAX_BRIDGE_S,
            epoch_bounds=counter_bounds,
        ),
        label="endpoint",
    )


def _endpoint_usage_rows(node_id: int, hours_s: Sequence[int], computed_at: datetime) -> list[EndpointHourUsage]:
    endpoint_ids = list(ServingEndpoint.objects.filter(node_id=node_id).values_list("id", flat=True))
    epochs = EndpointEpoch.objects.filter(endpoint_id__in=endpoint_ids).values_list(
        "id", "ttft_bucket_bounds_s", "itl_bucket_bounds_s", "gpu_count"
    )
    bounds: _EpochBounds = {}
    gpus: dict[int, int] = {}
    for epoch_id, ttft_s, itl_s, gpu_count in epochs:
        bounds[epoch_id], gpus[epoch_id] = (tuple(ttft_s), tuple(itl_s)), gpu_count
    usages = _owner_usage(_serving_source(node_id, bounds, gpus), endpoint_ids, hours_s)
    return [_endpoint_usage_model(node_id, endpoint_id, usage, computed_at) for endpoint_id, usage in usages]


def _serving_point(row: tuple[Any, ...], bounds: _EpochBounds) -> energy.ServingPoint:
    _, ts, epoch_id, prompt, generation, requests, ttft_cumulative, cached, ttft_sum_s, itl_cumulative, itl_sum_s = row
    ttft_bounds, itl_bounds = bounds[epoch_id]
    ttft = None if ttft_cumulative is None else histogram_from_cumulative(ttft_bounds, ttft_cumulative)
    # ITL bounds are set on an epoch once (stored before its collector sent them: rows of none then).
    itl = None
    if itl_cumulative is not None and len(itl_cumulative) == len(itl_bounds) + 1:
        itl = histogram_from_cumulative(itl_bounds, itl_cumulative)
    return energy.ServingPoint(
        ts.timestamp(), str(epoch_id), prompt, generation, requests, ttft, cached,
        ttft_sum_s, itl, None if itl is None else itl_sum_s,
    )  # fmt: skip


# An endpoint-hour's histograms are stored as their bucket bounds and counts; its other values as the hour's usage.
_HISTOGRAM_COLUMNS = {"ttft_bucket_bounds_s", "ttft_bucket_counts", "itl_bucket_bounds_s", "itl_bucket_counts"}


def _endpoint_usage_model(
    node_id: int, endpoint_id: int, usage: energy.EndpointHourUsage, computed_at: datetime
) -> EndpointHourUsage:
    copied = [name for name in _value_fields(EndpointHourUsage) if name not in {*_HISTOGRAM_COLUMNS, "computed_at"}]
    return EndpointHourUsage(
        node_id=node_id,
        endpoint_id=endpoint_id,
        hour_start=_utc(usage.hour_start_s),
        ttft_bucket_bounds_s=list(usage.ttft.bounds_s) if usage.ttft else [],
        ttft_bucket_counts=list(usage.ttft.counts) if usage.ttft else None,
        itl_bucket_bounds_s=list(usage.itl.bounds_s) if usage.itl else [],
        itl_bucket_counts=list(usage.itl.counts) if usage.itl else None,
        computed_at=computed_at,
        **{name: getattr(usage, name) for name in copied},
    )


# --- replacing rows -----------------------------------------------------------------


def _value_fields(model: type[models.Model]) -> list[str]:
    return [f.name for f in model._meta.concrete_fields if f.name not in _KEY_FIELDS]


def _usage_replace(
    model: type[GpuHourUsage | EndpointHourUsage], owner: str, rows: list[Any], node_id: int, hours_s: Sequence[int]
) -> set[datetime]:
    """Upsert ``rows`` and delete the node's other rows of these hours; return the hours touched.

    Every statement names the node (on Citus: its shard alone)."""
    hour_starts = [_utc(h) for h in hours_s]
    written = {(getattr(row, f"{owner}_id"), row.hour_start) for row in rows}
    of_node = model.objects.filter(node_id=node_id)
    existing = of_node.filter(hour_start__in=hour_starts).values_list("pk", f"{owner}_id", "hour_start")
    stale = [(pk, hour) for pk, owner_id, hour in existing if (owner_id, hour) not in written]
    if stale:
        of_node.filter(pk__in=[pk for pk, _ in stale]).delete()
    model.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["node", owner, "hour_start"], update_fields=_value_fields(model)
    )
    return {hour for _, hour in written} | {hour for _, hour in stale}


def _usage_changed_mark(node_id: int, hours: set[datetime], now: datetime) -> None:
    rows = [UsageChanged(node_id=node_id, hour_start=hour, changed_at=now) for hour in sorted(hours)]
    UsageChanged.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["node", "hour_start"], update_fields=["changed_at"]
    )


# --- the queue ------------------------------------------------------------------------


def rollup_pending_run(*, now: datetime, limit: int = 500) -> int:
    """Roll up node-hours marked at or before ``now``, up to ``limit`` of them; return how many were done.

    Each node's hours (up to ``HOURS_PER_CLAIM``) are claimed, computed and
    unmarked in one transaction: on PostgreSQL the claimed rows stay locked, so
    another worker skips them (``SKIP LOCKED``) and an ingest re-marking one waits
    for the commit, then marks it afresh; on SQLite the database lock serializes
    all of it. An hour whose data fails to compute is parked (``telemetry.parking``):
    it stays marked, and the queue skips it until its retry time, so it never holds
    back another node's hours.
    """
    return queue_run(_ROLLUP_QUEUE, now=now, limit=limit)


_ROLLUP_QUEUE = NodeHourQueue(
    model=RollupPending,
    stage=NodeHourStage.ROLLUP,
    # Oldest marks first, so no hour starves behind hours that keep being re-marked.
    node_order=("marked_at", "pk"),
    hour_order=("marked_at", "hour_start"),
    per_claim=HOURS_PER_CLAIM,
    compute=lambda node_id, hours: rollup_node_hours(node_id=node_id, hour_starts=hours),
)
