"""``batch_ingest``: store one collector batch, atomically and idempotently.

The node comes from the caller (its token), never from the batch. Rows are
keyed by (GPU, ts) and (endpoint, ts); a row already stored is counted as a
duplicate and left as it is, so a re-sent batch changes nothing. Samples older
than retention are skipped and reported as rejected; everything else either
goes in with the batch or not at all. The hours that new samples change are
marked for the hourly rollup in the same transaction.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import orjson
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from config.postgresql import prepared
from fleets.models import Gpu, Node
from fleets.services import credential_check_statement
from telemetry.collector.wire import Batch, EndpointRef, GpuRef, WireError
from telemetry.models import CollectorStatus, EndpointEpoch, GpuEpoch, ServingEndpoint
from telemetry.node_meter import node_meter_store
from telemetry.partitions import partitions_ensure
from telemetry.rawstore import (
    GPU_COLUMNS,
    SERVING_COLUMNS,
    RowsAlreadyStored,
    gpu_rows_copy,
    gpu_rows_copy_payload,
    rows_insert,
)
from telemetry.rollup import rollup_pending_mark, rollup_pending_mark_statement


@dataclass
class IngestResult:
    stored: dict[str, int] = field(default_factory=lambda: {"gpu_samples": 0, "serving_samples": 0})
    duplicates: dict[str, int] = field(default_factory=lambda: {"gpu_samples": 0, "serving_samples": 0})
    rejected: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self, batch_id: str) -> dict[str, Any]:
        return {"batch_id": batch_id, "stored": self.stored, "duplicates": self.duplicates, "rejected": self.rejected}


class ForeignGpu(WireError):
    """The batch names a GPU registered to another node."""

    def __init__(self, uuid: str) -> None:
        super().__init__(f"GPU {uuid} is registered to another node; this token may only report its own", status=403)


class TokenRefused(Exception):
    """The token checked in the batch's transaction is unknown or revoked: nothing was stored."""


def batch_ingest(*, node: Node, batch: Batch, received_at: datetime, token_digest: str | None = None) -> IngestResult:
    """Validate what needs the database, then store the batch in one transaction.

    The hot path (known GPUs and epochs, new samples) costs a few round trips
    whatever the batch size: one for the GPU lookup, the collector status and the
    rollup mark together (a pipeline on PostgreSQL), a binary COPY per sample
    kind, the last with the commit. A re-sent batch (rows already stored) is
    rolled back and stored again the careful way, skipping the stored rows and
    marking the rollup only if something was new.

    ``token_digest``: the caller has not checked the node's token against the
    database (it knows it from an earlier request); it is checked in the batch's
    own transaction, with the lookups, and :class:`TokenRefused` is raised, with
    nothing stored, unless it is active and ``node``'s.
    """
    bounds = _ts_bounds(batch)
    _check_not_future(bounds, received_at)
    oldest_s = (received_at - timedelta(days=settings.TELEMETRY_RETENTION_DAYS)).timestamp()
    # Partitions first, in their own commit: DDL inside the batch's transaction
    # would hold a lock on the parent table until the batch commits.
    partitions_ensure(days=_batch_days(batch, bounds, oldest_s))
    store = functools.partial(_batch_store, node, batch, received_at, oldest_s, bounds, token_digest)
    if connection.vendor != "postgresql":  # INSERT OR IGNORE: stored rows are skipped, never refused
        return store(new_rows_expected=False)
    try:
        return store(new_rows_expected=True)
    except RowsAlreadyStored:
        # A re-sent batch: the first try is rolled back whole; again, skipping the stored rows.
        return store(new_rows_expected=False)


