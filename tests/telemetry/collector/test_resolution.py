"""``--resolution``: GPU samples averaged on the host, energy still exact from the counter."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from telemetry.collector.backend import GpuIdentity, GpuReading
from telemetry.collector.cli import main
from telemetry.collector.resolution import GpuAverager
from tests.helpers.stub_server import StubServer

HOUR_START = 1_748_736_000  # 2025-06-01T00:00:00Z


def backfill_rows(tmp_path: Path, server: StubServer, *extra: str) -> dict[str, list[dict]]:
    """Backfill [00:00, 01:00] inclusive of 01:00:00 through the command line; the GPU rows sent, per UUID."""
    argv = [
        "--server", server.url, "--token", "t", "--spool", str(tmp_path / "spool"),
        "--simulate", "rtx-4090:2", "--simulate-resets", "0.5", "--seed", "3", "--hostname", "n1",
        "--start", "2025-06-01T00:00:00Z", "--end", "2025-06-01T01:00:01Z", *extra,
    ]  # fmt: skip
    assert main(argv) == 0
    rows: dict[str, list[dict]] = {}
    for request in server.requests:
        batch = request.json()
        columns = batch["gpu_samples"]
        for i, gpu in enumerate(columns["gpu"]):
            ref = batch["gpus"][gpu]
            row = {name: values[i] for name, values in columns.items()}
            rows.setdefault(ref["uuid"], []).append({**row, "epoch": ref["epoch"]})
    return {uuid: sorted(found, key=lambda r: r["ts"]) for uuid, found in rows.items()}


def counter_energy_j(rows: list[dict]) -> float:
    """The counter's increase over the rows: deltas within an epoch, the new value after a restart."""
    return math.fsum(
        b["energy_j"] - a["energy_j"] if a["epoch"] == b["epoch"] else b["energy_j"]
        for a, b in itertools.pairwise(rows)
    )


@pytest.fixture
def every_second(tmp_path: Path, stub_server: StubServer) -> dict[str, list[dict]]:
    return backfill_rows(tmp_path / "r1", stub_server)


@pytest.fixture
def averaged_run(tmp_path: Path) -> tuple[dict[str, list[dict]], dict]:
    """The rows sent with ``--resolution 10``, and the first batch as sent."""
    server = StubServer().start()
    try:
        return backfill_rows(tmp_path / "r10", server, "--resolution", "10"), server.requests[0].json()
    finally:
        server.stop()


def test_energy_over_an_hour_is_identical_at_resolution_1_and_10_with_a_tenth_of_the_samples(
    every_second: dict[str, list[dict]], averaged_run: tuple[dict[str, list[dict]], dict]
) -> None:
    averaged, _ = averaged_run
    assert every_second.keys() == averaged.keys() and len(averaged) == 2
    for uuid, rows in every_second.items():
        # 00:00:00 .. 01:00:00 every second; averaged: 00:00:00 alone, then one row per 10 s window,
        # and the windows of the counter restarts at 00:30:00 and 01:00:00 each split in two (the old
        # counter's last value, then the new one); the restart at 00:00:00 opens a window of its own
        assert len(rows) == 3601
        assert len(averaged[uuid]) == 1 + 360 + 2
        epochs = [r["epoch"] for r in rows]
        assert {r["epoch"] for r in averaged[uuid]} == set(epochs) and len(set(epochs)) == 3
        assert counter_energy_j(averaged[uuid]) == counter_energy_j(rows)
        assert counter_energy_j(rows) > 0.5 * 20 * 3600  # above idle power for the hour: a real figure


def test_averaged_rows_are_the_window_means_stamped_at_its_end(
    every_second: dict[str, list[dict]], averaged_run: tuple[dict[str, list[dict]], dict]
) -> None:
    averaged, first_batch = averaged_run
    uuid, rows = next(iter(every_second.items()))
    window = [r for r in rows if HOUR_START + 600 < r["ts"] <= HOUR_START + 610]  # (00:10:00, 00:10:10]
    (row,) = [r for r in averaged[uuid] if r["ts"] == HOUR_START + 610]

    assert len(window) == 10
    assert row["energy_j"] == window[-1]["energy_j"]
    assert row["power_w"] == pytest.approx(sum(r["power_w"] for r in window) / 10, abs=1e-9)
    assert row["temp_c"] == round(sum(r["temp_c"] for r in window) / 10)
    assert isinstance(row["util_pct"], int) and isinstance(row["mem_used_bytes"], int)
    assert first_batch["collector"]["sample_interval_s"] == 10.0


def test_fields_missing_in_some_readings_are_averaged_over_those_that_have_them() -> None:
    gpu = GpuIdentity("GPU-1", 0, "NVIDIA L4", True, "boot/1")
    averager = GpuAverager(5.0)
    readings = [
        GpuReading(gpu, 1.0, power_w=10.0, energy_j=100.0, temp_c=40),
        GpuReading(gpu, 2.0, power_w=None, energy_j=None, temp_c=None, error="GPU lost"),
        GpuReading(gpu, 3.0, power_w=20.0, energy_j=130.0, temp_c=41),
    ]
    assert [averager.add([r]) for r in readings] == [[], [], []]

    (closed,) = averager.add([GpuReading(gpu, 5.0, power_w=30.0, energy_j=180.0, temp_c=43)])

    assert (closed.ts, closed.energy_j, closed.power_w, closed.temp_c, closed.error) == (5.0, 180.0, 20.0, 41, None)
    assert averager.flush() == []
