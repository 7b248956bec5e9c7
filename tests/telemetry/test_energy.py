"""Hourly rollup arithmetic for GPU and serving samples (no database)."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telemetry.collector.wire import serving_bounds
from telemetry.energy import (
    HOUR_S,
    CounterImpossible,
    EndpointHourUsage,
    EnergyMethod,
    GpuHourUsage,
    GpuPoint,
    ServingPoint,
    counter_increase,
    endpoint_usage_by_hour,
    gpu_usage_by_hour,
    hour_start_s_of,
    integer_split_by_hour,
    sample_window_s,
)
from telemetry.histogram import Histogram, histogram_from_cumulative

H10 = int(datetime(2025, 12, 1, 10, tzinfo=UTC).timestamp())  # 10:00 UTC
H11 = H10 + HOUR_S
H12 = H11 + HOUR_S
BOUNDS_S = (0.1, 0.5, 1.0)


def at(hh: int, mm: int, ss: float) -> float:
    """Unix seconds of hh:mm:ss on the test day."""
    return H10 + (hh - 10) * HOUR_S + mm * 60 + ss


def gpu(ts_s: float, energy_j: float | None = None, epoch: str = "boot-1", **readings) -> GpuPoint:
    return GpuPoint(ts_s=ts_s, epoch=epoch, energy_j=energy_j, **readings)


def serving(ts_s: float, prompt: int | None = None, epoch: str = "start-1", **counters) -> ServingPoint:
    return ServingPoint(ts_s=ts_s, epoch=epoch, prompt_tokens=prompt, **counters)


def gpu_hours(points, hours=(H10, H11), **options) -> dict[int, GpuHourUsage]:
    return {usage.hour_start_s: usage for usage in gpu_usage_by_hour(points, hour_starts_s=hours, **options)}


def endpoint_hours(points, hours=(H10, H11), **options) -> dict[int, EndpointHourUsage]:
    return {usage.hour_start_s: usage for usage in endpoint_usage_by_hour(points, hour_starts_s=hours, **options)}


# --- counters and hours ----------------------------------------------------------


def test_counter_increase_is_the_difference_without_a_restart():
    assert counter_increase(1000.0, 1360.0, epoch_changed=False) == 360.0


def test_counter_reset_counts_new_value_as_increase():
    assert counter_increase(5000, 200, epoch_changed=False) == 200


def test_counter_epoch_change_counts_new_value_as_increase():
    assert counter_increase(5000, 7000, epoch_changed=True) == 7000


def test_hour_start_of_a_timestamp_is_the_utc_hour_it_falls_in():
    assert hour_start_s_of(at(10, 59, 59.9)) == H10
    assert hour_start_s_of(H11) == H11


def test_sample_window_reaches_max_gap_beyond_the_requested_hours():
    assert sample_window_s([H11, H10], max_gap_s=30.0) == (H10 - 30.0, H12 + 30.0)


def test_integer_split_rounds_the_interpolated_counter_at_the_boundary():
    # 10 tokens over 10:59:57-11:00:07: 3 s of 10 before the hour -> 3, then 7
    assert list(integer_split_by_hour(10, at(10, 59, 57), at(11, 0, 7))) == [(H10, 3), (H11, 7)]


def test_integer_split_rounds_half_up_at_the_boundary():
    assert list(integer_split_by_hour(7, at(10, 59, 50), at(11, 0, 10))) == [(H10, 4), (H11, 3)]


def test_integer_split_over_several_hours_adds_up_exactly():
    parts = list(integer_split_by_hour(1000, at(10, 30, 0), at(12, 30, 0)))
    assert parts == [(H10, 250), (H11, 500), (H12, 250)]


def test_hours_must_be_hour_starts():
    with pytest.raises(ValueError, match="multiple of 3600"):
        gpu_usage_by_hour([], hour_starts_s=[H10 + 1])


def test_max_gap_must_be_positive():
    with pytest.raises(ValueError, match="max_gap_s"):
        gpu_usage_by_hour([], hour_starts_s=[H10], max_gap_s=0)


# --- GPU energy ------------------------------------------------------------------


def test_counter_interval_across_the_hour_is_split_by_time():
    # given 360 J over 10:59:50-11:00:10, half the interval on each side
    hours = gpu_hours([gpu(at(10, 59, 50), 1000.0), gpu(at(11, 0, 10), 1360.0)])
    # then
    assert hours[H10].energy_j == 180.0
    assert hours[H11].energy_j == 180.0
    assert hours[H10].observed_s == hours[H11].observed_s == 10.0
    assert hours[H10].energy_method == EnergyMethod.COUNTER
    assert hours[H10].counter_share == 1.0
    assert hours[H10].mean_power_w == 18.0


def test_counter_drop_counts_the_new_value_and_one_reset():
    hours = gpu_hours([gpu(at(10, 0, 0), 5000.0), gpu(at(10, 0, 1), 200.0), gpu(at(10, 0, 2), 300.0)])
    assert hours[H10].energy_j == 300.0  # 200 after the restart, then 100
    assert hours[H10].reset_count == 1


def test_epoch_change_counts_the_new_value_even_without_a_drop():
    points = [gpu(at(10, 0, 0), 5000.0, epoch="boot-1"), gpu(at(10, 0, 10), 7000.0, epoch="boot-2")]
    hours = gpu_hours(points)
    assert hours[H10].energy_j == 7000.0
    assert hours[H10].reset_count == 1


def test_reset_is_counted_in_the_hour_of_the_sample_that_shows_it():
    hours = gpu_hours([gpu(at(10, 59, 59), 5000.0), gpu(H11, 100.0)])
    assert (hours[H10].reset_count, hours[H11].reset_count) == (0, 1)
    assert hours[H10].energy_j == 100.0


def test_gap_over_the_limit_without_a_counter_attributes_nothing_and_shows_as_missing():
    # given 10 s of integrated power, then a 50 s gap over the 30 s limit: no counter proves its energy
    points = [gpu(at(10, 0, 0), power_w=100.0), gpu(at(10, 0, 10), power_w=100.0), gpu(at(10, 1, 0), power_w=100.0)]
    hours = gpu_hours(points, max_gap_s=30.0)
    # then
    assert hours[H10].energy_j == 1000.0
    assert (hours[H10].observed_s, hours[H10].bridged_s) == (10.0, 0.0)
    assert hours[H10].missing_s == HOUR_S - 10.0


def test_gap_the_energy_counter_continues_across_is_bridged_in_full():
    # given 10 s observed, then a 50 s gap over the 30 s limit across which the counter went on
    points = [gpu(at(10, 0, 0), 1000.0), gpu(at(10, 0, 10), 2000.0), gpu(at(10, 1, 0), 3000.0)]
    usage = gpu_hours(points, max_gap_s=30.0)[H10]
    # then the gap's 1000 J count, labelled bridged with the gap's length
    assert (usage.energy_j, usage.energy_counter_j, usage.energy_bridged_j) == (2000.0, 1000.0, 1000.0)
    assert (usage.observed_s, usage.bridged_s, usage.bridged_gap_s) == (10.0, 50.0, 50.0)
    assert usage.missing_s == HOUR_S - 60.0
    assert usage.energy_method == EnergyMethod.COUNTER
    assert usage.mean_power_w == 2000.0 / 60.0


def test_a_90_s_gap_across_an_hour_boundary_is_spread_over_both_hours_in_proportion_to_time():
    # given samples to 10:59:30, a 90 s pause, then 11:01:00; the counter rose 22,500 J over the pause
    points = [gpu(at(10, 59, 29), 1_000.0), gpu(at(10, 59, 30), 1_250.0), gpu(at(11, 1, 0), 23_750.0)]
    hours = gpu_hours(points)
    # then 30 s of the 90 s (7,500 J) fall in 10:00 and 60 s (15,000 J) in 11:00, all bridged
    assert (hours[H10].energy_bridged_j, hours[H11].energy_bridged_j) == (7_500.0, 15_000.0)
    assert hours[H10].energy_j == 250.0 + 7_500.0
    assert (hours[H10].bridged_s, hours[H11].bridged_s) == (30.0, 60.0)
    assert hours[H10].bridged_gap_s == hours[H11].bridged_gap_s == 90.0
    assert hours[H11].missing_s == HOUR_S - 60.0


@pytest.mark.parametrize(
    ("second", "why"),
    [(gpu(at(10, 1, 0), 500.0), "decreased"), (gpu(at(10, 1, 0), 3000.0, epoch="boot-2"), "new epoch")],
)
def test_a_counter_that_restarted_inside_a_gap_bridges_nothing(second, why):
    hours = gpu_hours([gpu(at(10, 0, 0), 1000.0), second], max_gap_s=30.0)
    assert (hours[H10].energy_j, hours[H10].bridged_s, hours[H10].missing_s) == (0.0, 0.0, HOUR_S), why


def test_a_gap_longer_than_the_bridge_limit_is_missing():
    hours = gpu_hours([gpu(at(10, 0, 0), 1000.0), gpu(at(10, 10, 0), 3000.0)], max_bridge_s=300.0)
    assert (hours[H10].energy_j, hours[H10].missing_s) == (0.0, HOUR_S)


def test_serving_counters_bridge_a_90_s_gap_and_label_it():
    # given 112,553 generation tokens served during a 90 s pause, 60 s of it in 11:00
    points = [
        serving(at(10, 59, 30), 0, generation_tokens=0, requests=0),
        serving(at(11, 1, 0), 9_000, generation_tokens=112_553, requests=90),
    ]
    hours = endpoint_hours(points)
    # then every token counts; 30/90 of each counter in 10:00 (rounded half up at the boundary)
    assert hours[H10].generation_tokens + hours[H11].generation_tokens == 112_553
    assert (hours[H10].generation_tokens, hours[H11].generation_tokens) == (37_518, 75_035)
    assert (hours[H10].prompt_tokens, hours[H11].prompt_tokens) == (3_000, 6_000)
    assert (hours[H10].observed_s, hours[H10].bridged_s, hours[H11].bridged_s) == (0.0, 30.0, 60.0)
    assert hours[H11].bridged_gap_s == 90.0
    assert hours[H11].missing_s == HOUR_S - 60.0


def test_a_server_restart_inside_a_gap_bridges_nothing():
    points = [serving(at(10, 0, 0), 5_000), serving(at(10, 5, 0), 9_000, epoch="start-2")]
    usage = endpoint_hours(points)[H10]
    assert (usage.prompt_tokens, usage.bridged_s, usage.missing_s) == (0, 0.0, HOUR_S)


def test_a_restart_shown_by_one_counter_restarts_every_counter_of_the_server():
    # given: the server restarted between two samples of one epoch: its prompt counter dropped, while its output
    # counter, small before the restart, already reads more than it did
    points = [
        serving(at(10, 0, 0), 10_000, generation_tokens=100, requests=40),
        serving(at(10, 0, 10), 200, generation_tokens=150, requests=2),
    ]
    usage = endpoint_hours(points)[H10]
    # then: every counter counted up from zero since the restart, not only the one that dropped
    assert usage.reset_count == 1
    assert (usage.prompt_tokens, usage.generation_tokens, usage.requests) == (200, 150, 2)


def test_gap_within_a_larger_limit_is_bridged():
    points = [gpu(at(10, 0, 0), 1000.0), gpu(at(10, 0, 10), 2000.0), gpu(at(10, 1, 0), 3000.0)]
    assert gpu_hours(points, max_gap_s=60.0)[H10].energy_j == 2000.0


def test_counterless_gpu_integrates_power_by_trapezoid():
    # given 100 W then 300 W ten seconds later, no energy counter
    points = [gpu(at(10, 0, 0), power_w=100.0), gpu(at(10, 0, 10), power_w=300.0)]
    usage = gpu_hours(points)[H10]
    # then (100 + 300) / 2 * 10 s
    assert usage.energy_j == usage.energy_integrated_j == 2000.0
    assert usage.energy_method == EnergyMethod.INTEGRATED
    assert usage.counter_share == 0.0
    assert (usage.mean_power_w, usage.max_power_w) == (200.0, 300.0)


def test_counter_is_used_over_power_when_both_are_there():
    points = [gpu(at(10, 0, 0), 1000.0, power_w=999.0), gpu(at(10, 0, 10), 1500.0, power_w=999.0)]
    usage = gpu_hours(points)[H10]
    assert (usage.energy_j, usage.energy_method) == (500.0, EnergyMethod.COUNTER)


def test_missing_counter_reading_falls_back_to_power_for_its_intervals_and_marks_the_hour_mixed():
    points = [
        gpu(at(10, 0, 0), 1000.0, power_w=100.0),
        gpu(at(10, 0, 10), 2000.0, power_w=100.0),  # counter: 1000 J
        gpu(at(10, 0, 20), None, power_w=100.0),  # power: 1000 J
        gpu(at(10, 0, 30), 3000.0, power_w=300.0),  # power: 2000 J
    ]
    usage = gpu_hours(points)[H10]
    assert usage.energy_method == EnergyMethod.MIXED
    assert (usage.energy_counter_j, usage.energy_integrated_j, usage.energy_j) == (1000.0, 3000.0, 4000.0)
    assert usage.counter_share == 0.25
    assert usage.energy_covered_s == 30.0


def test_interval_without_counter_or_power_is_observed_but_not_energy_covered():
    usage = gpu_hours([gpu(at(10, 0, 0), util_pct=50), gpu(at(10, 0, 10), util_pct=50)])[H10]
    assert (usage.observed_s, usage.energy_covered_s, usage.energy_j) == (10.0, 0.0, 0.0)
    assert usage.energy_method == EnergyMethod.NONE
    assert usage.mean_power_w is None
    assert usage.counter_share is None


def test_hour_without_samples_reads_as_unobserved():
    usage = gpu_hours([], hours=(H10,))[H10]
    assert (usage.observed_s, usage.missing_s, usage.energy_j, usage.busy_s) == (0.0, HOUR_S, 0.0, 0.0)
    assert (usage.mean_util_pct, usage.max_temp_c, usage.max_mem_used_bytes) == (None, None, None)


# --- GPU utilization, temperature, memory ------------------------------------------


def test_busy_seconds_count_each_sample_for_half_of_its_intervals():
    # given util 0, 50, 50, 0 one second apart: intervals busy 1/2, 1, 1/2
    points = [gpu(at(10, 0, s), util_pct=u) for s, u in enumerate([0, 50, 50, 0])]
    usage = gpu_hours(points)[H10]
    # then
    assert usage.busy_s == 2.0
    assert usage.mean_util_pct == pytest.approx(100 / 3)  # interval means 25, 50, 25


def test_busy_threshold_is_a_parameter():
    points = [gpu(at(10, 0, s), util_pct=u) for s, u in enumerate([5, 5, 50])]
    assert gpu_hours(points)[H10].busy_s == 2.0
    assert gpu_hours(points, busy_above_util_pct=10)[H10].busy_s == 0.5


def test_maxima_take_the_samples_within_the_hour():
    points = [
        gpu(at(10, 59, 59), power_w=300.0, temp_c=70, mem_used_bytes=2_000),
        gpu(H11, power_w=400.0, temp_c=80, mem_used_bytes=3_000),  # the hour it starts
    ]
    hours = gpu_hours(points)
    assert (hours[H10].max_power_w, hours[H10].max_temp_c, hours[H10].max_mem_used_bytes) == (300.0, 70, 2_000)
    assert (hours[H11].max_power_w, hours[H11].max_temp_c, hours[H11].max_mem_used_bytes) == (400.0, 80, 3_000)


def test_mean_temperature_is_time_weighted():
    points = [gpu(at(10, 0, 0), temp_c=60), gpu(at(10, 0, 10), temp_c=70), gpu(at(10, 0, 40), temp_c=70)]
    assert gpu_hours(points)[H10].mean_temp_c == pytest.approx((65 * 10 + 70 * 30) / 40)


def test_unsorted_duplicated_samples_give_the_same_usage():
    points = [gpu(at(10, 0, s), 1000.0 + 7 * s, power_w=7.0, util_pct=s) for s in range(20)]
    messy = list(reversed(points)) + points[3:9]
    assert gpu_usage_by_hour(messy, hour_starts_s=[H10]) == gpu_usage_by_hour(points, hour_starts_s=[H10])


def test_differing_samples_sharing_a_timestamp_resolve_the_same_way_in_any_order():
    a, b = gpu(at(10, 0, 1), 1005.0), gpu(at(10, 0, 1), 1003.0)
    first, last = gpu(at(10, 0, 0), 1000.0), gpu(at(10, 0, 2), 1010.0)
    one = gpu_usage_by_hour([first, a, b, last], hour_starts_s=[H10])
    other = gpu_usage_by_hour([last, b, first, a], hour_starts_s=[H10])
    assert one == other


# --- serving ---------------------------------------------------------------------


def test_token_split_across_hours_sums_exactly():
    # given 7 prompt tokens over 10:59:50-11:00:10: the boundary interpolates to 3.5, rounded up
    hours = endpoint_hours([serving(at(10, 59, 50), 100), serving(at(11, 0, 10), 107)])
    # then
    assert (hours[H10].prompt_tokens, hours[H11].prompt_tokens) == (4, 3)
    assert hours[H10].observed_s == hours[H11].observed_s == 10.0


def test_token_counter_drop_counts_the_new_value():
    points = [serving(at(10, 0, 0), 5000, requests=50), serving(at(10, 0, 15), 200, requests=2)]
    usage = endpoint_hours(points)[H10]
    assert (usage.prompt_tokens, usage.requests, usage.reset_count) == (200, 2, 1)


def test_server_epoch_change_counts_the_new_values():
    points = [serving(at(10, 0, 0), 5000, epoch="start-1"), serving(at(10, 0, 15), 9000, epoch="start-2")]
    usage = endpoint_hours(points)[H10]
    assert (usage.prompt_tokens, usage.reset_count) == (9000, 1)


def test_an_interval_is_bounded_by_the_epoch_of_the_sample_that_ends_it():
    # given: a server on two GPUs (300k output tokens a second: more than one GPU's 200k), restarted on one
    two_gpus, one_gpu = serving_bounds(2), serving_bounds(1)
    points = [
        serving(at(10, 0, 0), epoch="on-2", generation_tokens=0),
        serving(at(10, 0, 5), epoch="on-2", generation_tokens=1_500_000),
        serving(at(10, 0, 10), epoch="on-1", generation_tokens=500_000),  # the restart: within one GPU's bound
        serving(at(10, 0, 15), epoch="on-1", generation_tokens=1_000_000),
    ]
    # when: each epoch has its own bounds; then: every interval fits its own
    usage = endpoint_hours(points, bounds=one_gpu, epoch_bounds={"on-2": two_gpus, "on-1": one_gpu})[H10]
    assert usage.generation_tokens == 1_500_000 + 500_000 + 500_000
    # and the one-GPU epoch's bounds alone would refuse the first interval
    with pytest.raises(CounterImpossible, match=r"generation_tokens counts 1\.5e\+06 in 5 s"):
        endpoint_hours(points, bounds=one_gpu, epoch_bounds={"on-1": one_gpu})


def test_each_counter_counts_only_where_both_samples_carry_it():
    points = [
        serving(at(10, 0, 0), 100, generation_tokens=None, requests=1),
        serving(at(10, 0, 15), 150, generation_tokens=1000, requests=2),
        serving(at(10, 0, 30), 170, generation_tokens=1300, requests=None),
    ]
    usage = endpoint_hours(points)[H10]
    assert (usage.prompt_tokens, usage.generation_tokens, usage.requests) == (70, 300, 1)


def test_serving_gap_over_the_limit_with_a_restart_attributes_no_tokens():
    points = [serving(at(10, 0, 0), 0), serving(at(10, 0, 15), 10), serving(at(10, 5, 0), 1000, epoch="start-2")]
    usage = endpoint_hours(points, max_gap_s=60.0)[H10]
    assert (usage.prompt_tokens, usage.observed_s, usage.bridged_s) == (10, 15.0, 0.0)


def test_ttft_histogram_of_an_hour_is_the_bucket_increase():
    points = [
        serving(at(10, 0, 0), ttft_since_start=histogram_from_cumulative(BOUNDS_S, [1, 3, 4, 4])),
        serving(at(10, 0, 15), ttft_since_start=histogram_from_cumulative(BOUNDS_S, [2, 5, 8, 9])),
    ]
    hours = endpoint_hours(points)
    assert hours[H10].ttft == Histogram(BOUNDS_S, (1, 1, 2, 1))
    assert hours[H11].ttft is None  # not measured, not zero


def test_ttft_buckets_split_across_hours_add_up_to_the_interval():
    before = Histogram(BOUNDS_S, (0, 0, 0, 0))
    after = Histogram(BOUNDS_S, (7, 10, 1, 0))
    hours = endpoint_hours(
        [serving(at(10, 59, 50), ttft_since_start=before), serving(at(11, 0, 10), ttft_since_start=after)]
    )
    assert hours[H10].ttft == Histogram(BOUNDS_S, (4, 5, 1, 0))
    assert hours[H11].ttft == Histogram(BOUNDS_S, (3, 5, 0, 0))


def test_ttft_bounds_changed_within_an_hour_are_coarsened_onto_shared_bounds():
    other_bounds = (0.5, 2.0)
    points = [
        serving(at(10, 0, 0), epoch="a", ttft_since_start=Histogram(BOUNDS_S, (0, 0, 0, 0))),
        serving(at(10, 0, 15), epoch="a", ttft_since_start=Histogram(BOUNDS_S, (1, 2, 3, 4))),
        serving(at(10, 0, 30), epoch="b", ttft_since_start=Histogram(other_bounds, (1, 1, 1))),
    ]
    assert endpoint_hours(points)[H10].ttft == Histogram((0.5,), (3 + 1, 7 + 2))


# --- properties: GPU -------------------------------------------------------------

MAX_GAP_S = 30.0

# (seconds since the previous sample in tenths, joules added): steps up to 40 s, some over the gap limit, at most
# what the board limit allows (2000 W; 1500 W here, clear of float rounding; more raises CounterImpossible)
steps_st = st.lists(
    st.tuples(st.integers(1, 400), st.integers(0, 5000)).map(lambda step: (step[0], min(step[1], 150 * step[0]))),
    min_size=1,
    max_size=50,
)
start_st = st.integers(H10 * 10 + 30_000, H10 * 10 + 35_990).map(lambda tenths: tenths / 10)


def series(start_s: float, steps: list[tuple[int, int]]) -> list[tuple[float, int]]:
    """(ts_s, joules added since the previous sample); the first sample adds nothing."""
    out, ts_s = [(start_s, 0)], start_s
    for tenths, added in steps:
        ts_s += tenths / 10
        out.append((ts_s, added))
    return out


def observed_total(points: list[tuple[float, int]], max_gap_s: float = MAX_GAP_S) -> int:
    return sum(added for (t0, _), (t1, added) in itertools.pairwise(points) if t1 - t0 <= max_gap_s)


def counter_points(points: list[tuple[float, int]], *, restarts: frozenset[int] = frozenset()) -> list[GpuPoint]:
    """A counter from 1e6 J; at each index in ``restarts`` a new epoch whose counter restarted from 0."""
    out, counter, epoch = [], 1_000_000, 0
    for i, (ts_s, added) in enumerate(points):
        if i in restarts:
            counter, epoch = 0, epoch + 1
        counter += added
        out.append(gpu(ts_s, float(counter), epoch=f"boot-{epoch}"))
    return out


def hours_of(points: list[tuple[float, int]]) -> list[int]:
    return list(range(hour_start_s_of(points[0][0]), hour_start_s_of(points[-1][0]) + HOUR_S, HOUR_S))


@settings(max_examples=80, deadline=None)
@given(start_st, steps_st)
def test_hours_of_a_period_add_up_to_the_period_energy(start_s, steps):
    # a counter that carries on proves every joule, gaps included (they are bridged)
    points = series(start_s, steps)
    usages = gpu_usage_by_hour(counter_points(points), hour_starts_s=hours_of(points), max_gap_s=MAX_GAP_S)
    assert math.isclose(sum(u.energy_j for u in usages), sum(a for _, a in points), rel_tol=1e-9, abs_tol=1e-6)
    observed_s = sum(t1 - t0 for (t0, _), (t1, _) in itertools.pairwise(points) if t1 - t0 <= MAX_GAP_S)
    assert math.isclose(sum(u.observed_s for u in usages), observed_s, abs_tol=1e-6)
    covered_s = sum(u.observed_s + u.bridged_s for u in usages)
    assert math.isclose(covered_s, points[-1][0] - points[0][0], abs_tol=1e-6)


@settings(max_examples=60, deadline=None)
@given(start_st, steps_st, st.data())
def test_a_restart_inside_a_gap_loses_exactly_that_gaps_energy(start_s, steps, data):
    points = series(start_s, steps)
    restarts = frozenset(data.draw(st.sets(st.integers(1, len(points) - 1), max_size=4)) if len(points) > 1 else ())
    usages = gpu_usage_by_hour(counter_points(points, restarts=restarts), hour_starts_s=hours_of(points))
    lost = sum(points[i][1] for i in restarts if points[i][0] - points[i - 1][0] > MAX_GAP_S)
    assert math.isclose(sum(u.energy_j for u in usages), sum(a for _, a in points) - lost, abs_tol=1e-6)


@settings(max_examples=60, deadline=None)
@given(start_st, steps_st, st.randoms(use_true_random=False), st.data())
def test_shuffled_and_duplicated_gpu_samples_give_identical_usage(start_s, steps, rnd, data):
    points = series(start_s, steps)
    samples = counter_points(points)
    messy = samples + data.draw(st.lists(st.sampled_from(samples), max_size=10))
    rnd.shuffle(messy)
    hours = hours_of(points)
    assert gpu_usage_by_hour(messy, hour_starts_s=hours) == gpu_usage_by_hour(samples, hour_starts_s=hours)


@settings(max_examples=60, deadline=None)
@given(start_st, steps_st, st.data())
def test_counter_restarts_between_close_samples_do_not_change_energy(start_s, steps, data):
    points = series(start_s, steps)
    close = [i for i in range(1, len(points)) if points[i][0] - points[i - 1][0] <= MAX_GAP_S]
    restarts = frozenset(data.draw(st.sets(st.sampled_from(close), max_size=4)) if close else ())
    hours = hours_of(points)
    plain = gpu_usage_by_hour(counter_points(points), hour_starts_s=hours)
    restarted = gpu_usage_by_hour(counter_points(points, restarts=restarts), hour_starts_s=hours)
    assert [u.energy_j for u in restarted] == [u.energy_j for u in plain]


@settings(max_examples=60, deadline=None)
@given(start_st, steps_st)
def test_hour_by_hour_from_its_window_equals_all_hours_at_once(start_s, steps):
    points = series(start_s, steps)
    samples, hours = counter_points(points), hours_of(points)
    at_once = gpu_usage_by_hour(samples, hour_starts_s=hours)
    one_by_one = []
    for hour in hours:
        low, high = sample_window_s([hour], max_gap_s=MAX_GAP_S)
        # the window's samples and the nearest one beyond it on each side (a gap's far end)
        before, after = [p for p in samples if p.ts_s < low][-1:], [p for p in samples if p.ts_s > high][:1]
        window = [*before, *(p for p in samples if low <= p.ts_s <= high), *after]
        one_by_one += gpu_usage_by_hour(window, hour_starts_s=[hour])
    assert tuple(one_by_one) == at_once
    assert gpu_usage_by_hour(samples, hour_starts_s=hours) == at_once  # recomputing is identical


@settings(max_examples=60, deadline=None)
@given(start_st, steps_st)
def test_hours_of_a_period_add_up_to_the_integrated_energy(start_s, steps):
    points = series(start_s, steps)
    samples = [gpu(ts_s, power_w=float(added % 700)) for ts_s, added in points]
    total_j = sum(
        (a.power_w + b.power_w) / 2 * (b.ts_s - a.ts_s)
        for a, b in itertools.pairwise(samples)
        if b.ts_s - a.ts_s <= MAX_GAP_S
    )
    usages = gpu_usage_by_hour(samples, hour_starts_s=hours_of(points))
    assert math.isclose(sum(u.energy_j for u in usages), total_j, rel_tol=1e-9, abs_tol=1e-6)


# --- properties: serving ---------------------------------------------------------

LONG_GAP_S = 10_000.0
# serving steps may span several hours (with a long gap limit) to exercise multi-hour splits
# (tokens added, TTFT counts too: at most 20,000 requests a second, 2,000 a tenth, on one GPU)
serving_steps_st = st.lists(
    st.tuples(st.integers(1, 80_000), st.integers(0, 10**6)).map(lambda step: (step[0], min(step[1], 2000 * step[0]))),
    min_size=1,
    max_size=30,
)


def token_points(points: list[tuple[float, int]], *, restarts: frozenset[int] = frozenset()) -> list[ServingPoint]:
    """Prompt tokens from 1e9, requests a third of them, TTFT buckets taking a half, quarter, eighth and the rest."""
    out, counter, buckets, epoch = [], 10**9, (0, 0, 0, 10**9), 0
    for i, (ts_s, added) in enumerate(points):
        if i in restarts:
            counter, buckets, epoch = 0, (0, 0, 0, 0), epoch + 1
        counter += added
        shares = (added // 2, added // 4, added // 8, added - added // 2 - added // 4 - added // 8)
        buckets = tuple(b + s for b, s in zip(buckets, shares, strict=True))
        ttft = Histogram(BOUNDS_S, buckets)
        out.append(serving(ts_s, counter, epoch=f"start-{epoch}", requests=counter // 3, ttft_since_start=ttft))
    return out


@settings(max_examples=80, deadline=None)
@given(start_st, serving_steps_st)
def test_hours_of_a_period_add_up_to_the_period_tokens_exactly(start_s, steps):
    points = series(start_s, steps)
    usages = endpoint_usage_by_hour(token_points(points), hour_starts_s=hours_of(points), max_gap_s=LONG_GAP_S)
    assert sum(u.prompt_tokens for u in usages) == observed_total(points, LONG_GAP_S)
    assert all(u.prompt_tokens >= 0 and u.requests >= 0 for u in usages)
    ttft_total = sum(u.ttft.total for u in usages if u.ttft is not None)
    assert ttft_total == observed_total(points, LONG_GAP_S)  # the buckets partition the counter


@settings(max_examples=60, deadline=None)
@given(start_st, serving_steps_st, st.randoms(use_true_random=False), st.data())
def test_shuffled_and_duplicated_serving_samples_give_identical_usage(start_s, steps, rnd, data):
    points = series(start_s, steps)
    samples = token_points(points)
    messy = samples + data.draw(st.lists(st.sampled_from(samples), max_size=10))
    rnd.shuffle(messy)
    hours = hours_of(points)
    assert endpoint_usage_by_hour(messy, hour_starts_s=hours, max_gap_s=LONG_GAP_S) == endpoint_usage_by_hour(
        samples, hour_starts_s=hours, max_gap_s=LONG_GAP_S
    )


@settings(max_examples=60, deadline=None)
@given(start_st, serving_steps_st, st.data())
def test_server_restarts_do_not_change_tokens(start_s, steps, data):
    points = series(start_s, steps)
    restarts = frozenset(data.draw(st.sets(st.integers(1, len(points) - 1), max_size=4)) if len(points) > 1 else ())
    hours = hours_of(points)
    plain = endpoint_usage_by_hour(token_points(points), hour_starts_s=hours, max_gap_s=LONG_GAP_S)
    restarted = endpoint_usage_by_hour(
        token_points(points, restarts=restarts), hour_starts_s=hours, max_gap_s=LONG_GAP_S
    )
    assert [u.prompt_tokens for u in restarted] == [u.prompt_tokens for u in plain]
    assert [u.ttft for u in restarted] == [u.ttft for u in plain]