def _batch_store(
    node: Node,
    batch: Batch,
    received_at: datetime,
    oldest_s: float,
    bounds: tuple[float, float] | None,
    token_digest: str | None,
    *,
    new_rows_expected: bool,
) -> IngestResult:
    result = IngestResult()
    if bounds is None or bounds[0] >= oldest_s:  # nothing older than retention (the usual case)
        gpu_columns, serving_columns, kept_bounds = batch.gpu_samples, batch.serving_samples, bounds
    else:
        gpu_columns, serving_columns = _kept(batch.gpu_samples, oldest_s), _kept(batch.serving_samples, oldest_s)
        kept_bounds = _ts_span(gpu_columns["ts"], serving_columns["ts"])
    with transaction.atomic():
        # Statements that need nothing from one another, in one round trip. The rollup mark goes
        # ahead of the rows only when every row is expected to be new: if one is not, the COPY
        # fails and all this is rolled back.
        statements = [_status_statement(node, batch, received_at, newest_s=None if bounds is None else bounds[1])]
        if token_digest is not None:  # first: the token's check, whose refusal undoes the rest
            statements.insert(0, credential_check_statement(digest=token_digest, now=received_at))
        if new_rows_expected and kept_bounds is not None:
            first_ts, last_ts = _utc(kept_bounds[0]), _utc(kept_bounds[1])
            statements.append(rollup_pending_mark_statement(node_id=node.pk, first_ts=first_ts, last_ts=last_ts))
        lookups = {}
        if batch.gpus:
            lookups["gpus"] = len(statements)
            statements.append(_gpu_lookup_statement(node, batch.gpus))
        if batch.endpoints and connection.vendor == "postgresql":
            lookups["endpoints"] = len(statements)
            statements.append(_endpoint_lookup_statement(node, batch.endpoints))
        answers = prepared.run_together(statements)
        if token_digest is not None and [row[1] for row in answers[0]] != [node.pk]:
            raise TokenRefused
        known = _gpu_refs_known(node, batch.gpus, answers[lookups["gpus"]] if "gpus" in lookups else [])
        gpu_refs = known if known is not None else _gpu_refs_resolve(node, batch.gpus)
        serving_refs: list[tuple[int, int]] = []
        if batch.endpoints:
            rows = answers[lookups["endpoints"]] if "endpoints" in lookups else None
            known = None if rows is None else _endpoint_refs_known(batch.endpoints, rows)
            serving_refs = known if known is not None else _endpoints_resolve(node, batch.endpoints)
        serving_rows = _serving_rows(serving_columns, serving_refs)
        _skipped_report(result, "gpu_samples", batch.gpu_row_count - len(gpu_columns["ts"]))
        _skipped_report(result, "serving_samples", batch.serving_row_count - len(serving_rows))
        arrays = batch.gpu_arrays if gpu_columns is batch.gpu_samples else {}  # not if retention dropped rows
        payload = _gpu_payload(gpu_columns, gpu_refs, arrays) if new_rows_expected and gpu_columns["ts"] else None
        gpu_rows: list[tuple[Any, ...]] = []
        if payload is None:
            gpu_rows = _gpu_rows(gpu_columns, gpu_refs)
            _insert(result, "gpu_samples", GPU_COLUMNS, gpu_rows, new_rows_expected)
        _insert(result, "serving_samples", SERVING_COLUMNS, serving_rows, new_rows_expected)
        if batch.node_meter is not None:
            node_meter_store(node_id=node.pk, node_meter=batch.node_meter, oldest_s=oldest_s)
        if payload is not None:  # the common case: new rows, no NULL; built from the columns by numpy
            # Last in the transaction: the COMMIT goes in the same round trip.
            result.stored["gpu_samples"] = gpu_rows_copy(payload, rows=len(gpu_columns["ts"]), last_in_transaction=True)
        if not new_rows_expected:
            _rollup_mark(node, result, gpu_rows, serving_rows)
    return result


def _ts_span(*stamps: list[float]) -> tuple[float, float] | None:
    """The first and last of the batch's kept timestamps (``None`` when there is none)."""
    present = [column for column in stamps if column]
    if not present:
        return None
    return min(map(min, present)), max(map(max, present))


