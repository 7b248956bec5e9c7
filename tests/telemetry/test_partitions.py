"""Daily partitions ahead of time, and raw samples past retention removed (dropped on PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from telemetry.models import GpuEpoch, GpuSample
from telemetry.partitions import partitions_ensure, partitions_existing, partitions_maintain, retention_apply
from telemetry.rawstore import GPU_COLUMNS, rows_insert
from telemetry.tasks import partitions_maintain_task
from tests.helpers.factories import GpuFactory

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="partitions exist on PostgreSQL only")


def insert_samples(gpu, *stamps):
    epoch = GpuEpoch.objects.create(gpu=gpu, epoch="e1")
    partitions_ensure(days={ts.date() for ts in stamps})
    rows = [(gpu.node_id, ts, gpu.pk, epoch.pk, 1.0, 0, 100.0, 50, 10, 40) for ts in stamps]
    return rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)


@postgres_only
@pytest.mark.django_db
def test_maintenance_creates_a_partition_per_day_from_retention_to_ahead(settings):
    partitions_maintain(now=NOW)

    days = partitions_existing(table=GpuSample._meta.db_table)
    assert days[0] == (NOW - timedelta(days=settings.TELEMETRY_RETENTION_DAYS)).date()
    assert days[-1] == (NOW + timedelta(days=settings.TELEMETRY_PARTITIONS_AHEAD_DAYS)).date()
    assert len(days) == settings.TELEMETRY_RETENTION_DAYS + settings.TELEMETRY_PARTITIONS_AHEAD_DAYS + 1


@postgres_only
@pytest.mark.django_db
def test_maintenance_is_idempotent():
    partitions_maintain(now=NOW)
    again = partitions_maintain(now=NOW)

    assert again["created"] == 0


@pytest.mark.django_db
def test_retention_removes_only_samples_past_the_limit():
    gpu = GpuFactory()
    old, recent = NOW - timedelta(days=40), NOW - timedelta(days=2)
    assert insert_samples(gpu, old, old + timedelta(seconds=1), recent) == 3

    retention_apply(now=NOW, retention_days=30)

    assert list(GpuSample.objects.values_list("ts", flat=True)) == [recent]


@postgres_only
@pytest.mark.django_db
def test_retention_drops_whole_partitions():
    gpu = GpuFactory()
    insert_samples(gpu, NOW - timedelta(days=40), NOW - timedelta(days=2))

    removed = retention_apply(now=NOW, retention_days=30)

    assert removed[GpuSample._meta.db_table] == 1
    assert (NOW - timedelta(days=40)).date() not in partitions_existing(table=GpuSample._meta.db_table)


@pytest.mark.celery_worker
def test_the_beat_task_runs_on_a_real_worker(celery_worker_process, transactional_db, settings):
    result = partitions_maintain_task.delay().get(timeout=60)

    if connection.vendor != "postgresql":
        assert result["created"] == 0 and set(result["removed"]) == {"telemetry_gpusample", "telemetry_servingsample"}
        return
    # Earlier tests may have created some of these days already: what matters is that all exist now.
    today = datetime.now(UTC).date()
    wanted = {
        today + timedelta(days=offset)
        for offset in range(-settings.TELEMETRY_RETENTION_DAYS, settings.TELEMETRY_PARTITIONS_AHEAD_DAYS + 1)
    }
    assert wanted <= set(partitions_existing(table=GpuSample._meta.db_table))
    assert result["created"] <= 2 * len(wanted)
