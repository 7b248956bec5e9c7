"""The rollup's two implementations of one rule (the pure function for SQLite, SQL + numpy for PostgreSQL)
give equal hourly results on the same random data (PostgreSQL only: the second needs it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from telemetry import energy, rollup
from telemetry.models import GpuSample
from telemetry.partitions import partitions_ensure
from telemetry.rawstore import GPU_COLUMNS, rows_insert
from telemetry.rollup_sql import gpu_usage_by_hour_sql

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the SQL rollup is PostgreSQL's"),
]

H = 1_764_396_000  # 2025-11-29T06:00:00Z
GPUS = (71, 72)
NODE = 1  # the samples' node (raw tables hold no foreign keys: no node row needed)
UNIX = datetime(1970, 1, 1, tzinfo=UTC)

# Steps between samples in microseconds: sampling, the max gap's edges, gaps a counter may bridge across hours.
step_us = st.one_of(
    st.sampled_from([1_000_000, 500_000, 29_999_999, 30_000_000, 30_000_001, 90_000_000, 3_600_000_000]),
    st.integers(1, 9_000_000_000),
)
sample_st = st.tuples(
    st.sampled_from(GPUS),
    step_us,
    st.floats(0, 5000, allow_nan=False),  # joules added (past the board limit at times: both raise alike)
    st.sampled_from(["same", "same", "same", "same", "new epoch", "drop"]),
    st.lists(st.booleans(), min_size=5, max_size=5),  # which readings are missing (1 in 2 draws: few)
    st.integers(0, 100),
)


def samples_of(draws: list[tuple]) -> list[tuple]:
    """Rows for ``rows_insert`` (node, ts, gpu, epoch, energy, mem MiB, power, util, mem util, temp), per GPU."""
    state = {gpu: [(H - 4000) * 10**6, 1, 1e6] for gpu in GPUS}  # ts_us, epoch, counter
    rows = []
    for gpu, step, added, event, missing, util in draws:
        ts_us, epoch, counter = state[gpu]
        ts_us, counter = ts_us + step, counter + added
        if event == "new epoch":
            epoch, counter = epoch + 1, added
        elif event == "drop":
            counter = counter / 2
        state[gpu] = [ts_us, epoch, counter]
        ts = UNIX + timedelta(microseconds=ts_us)
        readings = [round(counter, 3), 1024 * util, 100.0 + util, util, 30 + util // 2]
        readings = [
            None if gone and i > 0 and util % 7 == 0 else r
            for i, (r, gone) in enumerate(zip(readings, missing, strict=True))
        ]
        if missing[0] and util % 5 == 0:
            readings[0] = None  # a counterless stretch integrates power
        rows.append((NODE, ts, gpu, epoch, readings[0], readings[1], readings[2], readings[3], readings[4], 40))
    return rows


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(draws=st.lists(sample_st, min_size=2, max_size=120), first_hour=st.integers(-1, 2), run_length=st.integers(1, 3))
def test_both_rollup_implementations_give_equal_hours_on_the_same_random_data(draws, first_hour, run_length):
    GpuSample.objects.filter(gpu_id__in=GPUS).delete()
    rows = samples_of(draws)
    partitions_ensure(days={row[1].date() for row in rows})
    rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)
    hours = [H + (first_hour + i) * 3600 for i in range(run_length)]

    in_sql = outcome(lambda: gpu_usage_by_hour_sql(node_id=NODE, gpu_ids=list(GPUS), hour_runs=[hours], max_gap_s=30.0))
    in_python = outcome(
        lambda: sorted(
            rollup._gpu_usages_python(NODE, list(GPUS), hours), key=lambda pair: (pair[0], pair[1].hour_start_s)
        )
    )

    assert in_sql == in_python


def outcome(compute) -> object:
    """The usages, or the impossible counter found (its message and hours): the same from both."""
    try:
        return compute()
    except energy.CounterImpossible as error:
        return str(error), error.hours