def _ts_bounds(batch: Batch) -> tuple[float, float] | None:
    """The first and last timestamps of the batch's samples, GPU and serving together (``None`` if none)."""
    ends: list[float] = []
    gpu_ts = batch.gpu_arrays.get("ts")
    if gpu_ts is not None and len(gpu_ts):
        ends += (float(gpu_ts.min()), float(gpu_ts.max()))
    elif batch.gpu_samples["ts"]:
        ends += (min(batch.gpu_samples["ts"]), max(batch.gpu_samples["ts"]))
    if batch.serving_samples["ts"]:
        ends += (min(batch.serving_samples["ts"]), max(batch.serving_samples["ts"]))
    return (min(ends), max(ends)) if ends else None


def _check_not_future(bounds: tuple[float, float] | None, received_at: datetime) -> None:
    limit_s = received_at.timestamp() + settings.TELEMETRY_MAX_FUTURE_S
    newest = 0.0 if bounds is None else bounds[1]
    if newest > limit_s:
        ahead = newest - received_at.timestamp()
        raise WireError(
            f"a sample is {ahead:.0f} s ahead of the server's clock (limit {settings.TELEMETRY_MAX_FUTURE_S} s); "
            "check the host's clock",
            status=422,
        )


def _gpu_lookup_statement(node: Node, refs: Sequence[GpuRef]) -> prepared.Statement:
    """The node's stored GPUs and epochs that ``refs`` name (for :func:`_gpu_refs_known`).

    By the node first: its few GPUs by index, whatever the size of the fleet (a GPU
    of another node is not found, and the slow path refuses it).
    """
    gpu, epoch = Gpu._meta.db_table, GpuEpoch._meta.db_table
    uuids = sorted({ref.uuid for ref in refs})
    epochs = sorted({ref.epoch for ref in refs})
    return (
        f'SELECT g.uuid, g.id, g.node_id, g."index", g.name, g.energy_counter_supported, e.epoch, e.id '  # noqa: S608
        f'FROM "{gpu}" g JOIN "{epoch}" e ON e.gpu_id = g.id WHERE g.node_id = %s '
        f"AND g.uuid IN ({', '.join(['%s'] * len(uuids))}) AND e.epoch IN ({', '.join(['%s'] * len(epochs))})",
        [node.pk, *uuids, *epochs],
    )


def _gpu_refs_known(node: Node, refs: Sequence[GpuRef], rows: list[tuple[Any, ...]]) -> list[tuple[int, int]] | None:
    """``(gpu id, epoch id)`` per entry of ``refs`` from the lookup's ``rows``, when every GPU is this node's,
    unchanged, and every epoch known (a collector's steady state); ``None`` when anything is to write or refuse."""
    found = {(row[0], row[6]): row for row in rows}
    known = []
    for ref in refs:
        row = found.get((ref.uuid, ref.epoch))
        fresh = (node.pk, ref.index, ref.name, ref.energy_counter_supported)
        if row is None or row[2:6] != fresh:
            return None
        known.append((row[1], row[7]))
    return known


def _gpu_refs_resolve(node: Node, refs: Sequence[GpuRef]) -> list[tuple[int, int]]:
    """``(gpu id, epoch id)`` per entry of ``refs``, adding GPUs and epochs first seen and refreshing changed GPUs."""
    gpu_ids = _gpus_resolve(node, refs)
    epoch_ids = _gpu_epochs_resolve(refs, gpu_ids)
    return [(gpu_ids[ref.uuid], epoch_ids[(ref.uuid, ref.epoch)]) for ref in refs]


