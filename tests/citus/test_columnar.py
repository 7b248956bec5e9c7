"""Raw-sample days past the horizon move to Citus columnar storage, and stay readable and idempotent there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction

from telemetry.columnar import access_method, columnar_apply
from telemetry.models import GpuSample
from telemetry.partitions import (
    RAW_TABLES,
    partition_name,
    partitions_ensure,
    partitions_existing,
    partitions_maintain,
    retention_apply,
)
from telemetry.rawstore import GPU_COLUMNS, rows_insert

NOW = datetime.now(tz=UTC).replace(minute=0, second=0, microsecond=0)
OLD_DAY = (NOW - timedelta(days=5)).replace(hour=0)  # past the 3-day horizon
RECENT_DAY = (NOW - timedelta(days=1)).replace(hour=0)
TABLE = GpuSample._meta.db_table

# Committed, not in a test transaction: the shards are read over Citus's own connections, and a refused batch
# leaves its transaction unusable on Citus (the request's transaction is rolled back whole, as here).
pytestmark = pytest.mark.django_db(transaction=True)


def sample_rows(day: datetime, *, gpus: int = 4, seconds: int = 60, offset_s: int = 0) -> list[tuple[Any, ...]]:
    """Rows in the order of ``GPU_COLUMNS`` (a column it does not know is given the GPU's own id)."""
    rows = []
    for t in range(offset_s, offset_s + seconds):
        for gpu in range(1, gpus + 1):
            values = {
                "ts": day + timedelta(seconds=t),
                "gpu_id": gpu,
                "epoch_id": gpu,
                "energy_j": 1e6 + 300.0 * t,
                "mem_used_mib": 70_000,
                "power_w": 300.0,
                "util_pct": 50,
                "mem_util_pct": 40,
                "temp_c": 60,
            }
            rows.append(tuple(values.get(column, gpu) for column in GPU_COLUMNS))
    return rows


def insert(rows: list[tuple[Any, ...]]) -> int:
    with transaction.atomic():
        return rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)


def day_figures(day: datetime) -> tuple[int, float]:
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT count(*), sum(energy_j) FROM "{TABLE}" WHERE ts >= %s AND ts < %s', [day, day + timedelta(days=1)]
        )
        return cursor.fetchone()


def shard_answers(name: str, query: str) -> set[str]:
    """The distinct answers of ``query`` on each shard of ``name`` (``%%s`` in it: the shard's name)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT result FROM run_command_on_shards(%s, $$" + query + "$$)", [name])
        return {row[0] for row in cursor.fetchall()}


def shard_access_methods(name: str) -> set[str]:
    return shard_answers(
        name, "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam WHERE c.oid = '%%s'::regclass"
    )


@pytest.fixture
def two_days(settings: Any) -> Any:
    # Retention of a week: the days the job looks at are this week's (the old day among them), not the
    # month of empty partitions other tests leave behind, each converted and turned back for nothing.
    settings.TELEMETRY_RETENTION_DAYS = 7
    partitions_ensure(days=[OLD_DAY.date(), RECENT_DAY.date()])
    assert insert(sample_rows(OLD_DAY)) == 240
    assert insert(sample_rows(RECENT_DAY)) == 240
    yield
    heap_again()


def heap_again() -> None:
    """Every raw day the test made columnar back on heap: the partitions outlive the test (its rows do
    not), and later tests write and delete samples of those days, which columnar storage cannot delete."""
    for table in RAW_TABLES:
        for day in partitions_existing(table=table):
            name = partition_name(table, day)
            if access_method(name) != "columnar":
                continue
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            with connection.cursor() as cursor:
                cursor.execute(f'ALTER TABLE "{table}" DETACH PARTITION "{name}"')
                cursor.execute("SELECT alter_table_set_access_method(%s::regclass, 'heap')", [name])
                cursor.execute(
                    f'ALTER TABLE "{table}" ATTACH PARTITION "{name}" FOR VALUES FROM (%s) TO (%s)',
                    [start, start + timedelta(days=1)],
                )


def test_days_past_the_horizon_become_columnar_on_every_shard_and_read_the_same(two_days: None) -> None:
    # given: a day five days back and yesterday, both heap
    before = day_figures(OLD_DAY)
    # when: the daily partition job runs
    result = partitions_maintain(now=NOW)
    # then: the old day is columnar on the coordinator and in every shard, yesterday is still heap
    old, recent = partition_name(TABLE, OLD_DAY.date()), partition_name(TABLE, RECENT_DAY.date())
    horizon = (NOW - timedelta(days=3)).date()
    assert result["columnar"][TABLE] == len([day for day in partitions_existing(table=TABLE) if day < horizon])
    assert access_method(old) == "columnar"
    assert shard_access_methods(old) == {"columnar"}
    assert access_method(recent) == "heap"
    # and: the old day's samples read the same, through the parent table
    assert day_figures(OLD_DAY) == before
    # and: a second run converts nothing
    assert partitions_maintain(now=NOW)["columnar"][TABLE] == 0


def shard_compressions(name: str) -> set[str]:
    """Each shard's columnar compression and level, as ``zstd/15``."""
    return shard_answers(
        name, "SELECT compression || '/' || compression_level FROM columnar.options WHERE relation = '%%s'::regclass"
    )


