"""The collector as a process: --help, no Django, SIGTERM flush, kill -9, a backfill run."""

from __future__ import annotations

import ctypes.util
import gzip
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from telemetry.collector import wire
from telemetry.collector.spool import Spool
from tests.helpers.stub_server import StubServer

ROOT = Path(__file__).resolve().parents[3]
COLLECTOR = [sys.executable, "-m", "telemetry.collector"]


def start(args: list[str]) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WATTLEDGER_")}
    return subprocess.Popen(
        [*COLLECTOR, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def live_args(server: StubServer, spool: Path) -> list[str]:
    return [
        "--server", server.url, "--token", "t", "--simulate", "h100-sxm:2", "--hostname", "n1",
        "--sample-interval", "0.1", "--batch-seconds", "1", "--shutdown-grace", "3", "--spool", str(spool),
    ]  # fmt: skip


def stamps_by_gpu(bodies: list[bytes]) -> dict[str, list[float]]:
    stamps: dict[str, list[float]] = {}
    for body in bodies:
        batch = wire.batch_decode(body, content_encoding="gzip")
        for ref, ts in zip(batch.gpu_samples["gpu"], batch.gpu_samples["ts"], strict=True):
            stamps.setdefault(batch.gpus[ref].uuid, []).append(ts)
    return {uuid: sorted(values) for uuid, values in stamps.items()}


def spooled_bodies(spool: Path) -> list[bytes]:
    return [path.read_bytes() for path in sorted((spool / "pending").glob("*.json.gz"))]


def test_help_explains_the_options() -> None:
    done = subprocess.run([*COLLECTOR, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)

    assert done.returncode == 0
    for word in ("--server", "--token", "--serving", "--spool", "--simulate", "--start", "WATTLEDGER_SERVER"):
        assert word in done.stdout


def test_importing_the_collector_imports_neither_django_nor_the_server_nor_pynvml() -> None:
    code = (
        "import sys, pkgutil, importlib, telemetry.collector as c\n"
        "for m in pkgutil.iter_modules(c.__path__):\n"
        "    if m.name != '__main__': importlib.import_module('telemetry.collector.' + m.name)\n"
        "banned = {'django', 'rest_framework', 'celery', 'config', 'fleets', 'accounting', 'pynvml'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in banned))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
@pytest.mark.parametrize("server_up", [True, False], ids=["server-up", "server-down"])
def test_sigterm_spools_the_last_samples_and_exits_0(stub_server: StubServer, tmp_path: Path, server_up: bool) -> None:
    if not server_up:
        stub_server.default = lambda _request: (503, {"Retry-After": "1"}, b"maintenance")
    spool = tmp_path / "spool"
    process = start(live_args(stub_server, spool))
    wait_for(lambda: len(stub_server.requests) >= 2 and (server_up or len(spooled_bodies(spool)) >= 2))

    stopped_at = time.time()
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=20)

    assert process.returncode == 0, stderr
    acknowledged = [r.body for r in stub_server.requests] if server_up else []
    stamps = stamps_by_gpu(acknowledged + spooled_bodies(spool))
    assert len(stamps) == 2 and (not server_up or not spooled_bodies(spool))
    for values in stamps.values():
        assert len(values) == len(set(values))
        assert all(b - a < 0.8 for a, b in itertools.pairwise(values))  # no batch went missing (1 s each)
        assert values[-1] >= stopped_at - 0.5  # the last partial batch was flushed
    assert "SIGTERM" in stderr


@pytest.mark.slow
def test_kill_9_leaves_whole_batches_that_a_restart_sends(stub_server: StubServer, tmp_path: Path) -> None:
    stub_server.default = lambda _request: (503, {}, b"down")
    spool = tmp_path / "spool"
    process = start(live_args(stub_server, spool))
    wait_for(lambda: len(spooled_bodies(spool)) >= 3)

    process.kill()
    process.communicate(timeout=10)

    reopened = Spool(spool)  # the dead process's lock is gone
    items = reopened.pending()
    assert len(items) >= 3
    assert all(wire.batch_decode(item.read() or b"", content_encoding="gzip").gpu_row_count for item in items)
    assert items == sorted(items, key=lambda item: item.seq)


def test_backfill_exits_once_every_batch_is_acknowledged(stub_server: StubServer, tmp_path: Path) -> None:
    args = [
        "--server", stub_server.url, "--token", "t", "--simulate", "h100-sxm:8", "--simulate-serving", "--seed", "3",
        "--start", "2025-06-01T00:00:00Z", "--end", "2025-06-01T00:05:00Z", "--spool", str(tmp_path / "spool"),
    ]  # fmt: skip
    process = start(args)

    _, stderr = process.communicate(timeout=60)

    assert process.returncode == 0, stderr
    batches = [json.loads(gzip.decompress(r.body)) for r in stub_server.requests]
    assert len(batches) == 5 and all(len(b["gpu_samples"]["ts"]) == 480 for b in batches)  # 60 s x 8 GPUs
    assert sum(len(b["serving_samples"]["ts"]) for b in batches) == 60
    assert "100.0% acknowledged" in stderr


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="this host has NVML")
def test_without_nvml_and_without_simulate_it_says_why_and_exits_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [*COLLECTOR, "--server", "http://127.0.0.1:9", "--token", "t", "--spool", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip

    assert done.returncode == 2
    assert "NVML" in done.stderr and "--simulate" in done.stderr
