"""While the demo's backfill runs on SQLite, ingest answers no 5xx but a 503 with Retry-After, and nothing in the
server's or the collectors' output reads like a crash (no traceback, no 5xx the collectors did not wait out).

The real thing, as ``bin/run-demo`` runs it: ``runserver`` on a SQLite file of its own, live simulated collectors
sending to it, and ``seed_demo --server`` sending history through the same ingest API at the same time.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIVE_NODES = ("sjc-h100-01", "sto-4090-01")  # two live collectors: enough writers beside the backfill's
ACCESS_LINE = re.compile(r'"POST /api/v1/ingest/ HTTP/1\.1" (\d{3}) ')

pytestmark = pytest.mark.slow


def _environment(var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "DJANGO_SETTINGS"))}
    # the busy timeout bin/run-demo gives its web server
    env.update(WATTLEDGER_VAR_DIR=str(var_dir), DEBUG="1", PYTHONUNBUFFERED="1", SQLITE_BUSY_TIMEOUT_S="6")
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_answering(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url + "/healthz", timeout=5).close()
            return
        except urllib.error.HTTPError:
            return  # it answers (503 until the broker is up: ingest needs only the database)
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"{url} did not answer")


def _wait_logged(log: Path, line: str) -> None:
    """Wait until ``log`` holds ``line`` (a collector starting on a busy machine takes seconds)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if log.exists() and line in log.read_text():
            return
        time.sleep(0.2)
    pytest.fail(f"{log.name} did not log {line!r}: {log.read_text() if log.exists() else ''}")


def _live_collector(hostname: str, node: list[str], url: str, var_dir: Path, env: dict[str, str], log: Path):
    """The node's live collector as bin/demo-collectors starts it (its nodes.tsv row: --simulate, --seed,
    --simulate-llm, --simulate-pattern), so that history the backfill sends before its first live sample
    is the same simulated GPU's."""
    simulate, seed, llm, pattern = node
    command = [
        sys.executable, "-m", "telemetry.collector", "--server", url,
        "--token-file", str(var_dir / "demo" / "tokens" / hostname), "--hostname", hostname,
        "--simulate", simulate, "--simulate-serving", "--seed", seed, "--simulate-llm", llm or "8b",
        "--simulate-pattern", pattern or "steady", "--sample-interval", "1",
        "--batch-seconds", "2", "--spool", str(var_dir / "demo" / "spool" / hostname), "--max-backoff", "10",
        "--shutdown-grace", "3", "--log-level", "INFO",
    ]  # fmt: skip
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("w"))


def test_under_a_concurrent_backfill_on_sqlite_ingest_answers_no_5xx_but_503_with_retry_after(tmp_path: Path):
    # given: the demo's inventory on a SQLite file of its own, served as bin/run-demo serves it
    env, manage = _environment(tmp_path), [sys.executable, str(ROOT / "manage.py")]
    for step in (["migrate", "--noinput"], ["seed_demo", "--no-backfill"]):
        subprocess.run([*manage, *step], env=env, cwd=ROOT, capture_output=True, check=True, timeout=300)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    web_log = tmp_path / "web.log"
    web = subprocess.Popen(
        [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"], env=env, cwd=ROOT, stdout=web_log.open("w"),
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    rows = (line.split("\t") for line in (tmp_path / "demo" / "nodes.tsv").read_text().splitlines())
    nodes = {row[0]: [*row[1:], "", "", ""][:4] for row in rows}
    live = []
    try:
        _wait_answering(url)
        live = [_live_collector(host, nodes[host], url, tmp_path, env, tmp_path / f"{host}.log") for host in LIVE_NODES]
        for host in LIVE_NODES:  # each live collector holds its spool lock: the backfill leaves it the present
            _wait_logged(tmp_path / f"{host}.log", "collecting live")
        # when: twelve hours of the other nodes' history go in through the same API
        backfill = subprocess.run(
            [*manage, "seed_demo", "--hours", "12", "--server", url], env=env, cwd=ROOT, capture_output=True,
            text=True, timeout=600,
        )  # fmt: skip
        time.sleep(3)  # the live collectors' batches sent meanwhile are answered
    finally:
        for process in live:
            process.send_signal(signal.SIGTERM)
        for process in live:
            process.wait(timeout=30)
        web.terminate()
        web.wait(timeout=30)

    # then: the history is in, every ingest answer was 200 or a 503 (the middleware's, always with Retry-After)
    assert backfill.returncode == 0, backfill.stdout[-2000:] + backfill.stderr[-2000:]
    # the six other nodes; a live one too when its first batch was stored before the backfill was planned
    # (then its history before that batch is sent), as with bin/run-demo's live collectors beside seed_demo --rest
    sent = re.search(r"node-days sent from (\d+) node\(s\)", backfill.stdout)
    assert sent and 6 <= int(sent.group(1)) <= 6 + len(LIVE_NODES), backfill.stdout[-2000:]
    server = web_log.read_text()
    statuses = [int(status) for status in ACCESS_LINE.findall(server)]
    assert statuses and set(statuses) <= {200, 503}, sorted(set(statuses))
    assert "Traceback" not in server and "Internal Server Error" not in server
    # and the live collectors waited out any back-pressure: nothing logged as a failure, no warning
    for host in LIVE_NODES:
        collector = (tmp_path / f"{host}.log").read_text()
        assert "acknowledged" in collector or "collecting live" in collector
        assert "Traceback" not in collector and " WARNING " not in collector and " ERROR " not in collector, host
        assert not re.search(r"not sent \(HTTP 5\d\d\)", collector), host
