"""Which GPUs are installed in a node, and since when: hardware changes read from the samples themselves.

A GPU is installed from its first sample; the node's original cards (those
in the first set it reported) from its commissioning, when that is earlier:
they were there before the collector first ran. It is ended at the time it was last
seen when the node is known to run without it:

- at once, when the node reports a different set (a GPU of the node first
  seen after this one's last sample, by more than the max gap: a swapped card);
- otherwise when the node has gone on reporting without it for longer than
  ``TELEMETRY_GPU_GONE_AFTER_S`` (a card lost or pulled). A node that reports
  nothing at all ends nothing: that is a silent collector, not a hardware change.

A GPU that is reported again after its end is the same GPU (keyed by its UUID,
with its asset) in a new installation from its first sample after the end.
Each change marks the node's hours from the change on for the ledger, which
charges only GPUs installed in an hour.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings

from fleets.models import Gpu, GpuEnded, GpuInstallation
from telemetry.models import GpuHourUsage, GpuSample, UsageChanged
from telemetry.nearest import Probe, nearest_rows

HOUR = timedelta(hours=1)


def gpu_installations_refresh(*, node_id: int, now: datetime) -> list[GpuInstallation]:
    """Open and end the node's GPU installations as its samples show; return the installations changed."""
    gpus = list(Gpu.objects.filter(node_id=node_id).select_related("node"))
    # Each GPU's newest and first sample, in one statement (telemetry.nearest), and its latest installation.
    probes = [Probe(gpu.pk, None, later=first) for first in (False, True) for gpu in gpus]
    found = [None if row is None else row[0] for row in nearest_rows(
        GpuSample, node_id=node_id, owner_column="gpu_id", columns=(), probes=probes
    )]  # fmt: skip
    last_seen = {gpu.pk: ts for gpu, ts in zip(gpus, found[: len(gpus)], strict=True)}
    first_seen = {gpu.pk: ts for gpu, ts in zip(gpus, found[len(gpus) :], strict=True)}
    latest = {
        row.gpu_id: row for row in GpuInstallation.objects.filter(gpu__in=gpus).order_by("gpu_id", "installed_at")
    }
    # The new installations in one statement (on Citus a reference table's: each statement a round on every worker).
    changed = GpuInstallation.objects.bulk_create(
        [row for gpu in gpus if (row := _opened(gpu, last_seen[gpu.pk], latest.get(gpu.pk), first_seen)) is not None]
    )
    open_rows = list(GpuInstallation.objects.filter(gpu__node_id=node_id, ended_at__isnull=True))
    node_newest = max((seen for seen in last_seen.values() if seen is not None), default=None)
    for row in open_rows:
        reason = _end_reason(row, last_seen[row.gpu_id], node_newest, open_rows)
        if reason is not None:
            row.ended_at, row.ended_reason = last_seen[row.gpu_id], reason
            row.save(update_fields=["ended_at", "ended_reason"])
            changed.append(row)
    if changed:
        _ledger_hours_mark(node_id, min(_changed_at(row) for row in changed), now)
    return changed


def _sample_ts(gpu: Gpu, *, after: datetime | None = None) -> datetime | None:
    """The GPU's first (or first after ``after``) sample time: one lookup on the (node, gpu, ts) key."""
    rows = GpuSample.objects.filter(node_id=gpu.node_id, gpu_id=gpu.pk)
    if after is not None:
        rows = rows.filter(ts__gt=after)
    return rows.order_by("ts").values_list("ts", flat=True).first()


def _opened(
    gpu: Gpu, last_seen: datetime | None, latest: GpuInstallation | None, first_seen: dict[int, datetime | None]
) -> GpuInstallation | None:
    """A new installation of ``gpu`` (its first, or its return after ``latest`` ended), not saved yet, or None.
    ``first_seen``: each of the node's GPUs' first sample."""
    if last_seen is None:
        return None
    if latest is None:
        since = _first_installed_at(gpu, first_seen)
    elif latest.ended_at is not None and last_seen > latest.ended_at:
        since = _sample_ts(gpu, after=latest.ended_at)
    else:
        return None
    return GpuInstallation(gpu=gpu, installed_at=since or last_seen)


def _first_installed_at(gpu: Gpu, first_seen: dict[int, datetime | None]) -> datetime | None:
    """A GPU's first sample; for one of the node's original cards, the node's commissioning if earlier."""
    first = first_seen[gpu.pk]
    firsts = [ts for ts in first_seen.values() if ts is not None]
    commissioned = gpu.node.commissioned_at
    if first is None or commissioned is None or not in_first_set(first, min(firsts)):
        return first
    return min(first, commissioned)


def in_first_set(first_at: datetime, node_first_at: datetime) -> bool:
    """Whether a GPU first seen (or first installed) at ``first_at`` is one of its node's original cards: within
    the sampling gap of the node's first GPU (``node_first_at``), not a card swapped in or added later."""
    return first_at - node_first_at <= timedelta(seconds=settings.TELEMETRY_GPU_MAX_GAP_S)


def _end_reason(
    row: GpuInstallation, last_seen: datetime | None, node_newest: datetime | None, open_rows: list[GpuInstallation]
) -> str | None:
    if last_seen is None or node_newest is None:
        return None
    # A card first seen after this one was last (beyond sampling jitter): the node reports a different set.
    after = last_seen + timedelta(seconds=settings.TELEMETRY_GPU_MAX_GAP_S)
    if any(other.gpu_id != row.gpu_id and other.installed_at > after for other in open_rows):
        return GpuEnded.REPLACED
    if node_newest - last_seen > timedelta(seconds=settings.TELEMETRY_GPU_GONE_AFTER_S):
        return GpuEnded.MISSING
    return None


def _changed_at(row: GpuInstallation) -> datetime:
    return row.ended_at or row.installed_at


def _ledger_hours_mark(node_id: int, since: datetime, now: datetime) -> None:
    """Mark the node's hours with usage from the change's hour on: the ledger recomputes them."""
    hour = since.replace(minute=0, second=0, microsecond=0)
    hours = (
        GpuHourUsage.objects.filter(node_id=node_id, hour_start__gte=hour)
        .values_list("hour_start", flat=True)
        .order_by()
        .distinct()
    )
    UsageChanged.objects.bulk_create(
        [UsageChanged(node_id=node_id, hour_start=h, changed_at=now) for h in sorted(set(hours))],
        update_conflicts=True,
        unique_fields=["node", "hour_start"],
        update_fields=["changed_at"],
    )


def installations_in_hour(rows: list[GpuInstallation], start: datetime, end: datetime) -> timedelta:
    """How long, within ``[start, end)``, the installations ``rows`` (of one GPU) cover."""
    covered = timedelta(0)
    for row in rows:
        stretch_end = row.ended_at if row.ended_at is not None else end
        covered += max(min(stretch_end, end) - max(row.installed_at, start), timedelta(0))
    return covered
