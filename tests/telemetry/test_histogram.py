"""TTFT histograms: per-bucket counts, counter increases, merges and quantiles (no database)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telemetry.histogram import (
    Histogram,
    HistogramBoundsError,
    histogram_coarsen,
    histogram_empty,
    histogram_from_cumulative,
    histogram_increase,
    histogram_merge,
    histogram_quantile,
    histogram_restarted,
)

BOUNDS_S = (0.1, 0.5, 1.0)


def hist(*counts: int, bounds_s: tuple[float, ...] = BOUNDS_S) -> Histogram:
    return Histogram(bounds_s, counts)


# --- the dataclass --------------------------------------------------------------


def test_histogram_needs_one_count_per_bound_plus_inf():
    with pytest.raises(ValueError, match="3 bounds need 4 counts"):
        hist(1, 2, 3)


def test_histogram_refuses_negative_counts():
    with pytest.raises(ValueError, match="negative"):
        hist(1, -1, 0, 0)


def test_histogram_refuses_bounds_that_do_not_increase():
    with pytest.raises(HistogramBoundsError, match="strictly increasing"):
        Histogram((0.5, 0.5), (0, 0, 0))


def test_histogram_refuses_an_explicit_infinite_bound():
    with pytest.raises(HistogramBoundsError, match="finite"):
        Histogram((0.5, float("inf")), (0, 0, 0))


def test_histogram_total_counts_every_bucket():
    assert hist(1, 2, 3, 4).total == 10


def test_histogram_empty_has_no_observations():
    assert histogram_empty(BOUNDS_S) == hist(0, 0, 0, 0)


# --- from Prometheus buckets, and increases --------------------------------------


def test_from_cumulative_turns_le_buckets_into_per_bucket_counts():
    assert histogram_from_cumulative(BOUNDS_S, [1, 3, 4, 4]) == hist(1, 2, 1, 0)


def test_from_cumulative_refuses_decreasing_buckets():
    with pytest.raises(ValueError, match="must not decrease"):
        histogram_from_cumulative(BOUNDS_S, [3, 2, 4, 4])


def test_increase_is_the_bucketwise_difference():
    # given cumulative readings [1,3,4,4] then [2,5,8,9]
    before, after = hist(1, 2, 1, 0), hist(2, 3, 3, 1)
    # then
    assert histogram_increase(before, after, epoch_changed=False) == hist(1, 1, 2, 1)


def test_increase_after_a_dropped_bucket_is_the_new_reading():
    before, after = hist(10, 20, 5, 1), hist(1, 2, 0, 0)
    assert histogram_restarted(before, after, epoch_changed=False)
    assert histogram_increase(before, after, epoch_changed=False) == after


def test_increase_after_an_epoch_change_is_the_new_reading():
    before, after = hist(1, 2, 1, 0), hist(5, 5, 5, 5)
    assert histogram_increase(before, after, epoch_changed=True) == after


def test_new_bounds_count_as_a_restart():
    before, after = hist(1, 2, 1, 0), Histogram((0.2, 1.0), (4, 4, 4))
    assert histogram_restarted(before, after, epoch_changed=False)
    assert histogram_increase(before, after, epoch_changed=False) == after


# --- coarsen and merge -----------------------------------------------------------


def test_coarsen_sums_the_buckets_between_kept_bounds():
    assert histogram_coarsen(hist(1, 2, 3, 4), (0.5,)) == Histogram((0.5,), (3, 7))


def test_coarsen_onto_a_bound_the_histogram_lacks_raises():
    with pytest.raises(HistogramBoundsError, match=r"lacks"):
        histogram_coarsen(hist(1, 2, 3, 4), (0.25,))


def test_merge_adds_bucket_by_bucket():
    assert histogram_merge([hist(1, 2, 3, 4), hist(10, 0, 0, 1)]) == hist(11, 2, 3, 5)


def test_merge_of_nothing_is_none():
    assert histogram_merge([]) is None


def test_merge_refuses_different_bounds():
    with pytest.raises(HistogramBoundsError, match="different bounds"):
        histogram_merge([hist(1, 2, 3, 4), Histogram((0.5, 2.0), (1, 1, 1))])


def test_merge_with_coarsen_rebuckets_onto_the_shared_bounds():
    merged = histogram_merge([hist(1, 2, 3, 4), Histogram((0.5, 2.0), (1, 1, 1))], coarsen=True)
    # shared finite bound: 0.5; hist -> (3, 7), other -> (1, 2)
    assert merged == Histogram((0.5,), (4, 9))


def test_merge_with_coarsen_and_no_shared_bound_keeps_only_the_total():
    merged = histogram_merge([hist(1, 2, 3, 4), Histogram((2.0,), (1, 1))], coarsen=True)
    assert merged == Histogram((), (12,))


# --- quantiles -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "expected_s"),
    [
        (0.25, 0.1),  # rank 10 = the whole first bucket: its upper bound
        (0.5, 0.3),  # rank 20: 10 into the second bucket's 20, halfway from 0.1 to 0.5
        (0.9, 0.8),  # rank 36: 6 into the third bucket's 10, 0.5 + 0.5 * 0.6
        (1.0, 1.0),
        (0.125, 0.05),  # rank 5 in the first bucket, which starts at 0
    ],
)
def test_quantile_interpolates_linearly_inside_the_bucket(q, expected_s):
    assert histogram_quantile(q, hist(10, 20, 10, 0)) == pytest.approx(expected_s)


def test_quantile_in_the_inf_bucket_is_the_highest_finite_bound():
    assert histogram_quantile(0.5, hist(0, 0, 0, 5)) == 1.0


def test_quantile_of_an_empty_histogram_is_none():
    assert histogram_quantile(0.5, hist(0, 0, 0, 0)) is None


def test_quantile_without_finite_bounds_is_none():
    assert histogram_quantile(0.5, Histogram((), (5,))) is None


def test_quantile_zero_is_the_lower_end_of_the_first_nonempty_bucket():
    assert histogram_quantile(0.0, hist(0, 5, 0, 0)) == 0.1


def test_quantile_with_a_first_bound_at_zero_returns_that_bound():
    assert histogram_quantile(0.5, Histogram((0.0, 1.0), (4, 0, 0))) == 0.0


@pytest.mark.parametrize("q", [-0.1, 1.1])
def test_quantile_outside_zero_to_one_raises(q):
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        histogram_quantile(q, hist(1, 0, 0, 0))


# --- properties ------------------------------------------------------------------

counts_st = st.lists(st.integers(0, 1000), min_size=4, max_size=4).map(tuple)


@settings(max_examples=60, deadline=None)
@given(st.lists(counts_st, min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_merge_does_not_depend_on_order(counts_list, rnd):
    histograms = [Histogram(BOUNDS_S, c) for c in counts_list]
    shuffled = histograms[:]
    rnd.shuffle(shuffled)
    assert histogram_merge(histograms) == histogram_merge(shuffled)


@settings(max_examples=60, deadline=None)
@given(counts_st.filter(lambda c: sum(c) > 0), st.floats(0.0, 1.0), st.integers(2, 5))
def test_merging_copies_of_a_histogram_keeps_its_quantiles(counts, q, copies):
    one = Histogram(BOUNDS_S, counts)
    merged = histogram_merge([one] * copies)
    assert merged is not None
    assert histogram_quantile(q, merged) == pytest.approx(histogram_quantile(q, one))


@settings(max_examples=60, deadline=None)
@given(counts_st.filter(lambda c: sum(c) > 0), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_quantile_grows_with_q_and_stays_within_the_bounds(counts, q1, q2):
    histogram = Histogram(BOUNDS_S, counts)
    low, high = histogram_quantile(min(q1, q2), histogram), histogram_quantile(max(q1, q2), histogram)
    assert low is not None and high is not None
    assert 0.0 <= low <= high <= BOUNDS_S[-1]


@settings(max_examples=60, deadline=None)
@given(counts_st, st.sampled_from([(), (0.1,), (0.5,), (1.0,), (0.1, 1.0), BOUNDS_S]))
def test_coarsen_keeps_the_total_and_the_counts_at_kept_bounds(counts, kept):
    histogram = Histogram(BOUNDS_S, counts)
    coarse = histogram_coarsen(histogram, kept)
    assert coarse.total == histogram.total
    for i, bound in enumerate(kept):
        assert sum(coarse.counts[: i + 1]) == sum(histogram.counts[: BOUNDS_S.index(bound) + 1])
