"""GPU hours from columns (numpy) give exactly what the pure function gives: every float to the last bit."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
import pytest

from telemetry import energy, rollup_columns
from telemetry.rollup_columns import GpuColumns, gpu_usage_by_hour_columns

H = 1_764_396_000  # 2025-11-29T06:00:00Z
GAP_S = 30.0


def awkward_rows(seed: int, gpus: list[int]) -> list[tuple]:
    """``(gpu, ts_us, epoch, energy, power, util, mem_util, mem_bytes, temp)``, ``None`` for not measured.

    Three-odd hours per GPU: jittered sub-second stamps, samples exactly on hour boundaries, gaps
    longer than the max gap, missing fields, counter drops and epoch changes, in shuffled order.
    """
    rng = random.Random(seed)
    rows = []
    for gpu in gpus:
        epoch, energy_j, ts_us = gpu * 100, rng.uniform(1e6, 1e10), (H - 95) * 10**6
        while ts_us < (H + 3 * 3600 + 95) * 10**6:
            step = rng.choice([1.0, 1.0, 1.0, 0.5, 2.0, rng.uniform(0.001, 29.999), 30.0, 31.0, 400.0, 90.0])
            if rng.random() < 0.002:
                step = rng.uniform(3600, 9000)  # a gap across hours, bridged where the counter carries on
            ts_us += round(step * 1e6)
            if rng.random() < 0.01:
                ts_us = (ts_us // 3_600_000_000 + 1) * 3_600_000_000  # exactly on an hour boundary
            power = round(rng.uniform(20, 700), 3)
            energy_j += power * step
            if rng.random() < 0.005:
                epoch += 1  # driver reload: the counter restarts
                energy_j = rng.uniform(0, 1500 * step)  # at most what the board limit allows since the last
            elif rng.random() < 0.005:
                energy_j = rng.uniform(0, min(energy_j, 1500 * step))  # a drop without a new epoch
            rows.append((
                gpu, ts_us, epoch,
                None if rng.random() < 0.05 else round(energy_j, 3),
                None if rng.random() < 0.05 else power,
                None if rng.random() < 0.05 else rng.choice([0, 0, 1, 37, 99, 100]),
                None if rng.random() < 0.05 else rng.randrange(0, 101),
                None if rng.random() < 0.05 else rng.randrange(0, 80 * 2**30),
                None if rng.random() < 0.05 else rng.randrange(-40, 151),
            ))  # fmt: skip
    rng.shuffle(rows)
    return rows


def columns_of(rows: list[tuple]) -> GpuColumns:
    def column(i: int, dtype: type) -> tuple[np.ndarray, np.ndarray]:
        values = [row[i] for row in rows]
        known = np.array([v is not None for v in values], dtype=bool)
        return np.array([0 if v is None else v for v in values], dtype=dtype), known

    ints = [np.array([row[i] for row in rows], dtype=np.int64) for i in range(3)]
    return GpuColumns(
        *ints,
        *column(3, np.float64),
        *column(4, np.float32),
        *column(5, np.int64),
        *column(6, np.int64),
        *column(7, np.int64),
        *column(8, np.int64),
    )


def widened(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float64)


def pure_usages(rows: list[tuple], hours: list[int]) -> list[tuple[int, energy.GpuHourUsage]]:
    """What ``telemetry.rollup`` gets from the pure function: per GPU, the window's samples; hours with a sample."""
    first_s, last_s = energy.sample_window_s(hours, max_gap_s=GAP_S)
    usages = []
    for gpu in sorted({row[0] for row in rows}):
        every = sorted(
            (
                energy.GpuPoint(
                    ts_us / 1e6, str(epoch), e, None if p is None else float(np.float32(p)), u, mu, mem, temp
                )
                for g, ts_us, epoch, e, p, u, mu, mem, temp in rows
                if g == gpu
            ),
            key=lambda point: point.ts_s,
        )
        before = [p for p in every if first_s - energy.DEFAULT_MAX_BRIDGE_S <= p.ts_s < first_s][-1:]
        after = [p for p in every if last_s < p.ts_s <= last_s + energy.DEFAULT_MAX_BRIDGE_S][:1]
        points = [*before, *(p for p in every if first_s <= p.ts_s <= last_s), *after]
        sample_hours = {energy.hour_start_s_of(p.ts_s) for p in points if first_s <= p.ts_s <= last_s}
        usage = energy.gpu_usage_by_hour(points, hour_starts_s=hours, max_gap_s=GAP_S)
        usages += [(gpu, u) for u in usage if u.observed_s > 0 or u.bridged_s > 0 or u.hour_start_s in sample_hours]
    return usages


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("hours", [[H - 3600, H, H + 3600], [H + 3 * 3600], [H + 3600, H + 3 * 3600]])
def test_columns_equal_the_pure_function_to_the_last_bit(seed, hours):
    rows = awkward_rows(seed, [11, 12, 13])

    usages = gpu_usage_by_hour_columns(columns_of(rows), hour_starts_s=hours, max_gap_s=GAP_S, real_to_float=widened)

    expected = pure_usages(rows, hours)
    assert len(expected) >= len(hours)
    assert usages == expected


def test_a_counterless_gpu_integrates_power_like_the_pure_function():
    rows = [(21, (H * 10**6) + s * 700_000, 1, None, 100.1 + s, 50, 20, 2**33, 60) for s in range(5000)]

    usages = gpu_usage_by_hour_columns(columns_of(rows), hour_starts_s=[H], max_gap_s=GAP_S, real_to_float=widened)

    assert usages == pure_usages(rows, [H])
    assert usages[0][1].energy_method == energy.EnergyMethod.INTEGRATED