def _gpus_resolve(node: Node, refs: Sequence[GpuRef]) -> dict[str, int]:
    """Map each UUID to its Gpu id, adding new GPUs to the node's inventory on first report."""
    uuids = {ref.uuid for ref in refs}
    existing = {gpu.uuid: gpu for gpu in Gpu.objects.filter(uuid__in=uuids)}
    for gpu in existing.values():
        if gpu.node_id != node.pk:
            raise ForeignGpu(gpu.uuid)
    latest = {ref.uuid: ref for ref in refs}  # the last declaration of a UUID wins
    new = [
        Gpu(node=node, uuid=u, index=r.index, name=r.name, energy_counter_supported=r.energy_counter_supported)
        for u, r in latest.items()
        if u not in existing
    ]
    Gpu.objects.bulk_create(new, ignore_conflicts=True)
    changed = [g for g in existing.values() if _gpu_refresh(g, latest[g.uuid])]
    if changed:
        Gpu.objects.bulk_update(changed, ["index", "name", "energy_counter_supported"])
    return dict(Gpu.objects.filter(uuid__in=uuids, node=node).values_list("uuid", "id"))


def _gpu_refresh(gpu: Gpu, ref: GpuRef) -> bool:
    fresh = (ref.index, ref.name, ref.energy_counter_supported)
    if (gpu.index, gpu.name, gpu.energy_counter_supported) == fresh:
        return False
    gpu.index, gpu.name, gpu.energy_counter_supported = fresh
    return True


def _gpu_epochs_resolve(refs: Sequence[GpuRef], gpu_ids: dict[str, int]) -> dict[tuple[str, str], int]:
    if len(gpu_ids) < len({ref.uuid for ref in refs}):
        raise ForeignGpu(next(ref.uuid for ref in refs if ref.uuid not in gpu_ids))
    wanted = {(gpu_ids[ref.uuid], ref.epoch) for ref in refs}
    GpuEpoch.objects.bulk_create([GpuEpoch(gpu_id=g, epoch=e) for g, e in wanted], ignore_conflicts=True)
    by_gpu = {gpu_id: uuid for uuid, gpu_id in gpu_ids.items()}
    rows = GpuEpoch.objects.filter(gpu_id__in=gpu_ids.values(), epoch__in={e for _, e in wanted})
    return {(by_gpu[r.gpu_id], r.epoch): r.id for r in rows}


def _endpoint_lookup_statement(node: Node, refs: Sequence[EndpointRef]) -> prepared.Statement:
    """The node's stored endpoints and epochs that ``refs`` name, each with its GPUs' UUIDs (PostgreSQL)."""
    endpoint, epoch, gpu = ServingEndpoint._meta.db_table, EndpointEpoch._meta.db_table, Gpu._meta.db_table
    links = ServingEndpoint.gpus.through._meta.db_table
    urls = sorted({ref.url for ref in refs})
    epochs = sorted({ref.epoch for ref in refs})
    return (
        f"SELECT s.url, s.id, s.kind, s.model_name, e.epoch, e.id, e.ttft_bucket_bounds_s, "  # noqa: S608
        f'ARRAY(SELECT g.uuid FROM "{links}" m JOIN "{gpu}" g ON g.id = m.gpu_id '
        f"WHERE m.servingendpoint_id = s.id ORDER BY g.uuid) "
        f'FROM "{endpoint}" s JOIN "{epoch}" e ON e.endpoint_id = s.id WHERE s.node_id = %s '
        f"AND s.url IN ({', '.join(['%s'] * len(urls))}) AND e.epoch IN ({', '.join(['%s'] * len(epochs))})",
        [node.pk, *urls, *epochs],
    )


def _endpoint_refs_known(refs: Sequence[EndpointRef], rows: list[tuple[Any, ...]]) -> list[tuple[int, int]] | None:
    """``(endpoint id, epoch id)`` per entry of ``refs`` from the lookup's ``rows``, when every endpoint and
    epoch is stored and unchanged (kind, model, GPUs, TTFT buckets); ``None`` when anything is to write or
    refuse (then :func:`_endpoints_resolve` does it, with its checks and messages)."""
    found = {(row[0], row[4]): row for row in rows}
    known = []
    for ref in refs:
        row = found.get((ref.url, ref.epoch))
        if row is None:
            return None
        bounds = orjson.loads(row[6]) if isinstance(row[6], str | bytes) else row[6]
        stored = (row[2], row[3], list(row[7]), bounds)
        if stored != (ref.kind, ref.model, sorted(ref.gpu_uuids), list(ref.ttft_bucket_bounds_s)):
            return None
        known.append((row[1], row[5]))
    return known


