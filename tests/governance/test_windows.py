"""Which hours a change of a row with a validity period affects, worked by hand."""

from __future__ import annotations

from datetime import UTC, datetime

from governance.intervals import windows_changed, windows_minus, windows_overlap, windows_union


def day(n: int) -> datetime:
    return datetime(2026, 1, n, tzinfo=UTC)


def test_a_new_row_affects_its_whole_period() -> None:
    assert windows_changed(before=None, after=(day(2), None), values_changed=True) == [(day(2), None)]


def test_moving_only_the_start_later_affects_the_hours_it_leaves() -> None:
    assert windows_changed(before=(day(1), None), after=(day(2), None), values_changed=False) == [(day(1), day(2))]


def test_ending_an_open_row_affects_only_the_hours_after_its_new_end() -> None:
    assert windows_changed(before=(day(1), None), after=(day(1), day(10)), values_changed=False) == [(day(10), None)]


def test_a_value_change_affects_the_old_and_the_new_period() -> None:
    changed = windows_changed(before=(day(1), day(3)), after=(day(5), day(7)), values_changed=True)
    assert changed == [(day(1), day(3)), (day(5), day(7))]


def test_minus_cuts_holes_and_union_merges_touching_windows() -> None:
    assert windows_minus([(day(1), None)], [(day(3), day(4))]) == [(day(1), day(3)), (day(4), None)]
    assert windows_union([(day(1), day(2))], [(day(2), day(3))]) == [(day(1), day(3))]


def test_half_open_windows_that_touch_do_not_overlap() -> None:
    assert not windows_overlap((day(1), day(2)), (day(2), None))
    assert windows_overlap((day(1), None), (day(5), day(6)))
