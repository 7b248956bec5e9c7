"""The epoch book: a new epoch only when a counter really restarted, kept across collector restarts."""

from __future__ import annotations

from pathlib import Path

from telemetry.collector.epochs import EpochBook

TS = 1_764_400_000.0


def test_a_counter_missing_from_one_scrape_is_not_a_restart() -> None:
    book = EpochBook()
    first = book.epoch("serving:x", "seen", (100.0, 50.0, 5.0), TS, stamp_first=True)

    missing = book.epoch("serving:x", "seen", (None, 60.0, 6.0), TS + 5)
    back = book.epoch("serving:x", "seen", (120.0, 61.0, 6.0), TS + 10)
    dropped = book.epoch("serving:x", "seen", (130.0, 2.0, 6.0), TS + 15)

    assert first == missing == back == f"seen@{int(TS)}"
    assert dropped == f"seen@{int(TS + 15)}"


def test_a_new_base_is_a_new_life_without_a_suffix() -> None:
    book = EpochBook()
    book.epoch("gpu:a", "boot1/550", (10.0,), TS)
    book.epoch("gpu:a", "boot1/550", (1.0,), TS + 1)

    assert book.epoch("gpu:a", "boot2/550", (0.5,), TS + 2) == "boot2/550"


def test_an_unreadable_book_starts_empty(tmp_path: Path) -> None:
    (tmp_path / "epochs.json").write_text("{not json")

    book = EpochBook(tmp_path / "epochs.json")

    assert book.epoch("gpu:a", "b", (1.0,), TS) == "b"
    book.save()
    assert EpochBook(tmp_path / "epochs.json").epoch("gpu:a", "b", (0.5,), TS + 1) == f"b@{int(TS + 1)}"