def _endpoints_resolve(node: Node, refs: Sequence[EndpointRef]) -> list[tuple[int, int]]:
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
        epoch, _ = EndpointEpoch.objects.get_or_create(
            endpoint=endpoint, epoch=ref.epoch, defaults={"ttft_bucket_bounds_s": list(ref.ttft_bucket_bounds_s)}
        )
        if epoch.ttft_bucket_bounds_s != list(ref.ttft_bucket_bounds_s):
            raise WireError(f"endpoint {ref.url} changed its TTFT buckets within epoch {ref.epoch!r}", status=422)
        resolved.append((endpoint.pk, epoch.pk))
    return resolved


def _endpoint_upsert(node: Node, ref: EndpointRef, gpu_ids: list[int]) -> ServingEndpoint:
    endpoint, created = ServingEndpoint.objects.get_or_create(
        node=node, url=ref.url, defaults={"kind": ref.kind, "model_name": ref.model}
    )
    if not created and (endpoint.kind, endpoint.model_name) != (ref.kind, ref.model):
        endpoint.kind, endpoint.model_name = ref.kind, ref.model
        endpoint.save(update_fields=["kind", "model_name"])
    if created or set(endpoint.gpus.values_list("id", flat=True)) != set(gpu_ids):
        endpoint.gpus.set(gpu_ids)
    return endpoint