def test_a_day_is_compressed_at_the_configured_level_on_every_shard(two_days: None, settings: Any) -> None:
    # given: a level other than the default
    settings.TELEMETRY_COLUMNAR_COMPRESSION_LEVEL = 9
    with connection.cursor() as cursor:
        cursor.execute("SHOW columnar.compression_level")
        (session_level,) = cursor.fetchone()
    # when: the partition job converts the old day
    partitions_maintain(now=NOW)
    # then: every shard of it is zstd at that level, and the session's own setting is as it was
    assert shard_compressions(partition_name(TABLE, OLD_DAY.date())) == {"zstd/9"}
    with connection.cursor() as cursor:
        cursor.execute("SHOW columnar.compression_level")
        assert cursor.fetchone() == (session_level,)


def test_a_resent_batch_into_a_columnar_day_is_skipped_and_a_late_new_one_stored(two_days: None) -> None:
    # given: the old day in columnar storage, its primary key kept
    columnar_apply(now=NOW)
    count, _ = day_figures(OLD_DAY)
    # when: the same batch is sent again
    stored = insert(sample_rows(OLD_DAY))
    # then: nothing is stored twice
    assert stored == 0
    assert day_figures(OLD_DAY)[0] == count
    # when: a late batch of samples not yet stored arrives for that day
    stored = insert(sample_rows(OLD_DAY, offset_s=3600, seconds=10))
    # then: it is stored
    assert stored == 40
    assert day_figures(OLD_DAY)[0] == count + 40


def test_a_conversion_stopped_half_way_is_finished_by_the_next_run(two_days: None) -> None:
    # given: the old day detached from its parent, as the first step of a conversion leaves it
    old = partition_name(TABLE, OLD_DAY.date())
    with connection.cursor() as cursor:
        cursor.execute(f'ALTER TABLE "{TABLE}" DETACH PARTITION "{old}"')
    horizon = (NOW - timedelta(days=3)).date()
    heap_before = [
        day
        for day in partitions_existing(table=TABLE)
        if day < horizon and access_method(partition_name(TABLE, day)) != "columnar"
    ]
    # when: the next run comes
    converted = columnar_apply(now=NOW)
    # then: the day is columnar and attached again, its samples all there (beside the attached heap days)
    assert old not in [partition_name(TABLE, day) for day in heap_before]
    assert converted[TABLE] == len(heap_before) + 1
    assert access_method(old) == "columnar"
    assert day_figures(OLD_DAY)[0] == 240


def test_retention_drops_a_columnar_day(two_days: None) -> None:
    columnar_apply(now=NOW)
    removed = retention_apply(now=NOW, retention_days=4)
    assert removed[TABLE] >= 1  # the old day, and any older day an earlier test left
    assert access_method(partition_name(TABLE, OLD_DAY.date())) is None
    assert day_figures(OLD_DAY)[0] == 0


def test_a_batch_mixing_stored_and_new_samples_of_a_columnar_day_stores_the_new_ones_once(two_days: None) -> None:
    """Columnar tables cannot take ``INSERT ... ON CONFLICT`` of a new row (no speculative insertion in
    Citus 13): ingest reads the node's stored keys over the batch's span and inserts the others plainly
    (docs/scaling.md, "Columnar partitions"). Nothing is doubled, nothing new is lost."""
    columnar_apply(now=NOW)
    count, energy = day_figures(OLD_DAY)
    stored_part = sum(row[GPU_COLUMNS.index("energy_j")] for row in sample_rows(OLD_DAY, offset_s=50, seconds=10))
    batch = sample_rows(OLD_DAY, offset_s=50, seconds=20)  # 10 s stored, 10 s new
    # when: a batch overlapping the stored samples by half arrives
    stored = insert(batch)
    # then: its 10 new seconds of 4 GPUs are stored, the 10 stored ones skipped
    assert stored == 40
    new_energy = sum(row[GPU_COLUMNS.index("energy_j")] for row in batch) - stored_part
    assert day_figures(OLD_DAY) == (count + 40, pytest.approx(energy + new_energy))
    # and: the same batch again stores nothing
    assert insert(batch) == 0
    assert day_figures(OLD_DAY)[0] == count + 40
