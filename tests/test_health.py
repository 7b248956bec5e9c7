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


@pytest.mark.slow
def test_healthz_is_503_when_the_database_is_unreachable(tmp_path):
    status, body = serve_and_get_health(
        {"DATABASE_URL": "sqlite:////nonexistent-dir/wattledger.sqlite3", "CELERY_BROKER_URL": "filesystem://"},
        tmp_path,
    )

    assert status == 503
    assert body["status"] == "unavailable"
    assert body["database"].startswith("down")
    assert body["broker"] == "up"


@pytest.mark.slow
def test_healthz_is_503_when_the_broker_is_unreachable(tmp_path):
    status, body = serve_and_get_health(
        {"DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "CELERY_BROKER_URL": "redis://127.0.0.1:1/0"},
        tmp_path,
    )

    assert status == 503
    assert body["database"] == "up"
    assert body["broker"].startswith("down")


# --- a database that hangs rather than dies -------------------------------------------


def hung_server() -> tuple[socket.socket, int]:
    """A TCP listener on 127.0.0.1 that accepts and never answers: a PostgreSQL server stopped (SIGSTOP)
    looks exactly so to a client, since the kernel completes the handshake for it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    return listener, listener.getsockname()[1]


def timed_health(port: int, server: subprocess.Popen) -> tuple[int, dict, float]:
    import json

    _poll_health(port, server)  # the first answer: the worker is up (the check may still be waiting)
    time.sleep(2)  # let a check left waiting by the first request give up its thread's turn
    started = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
            status, body = response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        status, body = error.code, json.loads(error.read())
    return status, body, time.monotonic() - started


@pytest.mark.slow
def test_healthz_answers_503_within_2_s_while_postgresql_hangs(tmp_path):
    listener, db_port = hung_server()
    port = free_port()
    env = {
        **os.environ,
        "WATTLEDGER_VAR_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{db_port}/hung",
        "CELERY_BROKER_URL": "filesystem://",
    }
    command = [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        status, body, elapsed_s = timed_health(port, server)
    finally:
        server.terminate()
        server.wait(timeout=10)
        listener.close()

    assert status == 503
    assert body["database"].startswith("down")
    assert elapsed_s < 2.0


def _on_postgresql() -> bool:
    from django.db import connection

    return connection.vendor == "postgresql"


@pytest.mark.django_db(transaction=True)
def test_healthz_answers_503_within_2_s_while_a_lock_blocks_its_query_then_200(client):
    if not _on_postgresql():
        pytest.skip("a lock held by another PostgreSQL session")
    import psycopg
    from django.db import connection

    params = connection.get_connection_params()
    with psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"}, autocommit=False) as holder:
        holder.execute("LOCK TABLE django_migrations IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        response = client.get("/healthz")
        elapsed_s = time.monotonic() - started
        holder.rollback()

    assert (response.status_code, elapsed_s < 2.0) == (503, True)
    assert response.json()["database"].startswith("down")
    time.sleep(0.5)  # the check's thread sees its statement cancelled and returns
    assert client.get("/healthz").status_code == 200


@pytest.mark.django_db
def test_postgresql_connections_have_a_statement_timeout_work_mem_no_jit_and_keepalives():
    if not _on_postgresql():
        pytest.skip("PostgreSQL connection options")
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "30s"
        cursor.execute("SHOW work_mem")
        assert cursor.fetchone()[0] == "32MB"
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"
    parameters = connection.connection.info.get_parameters()
    assert (parameters["keepalives"], parameters["keepalives_idle"]) == ("1", "30")


def test_a_statement_past_the_timeout_is_cancelled_by_the_server(db):
    if not _on_postgresql():
        pytest.skip("PostgreSQL's statement_timeout")
    from tests.helpers.processes import subprocess_env

    script = (
        "import django, time; django.setup(); from django.db import connection, OperationalError\n"
        "started = time.monotonic()\n"
        "try:\n    connection.cursor().execute('SELECT pg_sleep(5)')\nexcept OperationalError as e:\n"
        "    print(type(e.__cause__).__name__, round(time.monotonic() - started))\n"
    )
    env = {**subprocess_env(), "DATABASE_STATEMENT_TIMEOUT_S": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)

    assert done.stdout.split() == ["QueryCanceled", "1"], done.stderr
