"""``batch_ingest``: store one collector batch, atomically and idempotently.

The node comes from the caller (its token), never from the batch. Rows are
keyed by (GPU, ts) and (endpoint, ts); a row already stored is counted as a
duplicate and left as it is, so a re-sent batch changes nothing. Samples older
than retention are skipped and reported as rejected; everything else either
goes in with the batch or not at all. The hours that new samples change are
marked for the hourly rollup in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from fleets.models import Gpu, Node
from telemetry.collector.wire import Batch, EndpointRef, GpuRef, WireError
from telemetry.models import CollectorStatus, EndpointEpoch, GpuEpoch, ServingEndpoint
from telemetry.partitions import partitions_ensure
from telemetry.rawstore import GPU_COLUMNS, SERVING_COLUMNS, rows_insert
from telemetry.rollup import rollup_pending_mark


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


def batch_ingest(*, node: Node, batch: Batch, received_at: datetime) -> IngestResult:
    """Validate what needs the database, then store the batch in one transaction."""
    _check_not_future(batch, received_at)
    oldest_s = (received_at - timedelta(days=settings.TELEMETRY_RETENTION_DAYS)).timestamp()
    result = IngestResult()
    # Partitions first, in their own commit: DDL inside the batch's transaction
    # would hold a lock on the parent table until the batch commits.
    partitions_ensure(days=_batch_days(batch, oldest_s))
    with transaction.atomic():
        gpu_ids = _gpus_resolve(node, batch.gpus)
        gpu_epoch_ids = _gpu_epochs_resolve(batch.gpus, gpu_ids)
        endpoint_ids, endpoint_epoch_ids = _endpoints_resolve(node, batch.endpoints, gpu_ids)
        gpu_rows = _gpu_rows(batch, gpu_ids, gpu_epoch_ids, oldest_s)
        serving_rows = _serving_rows(batch, endpoint_ids, endpoint_epoch_ids, oldest_s)
        _skipped_report(result, "gpu_samples", batch.gpu_row_count - len(gpu_rows))
        _skipped_report(result, "serving_samples", batch.serving_row_count - len(serving_rows))
        _insert(result, "gpu_samples", GPU_COLUMNS, gpu_rows)
        _insert(result, "serving_samples", SERVING_COLUMNS, serving_rows)
        _rollup_mark(node, result, gpu_rows, serving_rows)
        _status_update(node, batch, received_at)
    return result


def _check_not_future(batch: Batch, received_at: datetime) -> None:
    limit_s = received_at.timestamp() + settings.TELEMETRY_MAX_FUTURE_S
    newest = max([*batch.gpu_samples["ts"], *batch.serving_samples["ts"]], default=0.0)
    if newest > limit_s:
        ahead = newest - received_at.timestamp()
        raise WireError(
            f"a sample is {ahead:.0f} s ahead of the server's clock (limit {settings.TELEMETRY_MAX_FUTURE_S} s); "
            "check the host's clock",
            status=422,
        )


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


def _endpoints_resolve(
    node: Node, refs: Sequence[EndpointRef], gpu_ids: dict[str, int]
) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    node_gpu_ids = dict(Gpu.objects.filter(node=node).values_list("uuid", "id")) | gpu_ids
    endpoint_ids: dict[str, int] = {}
    epoch_ids: dict[tuple[str, str], int] = {}
    for ref in refs:
        unknown = [u for u in ref.gpu_uuids if u not in node_gpu_ids]
        if unknown:
            raise WireError(
                f"endpoint {ref.url} names GPUs that are not on this node: {', '.join(unknown)}", status=422
            )
        endpoint = _endpoint_upsert(node, ref, [node_gpu_ids[u] for u in ref.gpu_uuids])
        endpoint_ids[ref.url] = endpoint.pk
        epoch, _ = EndpointEpoch.objects.get_or_create(
            endpoint=endpoint, epoch=ref.epoch, defaults={"ttft_bucket_bounds_s": list(ref.ttft_bucket_bounds_s)}
        )
        if epoch.ttft_bucket_bounds_s != list(ref.ttft_bucket_bounds_s):
            raise WireError(f"endpoint {ref.url} changed its TTFT buckets within epoch {ref.epoch!r}", status=422)
        epoch_ids[(ref.url, ref.epoch)] = epoch.pk
    return endpoint_ids, epoch_ids


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


def _gpu_rows(batch: Batch, gpu_ids: dict[str, int], epoch_ids: dict[tuple[str, str], int], oldest_s: float) -> list:
    cols = batch.gpu_samples
    refs = [(gpu_ids[r.uuid], epoch_ids[(r.uuid, r.epoch)]) for r in batch.gpus]
    return [
        (_utc(ts), *refs[ref], energy, mem, power, util, mem_util, temp)
        for ref, ts, energy, mem, power, util, mem_util, temp in zip(
            cols["gpu"], cols["ts"], cols["energy_j"], cols["mem_used_bytes"], cols["power_w"],
            cols["util_pct"], cols["mem_util_pct"], cols["temp_c"], strict=True,
        )
        if ts >= oldest_s
    ]  # fmt: skip


def _serving_rows(
    batch: Batch, endpoint_ids: dict[str, int], epoch_ids: dict[tuple[str, str], int], oldest_s: float
) -> list:
    cols = batch.serving_samples
    refs = [(endpoint_ids[r.url], epoch_ids[(r.url, r.epoch)]) for r in batch.endpoints]
    return [
        (_utc(ts), *refs[ref], prompt, generation, requests, buckets, ttft_sum)
        for ref, ts, prompt, generation, requests, buckets, ttft_sum in zip(
            cols["endpoint"], cols["ts"], cols["prompt_tokens"], cols["generation_tokens"], cols["requests"],
            cols["ttft_bucket_counts"], cols["ttft_sum_s"], strict=True,
        )
        if ts >= oldest_s
    ]  # fmt: skip


def _batch_days(batch: Batch, oldest_s: float) -> set[date]:
    stamps = (*batch.gpu_samples["ts"], *batch.serving_samples["ts"])
    return {_utc(day_s).date() for day_s in {ts - ts % 86400 for ts in stamps if ts >= oldest_s}}


def _skipped_report(result: IngestResult, kind: str, count: int) -> None:
    if count:
        reason = f"older than the {settings.TELEMETRY_RETENTION_DAYS}-day retention"
        result.rejected.append({"kind": kind, "rows": count, "reason": reason})


def _insert(result: IngestResult, kind: str, columns: Sequence[str], rows: list) -> None:
    if not rows:
        return
    stored = rows_insert(kind=kind, columns=columns, rows=rows)
    result.stored[kind] = stored
    result.duplicates[kind] = len(rows) - stored


def _rollup_mark(node: Node, result: IngestResult, gpu_rows: list, serving_rows: list) -> None:
    """Mark for the hourly rollup the hours that newly stored samples change; a pure re-send marks nothing."""
    kinds = (("gpu_samples", gpu_rows), ("serving_samples", serving_rows))
    stored = [rows for kind, rows in kinds if result.stored[kind]]
    if not stored:
        return
    # A partial re-send marks the span of the whole kind: which rows were new is not known here.
    stamps = [row[0] for rows in stored for row in rows]
    rollup_pending_mark(node_id=node.pk, first_ts=min(stamps), last_ts=max(stamps), now=timezone.now())


def _status_update(node: Node, batch: Batch, received_at: datetime) -> None:
    newest = max([*batch.gpu_samples["ts"], *batch.serving_samples["ts"]], default=None)
    info = batch.collector
    values = {
        "last_report_at": received_at,
        "collector_version": info.version,
        "reported_hostname": info.hostname,
        "dropped_batches": info.dropped_batches,
        "spool_bytes": info.spool_bytes,
        "sample_interval_s": info.sample_interval_s,
    }
    status, _ = CollectorStatus.objects.get_or_create(node=node, defaults={"last_report_at": received_at})
    update: dict[str, Any] = {**values, "batches_accepted": F("batches_accepted") + 1}
    if newest is not None:
        # A backfill of old data must not make the node look stale: newest only moves forward.
        newest_at = _utc(newest)
        update["newest_sample_at"] = Greatest(Coalesce(F("newest_sample_at"), Value(newest_at)), Value(newest_at))
        update["lag_s"] = max(0.0, received_at.timestamp() - newest)
    CollectorStatus.objects.filter(pk=status.pk).update(**update)
