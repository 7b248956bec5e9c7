"""The oracle's own checks, on hand-made records and dumps: each must be able to fail."""

from __future__ import annotations

from tests.faults.oracle import Recorded, check_raw, check_recomputed, check_resent, counter_hours

MIB = 1024 * 1024


def test_counter_hours_take_deltas_within_an_epoch_and_the_new_value_after_a_restart() -> None:
    points = [(0.0, "a", 0.0), (1800.0, "a", 100.0), (3600.0, "a", 250.0), (5400.0, "b", 30.0), (7200.0, "b", 90.0)]

    assert counter_hours(points) == {(0,): 250.0, (3600,): 90.0}


def test_counter_hours_merge_the_hours_whose_boundary_falls_in_a_gap() -> None:
    points = [(3000.0, "a", 0.0), (4000.0, "a", 100.0), (5000.0, "a", 150.0), (7300.0, "a", 400.0)]

    assert counter_hours(points) == {(0, 3600, 7200): 400.0}


def recorded() -> Recorded:
    out = Recorded("n1")
    out.gpu = {("GPU-1", 10.0): ("e1", 100.0, 250.5, 50, 40, 512 * MIB, 60),
               ("GPU-1", 11.0): ("e1", 351.0, 250.5, 50, 40, 512 * MIB, 60)}  # fmt: skip
    out.serving = {("sim://n1", 10.0): ("s1", 20, 10, 1)}
    out.batches = {"b1": {("gpu", "GPU-1", 10.0), ("serving", "sim://n1", 10.0)}, "b2": {("gpu", "GPU-1", 11.0)}}
    return out


def stored_dump(*, drop_second: bool = False, power_w: float = 250.5) -> dict:
    gpu = [["n1", "GPU-1", "e1", 10.0, 100.0, power_w, 50, 40, 512, 60]]
    if not drop_second:
        gpu.append(["n1", "GPU-1", "e1", 11.0, 351.0, 250.5, 50, 40, 512, 60])
    return {"gpu_samples": gpu, "serving_samples": [["n1", "sim://n1", "s1", 10.0, 20, 10, 1]]}


def test_raw_samples_stored_as_produced_pass() -> None:
    problems: list[str] = []

    figures = check_raw(recorded(), stored_dump(), problems)

    assert problems == [] and figures == {"gpu_rows": 2, "serving_rows": 1, "batches_lost_unspooled": 0}


def test_a_missing_or_changed_row_is_a_problem() -> None:
    missing: list[str] = []
    changed: list[str] = []

    check_raw(recorded(), stored_dump(drop_second=True), missing)
    check_raw(recorded(), stored_dump(power_w=251.0), changed)

    assert len(missing) == 1 and "1 produced rows not stored" in missing[0]
    assert len(changed) == 1 and "differ from what was produced" in changed[0]


def test_only_the_last_batch_recorded_before_a_restart_may_be_missing_and_only_whole() -> None:
    record = recorded()
    record.unspooled_candidates = {"b2"}
    problems: list[str] = []

    figures = check_raw(record, stored_dump(drop_second=True), problems)

    assert problems == [] and figures["batches_lost_unspooled"] == 1


def test_a_lost_answer_must_come_back_as_all_duplicates() -> None:
    record = recorded()
    record.answers = [
        {"batch_id": "b1", "kind": "ack", "stored": {"gpu_samples": 0}, "duplicates": {"gpu_samples": 2}},
        {"batch_id": "b2", "kind": "ack", "stored": {"gpu_samples": 1}, "duplicates": {"gpu_samples": 0}},
    ]
    problems: list[str] = []

    figures = check_resent([record], ["b1", "b2", "b3", "b1"], problems)

    assert figures["resent_seen_as_duplicates"] == 1 and figures["answers_lost_by_proxy"] == 4
    assert figures["batches_whose_answer_was_lost"] == 3  # b1's answer lost twice: one batch
    assert len(problems) == 2 and "b2" in problems[0] and "b3" in problems[1] and "never acknowledged" in problems[1]


def test_site_hours_that_differ_from_their_lines_are_a_problem_in_either_dump() -> None:
    same = {"gpu_usage": [[1]], "endpoint_usage": [[2]], "ledger": [[3]], "site_hours_problems": []}
    stale = {**same, "site_hours_problems": ["cost 5 != lines' 6 in {'site_id': 1}"]}

    kept: list[str] = []
    check_recomputed(same, same, kept)
    problems: list[str] = []
    check_recomputed(stale, same, problems)

    assert kept == []
    assert problems == ["site-hours (live): cost 5 != lines' 6 in {'site_id': 1}"]
