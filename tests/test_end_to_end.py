"""The collector (simulated, or reading a stand-in dcgm-exporter) against a real server on 127.0.0.1.

The server is gunicorn on the test database; the collector runs as its own
process. Stopping the server mid-run, or killing the collector with SIGKILL,
must leave exactly the rows the simulator produced.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from fleets.services import credential_issue
from telemetry.collector.simulated import SimulatedBackend, parse_simulate_spec
from telemetry.models import GpuHourUsage, GpuSample
from telemetry.rollup import rollup_pending_run
from tests.helpers.dcgm_exporter import DcgmExporterStandIn, StandInGpu
from tests.helpers.factories import NodeFactory
from tests.helpers.processes import subprocess_env
from tests.helpers.stub_server import StubServer

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
SEED, HOSTNAME, SPEC = 7, "e2e-host", "h100-sxm:2"
WINDOW = timedelta(hours=1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """gunicorn serving the app on the test database, which can be stopped and started again."""

    def __init__(self, port: int) -> None:
        self.port, self.process = port, None
        self.env = subprocess_env()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        bind = f"127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", bind, "--workers", "2"]
        self.process = subprocess.Popen(command, cwd=ROOT, env=self.env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/healthz", timeout=5).close()
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("server did not start")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@pytest.fixture
def server(transactional_db):
    server = Server(free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def token(transactional_db):
    return credential_issue(node=NodeFactory(hostname=HOSTNAME))


@pytest.fixture
def span() -> tuple[datetime, datetime]:
    """The hour the collector backfills, fixed once per test (read again later, it would move past an hour's
    turn: the collector and the rows expected of it would cover different hours)."""
    start = (datetime.now(UTC) - timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    return start, start + WINDOW


def collector(server: Server, token: str, spool: Path, span: tuple[datetime, datetime]) -> subprocess.Popen[str]:
    start, end = span
    args = [
        "--server", server.url, "--token", token, "--simulate", SPEC, "--seed", str(SEED), "--hostname", HOSTNAME,
        "--start", start.isoformat(), "--end", end.isoformat(), "--batch-seconds", "60",
        "--max-backoff", "1", "--spool", str(spool), "--log-level", "WARNING",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("WATTLEDGER_")}
    return subprocess.Popen(
        [sys.executable, "-m", "telemetry.collector", *args], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True
    )


def expected_rows(span: tuple[datetime, datetime]) -> set[tuple]:
    """What the simulator produces for the window, computed here independently of any transfer."""
    backend = SimulatedBackend(parse_simulate_spec(SPEC), seed=SEED, hostname=HOSTNAME)
    start, end = span
    rows = set()
    for second in range(int((end - start).total_seconds())):
        for reading in backend.read(start.timestamp() + second):
            rows.add(_key(reading.gpu.uuid, reading.ts, reading.power_w, reading.energy_j, reading.util_pct))
    return rows


def stored_rows() -> set[tuple]:
    rows = GpuSample.objects.values_list("gpu__uuid", "ts", "power_w", "energy_j", "util_pct")
    return {_key(uuid, ts.timestamp(), power, energy, util) for uuid, ts, power, energy, util in rows}


def _key(uuid: str, ts: float, power_w: float | None, energy_j: float | None, util: int | None) -> tuple:
    # power_w is a 4-byte float on PostgreSQL: compare at the precision it is stored with.
    return uuid, round(ts, 3), None if power_w is None else float(f"{power_w:.6g}"), energy_j, util


def wait_until(condition, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_server_restart_mid_backfill_loses_nothing_and_stores_nothing_twice(server, token, tmp_path, span):
    agent = collector(server, token, tmp_path / "spool", span)
    wait_until(lambda: GpuSample.objects.count() > 0, 60)

    server.stop()
    during_outage = GpuSample.objects.count()
    time.sleep(2)
    server.start()
    _, stderr = agent.communicate(timeout=150)

    assert agent.returncode == 0, stderr
    expected = expected_rows(span)
    assert during_outage < len(expected), "the outage must fall in the middle of the run"
    assert len(stored_rows()) == GpuSample.objects.count() == len(expected) == 2 * 60 * 60
    assert stored_rows() == expected


def test_collector_killed_with_sigkill_and_restarted_loses_nothing(server, token, tmp_path, span):
    spool = tmp_path / "spool"
    first = collector(server, token, spool, span)
    wait_until(lambda: GpuSample.objects.count() > 0, 60)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    partial = GpuSample.objects.count()

    second = collector(server, token, spool, span)
    _, stderr = second.communicate(timeout=150)

    assert second.returncode == 0, stderr
    expected = expected_rows(span)
    assert 0 < partial < len(expected)
    assert GpuSample.objects.count() == len(expected)
    assert stored_rows() == expected


def test_the_collector_reading_dcgm_exporter_stores_the_exporters_energy_to_the_mj(server, tmp_path):
    # given: a node, a stand-in dcgm-exporter with two GPUs, and the collector reading it live
    token = credential_issue(node=NodeFactory(hostname="dcgm-host"))
    stand_in = DcgmExporterStandIn(
        [StandInGpu("GPU-e2e-0", 0), StandInGpu("GPU-e2e-1", 1, step_mj=35_025)], hostname="dcgm-host"
    )
    exporter = StubServer(default=stand_in.answer).start()
    args = [
        "--server", server.url, "--token", token, "--hostname", "dcgm-host", "--spool", str(tmp_path / "spool"),
        "--dcgm-exporter", f"{exporter.url}/metrics", "--sample-interval", "0.25", "--batch-seconds", "1",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("WATTLEDGER_")}
    agent = subprocess.Popen(
        [sys.executable, "-m", "telemetry.collector", *args], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        # when: its counters reset (a driver reload), it answers 500 for a while, then recovers
        for mode, requests in (("ok", 6), ("reset", 10), ("error", 13), ("ok", 20)):
            if mode == "reset":
                stand_in.resets, mode = 1, "ok"
            stand_in.mode = mode
            wait_until(lambda n=requests: stand_in.requests >= n, 60)
        agent.send_signal(signal.SIGTERM)
        _, stderr = agent.communicate(timeout=60)
    finally:
        exporter.stop()
    assert agent.returncode == 0, stderr
    rollup_pending_run(now=timezone.now())

    # then: the stored hourly energy of each GPU is what the stand-in's GPU used between its first and last sample
    for gpu in stand_in.gpus:
        stored = GpuSample.objects.filter(gpu__uuid=gpu.uuid, energy_j__isnull=False).order_by("ts")
        readings = list(stored.values_list("energy_j", flat=True))
        first, last = readings[0], readings[-1]
        truth_j = gpu.truth_j(round(first * 1000), round(last * 1000))
        hourly_j = sum(GpuHourUsage.objects.filter(gpu__uuid=gpu.uuid).values_list("energy_j", flat=True))
        assert truth_j > 0 and hourly_j == pytest.approx(truth_j, rel=1e-3)
    # the 500s are a gap that the counter bridged, not zeros
    assert not GpuSample.objects.filter(power_w=0).exists() and not GpuSample.objects.filter(energy_j=0).exists()
    assert GpuSample.objects.filter(gpu__uuid="GPU-e2e-0").count() <= stand_in.requests - 3
