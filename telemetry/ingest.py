"""``batch_ingest``: store one collector batch, atomically and idempotently.

The node comes from the caller (its token), never from the batch. Rows are
keyed by (GPU, ts), (endpoint, ts) and, for node meter readings, (node, ts); a
row already stored is counted as a duplicate and left as it is, so a re-sent
batch changes nothing (two rows with one key inside a batch are refused by the
wire format). Samples older than retention are skipped and reported as rejected;
everything else either goes in with the batch or not at all. The hours that new
samples (meter readings included) change are marked for the hourly rollup in the
same transaction.

A collector's steady state (known GPUs, endpoints and epochs) costs one read
for the GPUs, one for the endpoints, one ``INSERT`` per sample kind, the
collector status and the rollup mark, and one read per sample kind of the last
stored sample of each GPU and endpoint (``telemetry.continuity``: its counters bound the
batch's first readings): a handful of statements whatever the batch size. A node meter
adds its ``INSERT`` and, where it reads energy, one read of its last stored reading.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from fleets.models import Gpu, Node
from telemetry.collector.backend import EndpointIdentity, GpuIdentity
from telemetry.collector.wire import Batch, WireError, ts_datetime
from telemetry.continuity import node_meter_steps_check, stored_steps_check
from telemetry.models import CollectorStatus, EndpointEpoch, GpuEpoch, ServingEndpoint
from telemetry.node_meter import node_meter_store
from telemetry.partitions import partitions_ensure
from telemetry.rawstore import GPU_COLUMNS, SERVING_COLUMNS, rows_insert
from telemetry.rollup import rollup_pending_mark

KINDS = ("gpu_samples", "serving_samples")
NODE_METER = "node_meter"  # counted in an answer only when the batch has a node meter


@dataclass
class IngestResult:
    stored: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    duplicates: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    rejected: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self, batch_id: str) -> dict[str, Any]:
        return {"batch_id": batch_id, "stored": self.stored, "duplicates": self.duplicates, "rejected": self.rejected}


class ForeignGpu(WireError):
    """The batch names a GPU registered to another node."""

    def __init__(self, uuid: str) -> None:
        super().__init__(f"GPU {uuid} is registered to another node; this token may only report its own", status=403)


def batch_ingest(*, node: Node, batch: Batch, received_at: datetime) -> IngestResult:
    """Check what needs the clock and the database, then store the batch in one transaction."""
    oldest = received_at - timedelta(days=settings.TELEMETRY_RETENTION_DAYS)
    gpu_samples = _kept(batch.gpu_samples, oldest)
    serving_samples = _kept(batch.serving_samples, oldest)
    meter = _kept(_meter_columns(batch.node_meter), oldest)
    stamps = [*gpu_samples["at"], *serving_samples["at"]]
    _check_not_future([*stamps, *meter["at"]], received_at)
    result = IngestResult()
    _skipped_report(result, "gpu_samples", batch.gpu_row_count - len(gpu_samples["at"]))
    _skipped_report(result, "serving_samples", batch.serving_row_count - len(serving_samples["at"]))
    # Partitions first, in their own commit: DDL inside the batch's transaction
    # would hold a lock on the parent table until the batch commits. (Meter readings are not partitioned.)
    partitions_ensure(days={at.date() for at in stamps})
    with transaction.atomic():
        gpu_refs, endpoint_refs = _gpu_refs(node, batch.gpus), _endpoint_refs(node, batch.endpoints)
        stored_steps_check(
            node_id=node.pk, batch=batch, gpu_samples=gpu_samples, gpu_refs=gpu_refs,
            serving_samples=serving_samples, endpoint_refs=endpoint_refs,
        )  # fmt: skip
        rows = {
            "gpu_samples": _gpu_rows(node.pk, gpu_samples, gpu_refs),
            "serving_samples": _serving_rows(node.pk, serving_samples, endpoint_refs),
        }
        for kind, columns in (("gpu_samples", GPU_COLUMNS), ("serving_samples", SERVING_COLUMNS)):
            result.stored[kind] = rows_insert(kind=kind, columns=columns, rows=rows[kind])
            result.duplicates[kind] = len(rows[kind]) - result.stored[kind]
        if batch.node_meter is not None:
            _meter_store(result, node, batch.node_meter, meter)
        _status_record(node, batch, received_at, newest=max(stamps, default=None))
        if any(result.stored.values()):  # a re-send marks nothing; a partial one, its whole span
            spanned = [*stamps, *meter["at"]]
            rollup_pending_mark(node_id=node.pk, first_ts=min(spanned), last_ts=max(spanned), now=timezone.now())
    return result


def _meter_columns(node_meter: dict[str, Any] | None) -> dict[str, list[Any]]:
    """The meter's columns (none without a meter)."""
    return {name: [] if node_meter is None else node_meter[name] for name in ("ts", "power_w", "energy_j")}


