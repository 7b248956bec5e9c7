"""The SQL rollup of GPU hours (PostgreSQL) gives exactly what the pure function gives: every float to the last bit."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from django.db import connection

from telemetry import energy, rollup
from telemetry.partitions import partitions_ensure
from telemetry.rawstore import GPU_COLUMNS, rows_insert
from telemetry.rollup_sql import gpu_usage_by_hour_sql

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the SQL rollup is PostgreSQL's"),
]

H = 1_764_396_000  # 2025-11-29T06:00:00Z
GAP_S = 30.0
NODE = 1  # the samples' node (raw tables hold no foreign keys: no node row needed)


def awkward_samples(seed: int, gpus: list[int]) -> list[tuple]:
    """Three-odd hours of samples per GPU with everything the pure function handles.

    Jittered sub-second stamps, samples exactly on hour boundaries, gaps longer than the max
    gap, missing fields (counter-less stretches integrate power), counter drops and epoch changes.
    """
    rng = random.Random(seed)
    rows = []
    for gpu in gpus:
        epoch, energy_j, ts = gpu * 100, rng.uniform(1e6, 1e10), H - 95.0
        while ts < H + 3 * 3600 + 95:
            step = rng.choice([1.0, 1.0, 1.0, 0.5, 2.0, rng.uniform(0.001, 29.999), 30.0, 31.0, 400.0])
            ts = round(ts + step, 6)
            if rng.random() < 0.01:
                ts = float((int(ts) // 3600 + 1) * 3600)  # exactly on an hour boundary
            power = round(rng.uniform(20, 700), 3)
            energy_j += power * step
            if rng.random() < 0.005:
                epoch += 1  # driver reload: the counter restarts
                energy_j = rng.uniform(0, 1500 * step)  # at most what the board limit allows since the last
            elif rng.random() < 0.005:
                energy_j = rng.uniform(0, min(energy_j, 1500 * step))  # a drop without a new epoch
            rows.append((
                NODE, datetime.fromtimestamp(ts, tz=UTC), gpu, epoch,
                None if rng.random() < 0.05 else round(energy_j, 3),
                None if rng.random() < 0.05 else rng.randrange(0, 80 * 1024),  # MiB
                None if rng.random() < 0.05 else power,
                None if rng.random() < 0.05 else rng.choice([0, 0, 1, 37, 99, 100]),
                None if rng.random() < 0.05 else rng.randrange(0, 101),
                None if rng.random() < 0.05 else rng.randrange(-40, 151),
            ))  # fmt: skip
    return rows


def python_usages(gpu_ids: list[int], hours_s: list[int]) -> list[tuple[int, energy.GpuHourUsage]]:
    return sorted(rollup._gpu_usages_python(NODE, gpu_ids, hours_s), key=lambda pair: (pair[0], pair[1].hour_start_s))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_sql_rollup_equals_the_pure_function_to_the_last_bit(seed):
    gpus = [11, 12, 13]
    rows = awkward_samples(seed, gpus)
    partitions_ensure(days={row[1].date() for row in rows})
    rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)
    # Runs with holes between them, and hours at the window's edges.
    hours = [H - 3600, H, H + 3600, H + 3 * 3600]

    sql = gpu_usage_by_hour_sql(node_id=NODE, gpu_ids=gpus, hour_runs=rollup._hour_runs(hours), max_gap_s=GAP_S)

    expected = python_usages(gpus, hours)
    assert len(expected) >= 9
    assert sql == expected


def test_sql_rollup_of_a_counterless_gpu_integrates_power_like_the_pure_function():
    rows = [
        (NODE, datetime.fromtimestamp(H + s * 0.7, tz=UTC), 21, 1, None, None, 100.1 + s, 50, 20, 60)
        for s in range(5000)
    ]
    partitions_ensure(days={row[1].date() for row in rows})
    rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)

    sql = gpu_usage_by_hour_sql(node_id=NODE, gpu_ids=[21], hour_runs=[[H]], max_gap_s=GAP_S)

    assert sql == python_usages([21], [H])
    assert sql[0][1].energy_method == energy.EnergyMethod.INTEGRATED


def test_sql_rollup_without_samples_gives_nothing():
    assert gpu_usage_by_hour_sql(node_id=NODE, gpu_ids=[31], hour_runs=[[H]], max_gap_s=GAP_S) == []


def test_the_awkward_data_exercises_every_branch():
    rows = awkward_samples(1, [11, 12, 13])
    partitions_ensure(days={row[1].date() for row in rows})
    rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)

    usages = [
        u
        for _, u in gpu_usage_by_hour_sql(
            node_id=NODE, gpu_ids=[11, 12, 13], hour_runs=[[H, H + 3600]], max_gap_s=GAP_S
        )
    ]

    assert energy.EnergyMethod.MIXED in {u.energy_method for u in usages}  # counter and integrated power
    assert sum(u.reset_count for u in usages) > 0
    assert all(0 < u.observed_s < 3600 for u in usages)  # gaps show as missing coverage
    assert all(u.mean_util_pct is not None and u.max_power_w is not None for u in usages)


def test_a_gpu_with_one_epoch_in_the_window_and_one_with_several_both_equal_the_pure_function():
    # GPU 41 keeps its epoch (epochs not fetched per sample); GPU 42's driver reloads mid-hour.
    # (its counter restarts from zero with the new epoch)
    rows = [
        (NODE, datetime.fromtimestamp(H + s, tz=UTC), gpu, 1 if gpu == 41 or s < 1800 else 2,
         300.0 * (s - 1799) if gpu == 42 and s >= 1800 else 1e6 + 300.0 * s, 3, 300.0, 50, 20, 60)
        for gpu in (41, 42) for s in range(3600)
    ]  # fmt: skip
    partitions_ensure(days={row[1].date() for row in rows})
    rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)

    sql = gpu_usage_by_hour_sql(node_id=NODE, gpu_ids=[41, 42], hour_runs=[[H]], max_gap_s=GAP_S)

    assert sql == python_usages([41, 42], [H])
    assert [usage.reset_count for _, usage in sql] == [0, 1]


def test_a_stored_reading_equal_to_a_null_stand_in_leaves_the_hours_to_the_pure_function(caplog):
    # No ingest stores it (utilization is 0..100), but a row written by hand may: -32768 reads as NULL
    # in the records, and the query's count of NULLs gives it away.
    rows = [(NODE, datetime.fromtimestamp(H + s, tz=UTC), 51, 1, 1e6 + s, 3, 300.0, -32768, 20, 60) for s in range(60)]
    partitions_ensure(days={row[1].date() for row in rows})
    rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)

    assert gpu_usage_by_hour_sql(node_id=NODE, gpu_ids=[51], hour_runs=[[H]], max_gap_s=GAP_S) is None
    usages = rollup._gpu_usages(NODE, [51], [H])

    assert usages == python_usages([51], [H])
    assert usages[0][1].mean_util_pct == -32768
    assert "stands for NULL" in caplog.text