def _utc(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


_utc_fast = functools.partial(datetime.fromtimestamp, tz=UTC)  # _utc without a Python frame per call


def _kept(columns: dict[str, list[Any]], oldest_s: float) -> dict[str, list[Any]]:
    """The columns without the rows older than retention (the same columns when none is)."""
    stamps = columns["ts"]
    if not stamps or min(stamps) >= oldest_s:
        return columns
    keep = [ts >= oldest_s for ts in stamps]
    return {name: list(itertools.compress(column, keep)) for name, column in columns.items()}


# Rows are built column-wise, with C-level ``map``/``zip``: no Python call per sample
# but the datetime of each timestamp (which the binary COPY needs).


def _gpu_rows(cols: dict[str, list[Any]], refs: list[tuple[int, int]]) -> list[tuple[Any, ...]]:
    gpu_ids = [ref[0] for ref in refs]
    epoch_ids = [ref[1] for ref in refs]
    return list(zip(
        map(_utc_fast, cols["ts"]), map(gpu_ids.__getitem__, cols["gpu"]), map(epoch_ids.__getitem__, cols["gpu"]),
        cols["energy_j"], _mib(cols["mem_used_bytes"]), cols["power_w"], cols["util_pct"], cols["mem_util_pct"],
        cols["temp_c"], strict=True,
    ))  # fmt: skip


def _gpu_payload(cols: dict[str, list[Any]], refs: list[tuple[int, int]], arrays: dict[str, Any]) -> bytes | None:
    """The rows of :func:`_gpu_rows` as one binary COPY payload (PostgreSQL; ``None`` if a value is NULL).

    ``arrays``: the columns decoding already turned into numpy arrays (``Batch.gpu_arrays``).
    """
    if connection.vendor != "postgresql":
        return None
    memory = arrays.get("mem_used_bytes")
    if memory is None:
        if None in cols["mem_used_bytes"]:
            return None
        memory = np.asarray(cols["mem_used_bytes"], dtype=np.int64)
    which = arrays["gpu"] if "gpu" in arrays else np.asarray(cols["gpu"], dtype=np.intp)
    ids = np.asarray(refs, dtype=np.int64).reshape(-1, 2)
    values: dict[str, Any] = {
        name: arrays.get(name, cols[name]) for name in ("energy_j", "power_w", "util_pct", "mem_util_pct", "temp_c")
    }
    values["mem_used_mib"] = (memory + _HALF_MIB) >> 20
    return gpu_rows_copy_payload(
        ts_s=arrays.get("ts", cols["ts"]), gpu_ids=ids[which, 0], epoch_ids=ids[which, 1], values=values
    )


def _mib(column: list[int | None]) -> list[int | None]:
    """Bytes to whole MiB, rounded (raw rows keep memory in MiB: 4 bytes, not 8)."""
    return [None if value is None else (value + _HALF_MIB) >> 20 for value in column]


_HALF_MIB = 1 << 19


def _serving_rows(cols: dict[str, list[Any]], refs: list[tuple[int, int]]) -> list[tuple[Any, ...]]:
    endpoint_ids = [ref[0] for ref in refs]
    epoch_ids = [ref[1] for ref in refs]
    return list(zip(
        map(_utc_fast, cols["ts"]), map(endpoint_ids.__getitem__, cols["endpoint"]),
        map(epoch_ids.__getitem__, cols["endpoint"]), cols["prompt_tokens"], cols["generation_tokens"],
        cols["requests"], cols["ttft_bucket_counts"], cols["ttft_sum_s"], strict=True,
    ))  # fmt: skip


def _batch_days(batch: Batch, bounds: tuple[float, float] | None, oldest_s: float) -> set[date]:
    """The UTC days of the batch's samples within retention."""
    if bounds is None:
        return set()
    first, last = _utc(bounds[0]).date(), _utc(bounds[1]).date()
    if bounds[0] >= oldest_s and (last - first).days <= 1:  # the usual case: one day, or two
        return {first, last}
    stamps = (*batch.gpu_samples["ts"], *batch.serving_samples["ts"])
    return {_utc(day_s).date() for day_s in {ts - ts % 86400 for ts in stamps if ts >= oldest_s}}


def _skipped_report(result: IngestResult, kind: str, count: int) -> None:
    if count:
        reason = f"older than the {settings.TELEMETRY_RETENTION_DAYS}-day retention"
        result.rejected.append({"kind": kind, "rows": count, "reason": reason})


def _insert(result: IngestResult, kind: str, columns: Sequence[str], rows: list, new_rows_expected: bool) -> None:
    if not rows:
        return
    stored = rows_insert(kind=kind, columns=columns, rows=rows, new_rows_expected=new_rows_expected)
    result.stored[kind] = stored
    result.duplicates[kind] = len(rows) - stored


def _rollup_mark(node: Node, result: IngestResult, gpu_rows: list, serving_rows: list) -> None:
    """Mark for the hourly rollup the hours that newly stored samples change; a pure re-send marks nothing."""
    kinds = (("gpu_samples", gpu_rows), ("serving_samples", serving_rows))
    stored = [rows for kind, rows in kinds if result.stored[kind]]
    if not stored:
        return
    # A partial re-send marks the span of the whole kind: which rows were new is not known here.
    first = min(min(rows, key=_row_ts)[0] for rows in stored)
    last = max(max(rows, key=_row_ts)[0] for rows in stored)
    rollup_pending_mark(node_id=node.pk, first_ts=first, last_ts=last, now=timezone.now())


_row_ts = operator.itemgetter(0)


def _status_statement(node: Node, batch: Batch, received_at: datetime, *, newest_s: float | None) -> prepared.Statement:
    """Record what the batch says about its collector (its newest sample: ``newest_s``): one upsert."""
    newest = newest_s
    info = batch.collector
    newest_at = None if newest is None else _utc(newest)
    # A backfill of old data must not make the node look stale: newest only moves forward.
    lag_s = None if newest is None else max(0.0, received_at.timestamp() - newest)
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
        info.sample_interval_s, at(newest_at), lag_s,
    ]  # fmt: skip
    return sql, params