def _meter_store(result: IngestResult, node: Node, node_meter: dict[str, Any], meter: dict[str, list[Any]]) -> None:
    """Check the batch's meter readings against the node's stored ones, store them, and count them in ``result``
    (which then has a ``node_meter`` count, as only a batch with a meter does)."""
    node_meter_steps_check(node_id=node.pk, epoch=node_meter["epoch"], readings=meter)
    stored = node_meter_store(node_id=node.pk, method=node_meter["method"], epoch=node_meter["epoch"], readings=meter)
    result.stored[NODE_METER], result.duplicates[NODE_METER] = stored, len(meter["at"]) - stored
    _skipped_report(result, NODE_METER, len(node_meter["ts"]) - len(meter["at"]))


def _kept(columns: dict[str, list[Any]], oldest: datetime) -> dict[str, list[Any]]:
    """The columns without the rows older than retention, with ``at``: each row's stored timestamp."""
    stamps = list(map(ts_datetime, columns["ts"]))
    if not stamps or min(stamps) >= oldest:
        return {**columns, "at": stamps}
    keep = [at >= oldest for at in stamps]
    return {name: list(itertools.compress(column, keep)) for name, column in {**columns, "at": stamps}.items()}


def _check_not_future(stamps: list[datetime], received_at: datetime) -> None:
    limit = received_at + timedelta(seconds=settings.TELEMETRY_MAX_FUTURE_S)
    newest = max(stamps, default=received_at)
    if newest > limit:
        ahead = (newest - received_at).total_seconds()
        raise WireError(
            f"a sample is {ahead:.0f} s ahead of the server's clock (limit {settings.TELEMETRY_MAX_FUTURE_S} s); "
            "check the host's clock",
            status=422,
        )


def _skipped_report(result: IngestResult, kind: str, count: int) -> None:
    if count:
        reason = f"older than the {settings.TELEMETRY_RETENTION_DAYS}-day retention"
        result.rejected.append({"kind": kind, "rows": count, "reason": reason})


# --- GPUs and endpoints: found in one read when known, else added or refreshed ----------------