def test_power_is_read_by_the_given_conversion_only_where_it_is_used():
    rows = [(21, (H + s) * 10**6, 1, None if s in (5, 6) else 1000.0 + s, 100.5 + s, 50, 20, 0, 60) for s in range(10)]
    asked: list[list[float]] = []

    def read(values: np.ndarray) -> np.ndarray:
        asked.append(values.tolist())
        return values.astype(np.float64)

    gpu_usage_by_hour_columns(columns_of(rows), hour_starts_s=[H], max_gap_s=GAP_S, real_to_float=read)

    # The ends of the spans 4-5, 5-6 and 6-7 (the counter is missing at 5 and 6), then the hour's maximum.
    assert asked == [[104.5, 105.5, 106.5, 107.5], [109.5]]


def test_no_samples_give_nothing():
    assert gpu_usage_by_hour_columns(columns_of([]), hour_starts_s=[H], max_gap_s=GAP_S, real_to_float=widened) == []


def test_two_samples_of_a_gpu_at_one_timestamp_are_refused():
    rows = [(1, H * 10**6, 1, 1.0, 1.0, 1, 1, 1, 1)] * 2

    with pytest.raises(ValueError, match="share a timestamp"):
        gpu_usage_by_hour_columns(columns_of(rows), hour_starts_s=[H], max_gap_s=GAP_S, real_to_float=widened)


def test_datetime_timestamps_read_as_microseconds_over_a_million():
    ts = datetime(2025, 11, 29, 6, 0, 0, 123457, tzinfo=UTC)
    assert ts.timestamp() == np.int64(1_764_396_000_123_457) / 1e6


def test_gpu_hours_summed_in_batches_when_a_grid_would_be_large_give_the_same_bits(monkeypatch):
    rows = awkward_rows(7, [11, 12, 13])
    hours = [H - 3600, H, H + 3600, H + 2 * 3600]
    whole = gpu_usage_by_hour_columns(columns_of(rows), hour_starts_s=hours, max_gap_s=GAP_S, real_to_float=widened)

    monkeypatch.setattr(rollup_columns, "_GRID_CELLS", 5000)  # a few GPU-hours per batch
    batched = gpu_usage_by_hour_columns(columns_of(rows), hour_starts_s=hours, max_gap_s=GAP_S, real_to_float=widened)

    assert batched == whole == pure_usages(rows, hours)


def test_gpus_in_order_with_samples_out_of_time_order_are_sorted_like_the_pure_function():
    rows = sorted(awkward_rows(8, [11, 12, 13]), key=lambda row: row[0])  # by GPU only: times shuffled
    hours = [H, H + 3600]

    usages = gpu_usage_by_hour_columns(columns_of(rows), hour_starts_s=hours, max_gap_s=GAP_S, real_to_float=widened)

    assert usages == pure_usages(rows, hours)


def test_gaps_the_counter_bridges_across_several_hours_equal_the_pure_function():
    # one sample a second, then a 2 h 5 min pause the counter carries on through, and a 90 s one
    rows = [(31, (H - 60 + s) * 10**6, 1, 1000.0 + 300.0 * s, 300.0, 50, 20, 0, 60) for s in range(61)]
    resumed = H + 7500
    rows += [(31, (resumed + s) * 10**6, 1, 5e6 + 300.0 * s, 300.0, 50, 20, 0, 60) for s in range(10)]
    rows += [(31, (resumed + 100) * 10**6, 1, 5e6 + 300.0 * 100, 300.0, 50, 20, 0, 60)]
    hours = [H, H + 3600]  # the neighbour after the window (at H + 7500) closes the first gap

    usages = gpu_usage_by_hour_columns(columns_of(rows), hour_starts_s=hours, max_gap_s=GAP_S, real_to_float=widened)

    assert usages == pure_usages(rows, hours)
    first, second = (usage for _, usage in usages)
    assert (first.bridged_s, second.bridged_s) == (3600.0, 3600.0)
    assert first.bridged_gap_s == 7500.0
    assert first.energy_bridged_j == (5e6 - (1000.0 + 300.0 * 60)) / 7500 * 3600


def outcome(compute) -> object:
    """What a rollup implementation gives: its usages, or the counter it found impossible (its message, hours)."""
    try:
        return compute()
    except energy.CounterImpossible as error:
        return str(error), error.hours


def owned_pure_usages(rows: list[tuple], hours: list[int]) -> list[tuple[int, energy.GpuHourUsage]]:
    """``pure_usages`` naming the GPU of an impossible counter, as ``telemetry.rollup`` does."""
    for gpu in sorted({row[0] for row in rows}):
        try:
            pure_usages([row for row in rows if row[0] == gpu], hours)
        except energy.CounterImpossible as error:
            raise error.owned(f"GPU {gpu}") from None
    return pure_usages(rows, hours)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("hours", [[H - 3600, H, H + 3600], [H + 3 * 3600], [H + 3600, H + 3 * 3600]])
def test_an_impossible_counter_raises_the_same_error_as_the_pure_function(seed, hours):
    # given: the awkward rows with a few readings pushed past the board limit (rises, restarts, bridged gaps)
    rng = random.Random(seed)
    rows = [
        (*row[:3], row[3] * rng.choice([3.0, 1e3]) if row[3] is not None and rng.random() < 0.003 else row[3], *row[4:])
        for row in awkward_rows(seed, [11, 12, 13])
    ]

    in_columns = outcome(
        lambda: gpu_usage_by_hour_columns(columns_of(rows), hour_starts_s=hours, max_gap_s=GAP_S, real_to_float=widened)
    )

    assert in_columns == outcome(lambda: owned_pure_usages(rows, hours))
