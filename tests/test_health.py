"""/healthz reports the database and the broker, and answers 503 when either is down."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_healthz_is_ok_when_database_and_broker_are_up(client, db):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "up", "broker": "up"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_and_get_health(env: dict[str, str], tmp_path: Path) -> tuple[int, dict]:
    port = free_port()
    full_env = {**os.environ, "WATTLEDGER_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    full_env.update(env)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        return _poll_health(port, server)
    finally:
        server.terminate()
        server.wait(timeout=10)


def _poll_health(port: int, server: subprocess.Popen) -> tuple[int, dict]:
    import json

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())
        except OSError:
            if server.poll() is not None:
                pytest.fail(f"server exited: {server.stderr.read().decode() if server.stderr else ''}")
            time.sleep(0.2)
    pytest.fail("server did not answer within 30 s")


def test_healthz_is_503_when_the_database_is_unreachable(tmp_path):
    status, body = serve_and_get_health(
        {"DATABASE_URL": "sqlite:////nonexistent-dir/wattledger.sqlite3", "CELERY_BROKER_URL": "filesystem://"},
        tmp_path,
    )

    assert status == 503
    assert body["status"] == "unavailable"
    assert body["database"].startswith("down")
    assert body["broker"] == "up"


def test_healthz_is_503_when_the_broker_is_unreachable(tmp_path):
    status, body = serve_and_get_health(
        {"DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "CELERY_BROKER_URL": "redis://127.0.0.1:1/0"},
        tmp_path,
    )

    assert status == 503
    assert body["database"] == "up"
    assert body["broker"].startswith("down")