def _gpu_refs(node: Node, refs: Sequence[GpuIdentity]) -> list[tuple[int, int]]:
    """``(gpu id, epoch id)`` per entry of ``refs``: one read when every GPU is this node's, unchanged,
    and every epoch known (a collector's steady state); else :func:`_gpu_refs_resolve` writes or refuses.

    The read is written as SQL (by the node first: its few GPUs by index, whatever the fleet's size):
    it runs on every request, and compiling the ORM's query cost several times the CPU of running it.
    """
    if not refs:
        return []
    uuids, epochs = sorted({ref.uuid for ref in refs}), sorted({ref.epoch for ref in refs})
    gpu, epoch = Gpu._meta.db_table, GpuEpoch._meta.db_table
    sql = (
        f'SELECT g.uuid, e.epoch, g.id, e.id, g."index", g.name, g.energy_counter_supported '  # noqa: S608
        f'FROM "{gpu}" g JOIN "{epoch}" e ON e.gpu_id = g.id WHERE g.node_id = %s '
        f"AND g.uuid IN ({', '.join(['%s'] * len(uuids))}) AND e.epoch IN ({', '.join(['%s'] * len(epochs))})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [node.pk, *uuids, *epochs])
        found = {(row[0], row[1]): row[2:] for row in cursor.fetchall()}
    known = []
    for ref in refs:
        row = found.get((ref.uuid, ref.epoch))
        if row is None or row[2:] != (ref.index, ref.name, ref.energy_counter_supported):  # SQLite: 1 == True
            return _gpu_refs_resolve(node, refs)
        known.append((row[0], row[1]))
    return known


def _gpu_refs_resolve(node: Node, refs: Sequence[GpuIdentity]) -> list[tuple[int, int]]:
    """``(gpu id, epoch id)`` per entry of ``refs``, adding GPUs and epochs first seen and refreshing changed GPUs."""
    gpu_ids = _gpus_resolve(node, refs)
    wanted = {(gpu_ids[ref.uuid], ref.epoch) for ref in refs}
    GpuEpoch.objects.bulk_create([GpuEpoch(gpu_id=g, epoch=e) for g, e in wanted], ignore_conflicts=True)
    rows = GpuEpoch.objects.filter(gpu_id__in=gpu_ids.values(), epoch__in={e for _, e in wanted})
    epoch_ids = {(r.gpu_id, r.epoch): r.id for r in rows}
    return [(gpu_ids[ref.uuid], epoch_ids[(gpu_ids[ref.uuid], ref.epoch)]) for ref in refs]


def _gpus_resolve(node: Node, refs: Sequence[GpuIdentity]) -> dict[str, int]:
    """Map each UUID to its Gpu id, adding new GPUs to the node's inventory on first report."""
    latest = {ref.uuid: ref for ref in refs}  # the last declaration of a UUID wins
    existing = {gpu.uuid: gpu for gpu in Gpu.objects.filter(uuid__in=latest)}
    for gpu in existing.values():
        if gpu.node_id != node.pk:
            raise ForeignGpu(gpu.uuid)
    new = [
        Gpu(node=node, uuid=u, index=r.index, name=r.name, energy_counter_supported=r.energy_counter_supported)
        for u, r in latest.items()
        if u not in existing
    ]
    Gpu.objects.bulk_create(new, ignore_conflicts=True)
    changed = [g for g in existing.values() if _gpu_refresh(g, latest[g.uuid])]
    if changed:
        Gpu.objects.bulk_update(changed, ["index", "name", "energy_counter_supported"])
    gpu_ids = dict(Gpu.objects.filter(uuid__in=latest, node=node).values_list("uuid", "id"))
    if len(gpu_ids) < len(latest):  # added by another node in the meantime
        raise ForeignGpu(next(uuid for uuid in latest if uuid not in gpu_ids))
    return gpu_ids


def _gpu_refresh(gpu: Gpu, ref: GpuIdentity) -> bool:
    fresh = (ref.index, ref.name, ref.energy_counter_supported)
    if (gpu.index, gpu.name, gpu.energy_counter_supported) == fresh:
        return False
    gpu.index, gpu.name, gpu.energy_counter_supported = fresh
    return True


def _endpoint_refs(node: Node, refs: Sequence[EndpointIdentity]) -> list[tuple[int, int]]:
    """``(endpoint id, epoch id)`` per entry of ``refs``: one read when every endpoint (node, URL, model) and
    epoch is stored and unchanged (kind, GPUs, buckets); else :func:`_endpoints_resolve` writes or refuses.

    The read returns a row per epoch and GPU of its endpoint (an endpoint without GPUs: one, with none).
    """
    if not refs:
        return []
    stored = EndpointEpoch.objects.filter(
        endpoint__node=node,
        endpoint__url__in={ref.url for ref in refs},
        endpoint__model_name__in={ref.model for ref in refs},
        epoch__in={ref.epoch for ref in refs},
    ).values_list(
        "endpoint__url", "endpoint__model_name", "epoch", "endpoint_id", "id", "endpoint__kind",
        "ttft_bucket_bounds_s", "itl_bucket_bounds_s", "gpu_count", "endpoint__gpus__uuid",
    )  # fmt: skip
    found: dict[tuple[str, str, str], tuple[Any, ...]] = {}
    gpus: dict[int, list[str]] = {}  # by epoch id
    for url, model, epoch, endpoint_id, epoch_id, kind, ttft, itl, gpu_count, gpu_uuid in stored:
        found[(url, model, epoch)] = (endpoint_id, epoch_id, kind, ttft, itl, gpu_count)
        gpus.setdefault(epoch_id, [])
        if gpu_uuid is not None:
            gpus[epoch_id].append(gpu_uuid)
    known = []
    for ref in refs:
        row = found.get((ref.url, ref.model, ref.epoch))
        fresh = (ref.kind, sorted(ref.gpu_uuids), list(ref.ttft_bucket_bounds_s), list(ref.itl_bucket_bounds_s))
        if row is None or (row[2], sorted(gpus[row[1]]), row[3], row[4]) != fresh or row[5] < len(ref.gpu_uuids):
            return _endpoints_resolve(node, refs)
        known.append((row[0], row[1]))
    return known


def _endpoints_resolve(node: Node, refs: Sequence[EndpointIdentity]) -> list[tuple[int, int]]:
    """``(endpoint id, epoch id)`` per entry of ``refs``, adding or refreshing endpoints and epochs."""
    node_gpu_ids = dict(Gpu.objects.filter(node=node).values_list("uuid", "id"))
    resolved: list[tuple[int, int]] = []
    for ref in refs:
        unknown = [u for u in ref.gpu_uuids if u not in node_gpu_ids]
        if unknown:
            raise WireError(
                f"endpoint {ref.url} names GPUs that are not on this node: {', '.join(unknown)}", status=422
            )
        endpoint = _endpoint_upsert(node, ref, [node_gpu_ids[u] for u in ref.gpu_uuids])
        ttft, itl, gpu_count = list(ref.ttft_bucket_bounds_s), list(ref.itl_bucket_bounds_s), len(ref.gpu_uuids)
        epoch, _ = EndpointEpoch.objects.get_or_create(
            endpoint=endpoint,
            epoch=ref.epoch,
            defaults={"ttft_bucket_bounds_s": ttft, "itl_bucket_bounds_s": itl, "gpu_count": gpu_count},
        )
        if epoch.gpu_count < gpu_count:
            # Declared on more GPUs than before in this epoch: the rollup bounds the epoch's samples by the most
            # it was declared on, so none the door took under a declaration parks its hour.
            EndpointEpoch.objects.filter(pk=epoch.pk, gpu_count__lt=gpu_count).update(gpu_count=gpu_count)
        if epoch.ttft_bucket_bounds_s != ttft:
            raise WireError(f"endpoint {ref.url} changed its TTFT buckets within epoch {ref.epoch!r}", status=422)
        if epoch.itl_bucket_bounds_s != itl:
            if epoch.itl_bucket_bounds_s:  # set once: an epoch stored before its collector sent ITL gets them
                raise WireError(f"endpoint {ref.url} changed its ITL buckets within epoch {ref.epoch!r}", status=422)
            epoch.itl_bucket_bounds_s = itl
            epoch.save(update_fields=["itl_bucket_bounds_s"])
        resolved.append((endpoint.pk, epoch.pk))
    return resolved


def _endpoint_upsert(node: Node, ref: EndpointIdentity, gpu_ids: list[int]) -> ServingEndpoint:
    endpoint, created = ServingEndpoint.objects.get_or_create(
        node=node, url=ref.url, model_name=ref.model, defaults={"kind": ref.kind}
    )
    if not created and endpoint.kind != ref.kind:
        endpoint.kind = ref.kind
        endpoint.save(update_fields=["kind"])
    if created or set(endpoint.gpus.values_list("id", flat=True)) != set(gpu_ids):
        endpoint.gpus.set(gpu_ids)
    return endpoint


# --- rows, built column-wise (C-level ``map``/``zip``: no Python call per sample) ---------------


def _gpu_rows(node_id: int, cols: dict[str, list[Any]], refs: list[tuple[int, int]]) -> list[tuple[Any, ...]]:
    gpu_ids, epoch_ids = [ref[0] for ref in refs], [ref[1] for ref in refs]
    return list(zip(
        itertools.repeat(node_id, len(cols["at"])), cols["at"], map(gpu_ids.__getitem__, cols["gpu"]),
        map(epoch_ids.__getitem__, cols["gpu"]),
        cols["energy_j"], map(_mib, cols["mem_used_bytes"]), cols["power_w"], cols["util_pct"],
        cols["mem_util_pct"], cols["temp_c"], strict=True,
    ))  # fmt: skip


def _mib(value: int | None) -> int | None:
    """Bytes to whole MiB, rounded (raw rows keep memory in MiB: 4 bytes, not 8)."""
    return None if value is None else (value + _HALF_MIB) >> 20


_HALF_MIB = 1 << 19


def _serving_rows(node_id: int, cols: dict[str, list[Any]], refs: list[tuple[int, int]]) -> list[tuple[Any, ...]]:
    endpoint_ids, epoch_ids = [ref[0] for ref in refs], [ref[1] for ref in refs]
    return list(zip(
        itertools.repeat(node_id, len(cols["at"])), cols["at"], map(endpoint_ids.__getitem__, cols["endpoint"]),
        map(epoch_ids.__getitem__, cols["endpoint"]),
        cols["prompt_tokens"], cols["generation_tokens"], cols["requests"], cols["ttft_bucket_counts"],
        cols["ttft_sum_s"], cols["cached_prompt_tokens"], cols["itl_bucket_counts"], cols["itl_sum_s"], strict=True,
    ))  # fmt: skip


def _status_record(node: Node, batch: Batch, received_at: datetime, *, newest: datetime | None) -> None:
    """Record what the batch says about its collector (its newest sample: ``newest``): one upsert."""
    info = batch.collector
    # A backfill of old data must not make the node look stale: newest only moves forward.
    lag_s = None if newest is None else max(0.0, (received_at - newest).total_seconds())
    table = CollectorStatus._meta.db_table
    sql = (
        f'INSERT INTO "{table}" (node_id, last_report_at, collector_version, reported_hostname, '  # noqa: S608
        "dropped_batches, spool_bytes, sample_interval_s, batches_accepted, newest_sample_at, lag_s) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, 1, %s, CAST(%s AS double precision)) "
        "ON CONFLICT (node_id) DO UPDATE SET last_report_at = excluded.last_report_at, "
        "collector_version = excluded.collector_version, reported_hostname = excluded.reported_hostname, "
        "dropped_batches = excluded.dropped_batches, spool_bytes = excluded.spool_bytes, "
        "sample_interval_s = excluded.sample_interval_s, "
        f'batches_accepted = "{table}".batches_accepted + 1, '
        f'newest_sample_at = CASE WHEN excluded.newest_sample_at IS NULL OR "{table}".newest_sample_at '
        f'>= excluded.newest_sample_at THEN "{table}".newest_sample_at ELSE excluded.newest_sample_at END, '
        f'lag_s = COALESCE(excluded.lag_s, "{table}".lag_s)'
    )
    at = connection.ops.adapt_datetimefield_value
    params = [
        node.pk, at(received_at), info.version, info.hostname, info.dropped_batches, info.spool_bytes,
        info.sample_interval_s, at(newest), lag_s,
    ]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
