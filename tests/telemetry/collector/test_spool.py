"""The disk spool: durable, ordered, bounded; survives crashes and restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from telemetry.collector.spool import BLOCK_BYTES, Spool, SpoolBusy, disk_bytes


def fill(spool: Spool, count: int, size: int = 100) -> list[str]:
    ids = [f"batch{i:03d}" for i in range(count)]
    for batch_id in ids:
        spool.put(batch_id, batch_id.encode().ljust(size, b"."))
    return ids


def test_batches_survive_an_abandoned_spool_and_come_back_oldest_first(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    ids = fill(spool, 5)
    spool.acknowledge(spool.pending()[0])
    (tmp_path / "tmp" / "half-written.json.gz.tmp").write_bytes(b"\x1f\x8b")  # a crash mid-write
    del spool  # a crash: nothing flushed or closed on purpose

    reopened = Spool(tmp_path)

    assert [item.batch_id for item in reopened.pending()] == ids[1:]
    assert [item.read() for item in reopened.pending()] == [i.encode().ljust(100, b".") for i in ids[1:]]
    assert not list((tmp_path / "tmp").iterdir())
    reopened.put("after-restart", b"x")
    assert reopened.pending()[-1].batch_id == "after-restart"  # numbering continues after the survivors


def test_the_bound_drops_the_oldest_and_counts_them_persistently(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=3 * BLOCK_BYTES)
    ids = fill(spool, 5)

    assert [item.batch_id for item in spool.pending()] == ids[2:]
    assert spool.dropped_batches == 2 and spool.pending_bytes == 3 * BLOCK_BYTES
    assert spool.state().dropped_batches == 2
    spool.close()
    assert Spool(tmp_path).dropped_batches == 2
    assert json.loads((tmp_path / "state.json").read_text()) == {"dropped_batches": 2}


def test_sizes_count_whole_disk_blocks() -> None:
    assert disk_bytes(1) == disk_bytes(BLOCK_BYTES) == BLOCK_BYTES
    assert disk_bytes(BLOCK_BYTES + 1) == 2 * BLOCK_BYTES


def test_a_batch_larger_than_the_bound_is_still_kept(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=BLOCK_BYTES)

    fill(spool, 1, size=3 * BLOCK_BYTES)

    assert len(spool) == 1 and spool.dropped_batches == 0


def test_rejected_batches_move_aside_with_their_reason(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    fill(spool, 2)
    item = spool.oldest()
    assert item is not None

    spool.reject(item, "HTTP 422: gpu_samples.power_w[3]=9000.0 is outside 0.0..5000.0")

    assert [i.batch_id for i in spool.pending()] == ["batch001"]
    moved = tmp_path / "rejected" / item.path.name
    assert moved.read_bytes().startswith(b"batch000")
    assert "HTTP 422" in (tmp_path / "rejected" / (item.path.name + ".reason")).read_text()


def test_an_item_dropped_meanwhile_reads_as_none(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=BLOCK_BYTES)
    fill(spool, 1)
    first = spool.oldest()
    fill(spool, 1)  # drops the first

    assert first is not None and first.read() is None


def test_two_collectors_cannot_share_a_spool(tmp_path: Path) -> None:
    spool = Spool(tmp_path)

    with pytest.raises(SpoolBusy, match="another collector"):
        Spool(tmp_path)
    spool.close()
    Spool(tmp_path).close()
