"""``bin/run-demo`` as a user starts it: the URL and login on the terminal (on every start and on --help),
access logs in var/log/ and not on the terminal, and Ctrl-C stopping everything within 10 s, saying what
it waits for. Runs the real thing (runserver, Celery worker and beat, live simulated collectors) on a
SQLite database of its own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from demo import spec

ROOT = Path(__file__).resolve().parents[2]
LOGIN = f"{spec.USERNAME} / {spec.PASSWORD}"


def _environment(var_dir: Path, port: int | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "DJANGO_SETTINGS"))}
    env.update(WATTLEDGER_VAR_DIR=str(var_dir), DEBUG="1", PYTHON=sys.executable)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    if port is not None:
        env["DEMO_PORT"] = str(port)
    return env


def _ctrl_c_as_at_a_terminal() -> None:
    """SIGINT at its default, as a terminal's shell starts the script: a suite started in the background of a
    non-interactive shell inherits SIGINT ignored, and a script cannot trap a signal ignored on entry."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_help_prints_the_url_and_the_login(tmp_path):
    done = subprocess.run(
        [str(ROOT / "bin" / "run-demo"), "--help"], env=_environment(tmp_path), capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip

    assert "http://127.0.0.1:8000/" in done.stdout
    assert LOGIN in done.stdout
    assert "Ctrl-C stops everything within 10 s" in done.stdout
    assert f"{tmp_path / 'log'}/" in done.stdout  # where the logs are


@pytest.fixture
def seeded(tmp_path):
    env = _environment(tmp_path)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput"], env=env, cwd=ROOT, capture_output=True, check=True, timeout=300)
    subprocess.run(
        [*manage, "seed_demo", "--no-backfill"], env=env, cwd=ROOT, capture_output=True, check=True, timeout=300
    )
    return tmp_path


def _read_until(process: subprocess.Popen[str], needle: str, timeout_s: float, seen: list[str]) -> None:
    deadline = time.monotonic() + timeout_s
    os.set_blocking(process.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line:
            seen.append(line)
            if needle in line:
                return
        else:
            time.sleep(0.1)
    pytest.fail(f"{needle!r} not printed within {timeout_s} s:\n{''.join(seen)}")


@pytest.mark.slow
def test_the_terminal_shows_url_login_and_warnings_and_ctrl_c_stops_everything_within_10_s(seeded):
    port = _free_port()
    process = subprocess.Popen(
        [str(ROOT / "bin" / "run-demo")], env=_environment(seeded, port), cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True, preexec_fn=_ctrl_c_as_at_a_terminal,
    )  # fmt: skip
    seen: list[str] = []
    try:
        _read_until(process, "Ready:", 120, seen)
        # Collectors send a batch every few seconds: let some arrive.
        web_log = seeded / "log" / "web.log"
        deadline = time.monotonic() + 60
        while "POST /api/v1/ingest/" not in (web_log.read_text() if web_log.exists() else ""):
            assert time.monotonic() < deadline, "no batch reached the web server"
            time.sleep(0.5)
        time.sleep(2)

        started = time.monotonic()
        process.send_signal(signal.SIGINT)  # what Ctrl-C sends to the script
        remaining, _ = process.communicate(timeout=15)
        took_s = time.monotonic() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    terminal = "".join(seen) + remaining

    assert took_s < 10, terminal
    assert f"http://127.0.0.1:{port}/" in terminal and LOGIN in terminal
    assert terminal.count(LOGIN) >= 2, "printed at start and again once the server answers"
    assert "POST /api/v1/ingest/" not in terminal, "access logs go to var/log/, not to the terminal"
    assert "Stopping: " in terminal and "worker" in terminal.split("Stopping: ", 1)[1]
    assert "Stopped in " in terminal
    # each stop message once; no traceback, no shell notice of a killed job
    assert terminal.count("Stopping: ") == terminal.count("Stopped in ") == 1, terminal
    assert terminal.count("worker: killed after") <= 1, terminal
    assert "Traceback" not in terminal and " Killed " not in terminal, terminal
    for log in ("web", "worker", "beat", "collectors"):
        assert (seeded / "log" / f"{log}.log").stat().st_size > 0, log
    # Nothing of it is left running once the 10 s are up (a killed process is gone once it is reaped).
    while True:
        leftovers = subprocess.run(["pgrep", "-s", str(process.pid)], capture_output=True, text=True).stdout.split()
        if not leftovers or time.monotonic() - started >= 10:
            break
        time.sleep(0.1)
    assert leftovers == [], terminal
