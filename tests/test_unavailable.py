"""A service that is down or stuck gets a 503 with Retry-After, never a 500 or a hang; /healthz still answers.

Against real servers: gunicorn with the product's own config (threaded workers),
a database that is unreachable or frozen by another session's lock, a broker on
a closed port.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection
from django.test import RequestFactory

from config.middleware import ServiceUnavailable
from fleets.personal_tokens import personal_token_create
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory
from tests.helpers.processes import subprocess_env

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str, *, token: str | None = None, timeout: float = 15) -> tuple[int, dict, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"{}")


class Gunicorn:
    """``gunicorn -c config/gunicorn.conf.py config.wsgi`` on a free loopback port."""

    def __init__(self, env: dict[str, str], tmp_path: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full = {**env, "WEB_BIND": f"127.0.0.1:{self.port}", "WATTLEDGER_VAR_DIR": str(tmp_path)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"],
            cwd=ROOT, env=full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError("gunicorn did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[list[Gunicorn]]:
    started: list[Gunicorn] = []

    def start(env: dict[str, str]) -> Gunicorn:
        server = Gunicorn(env, tmp_path)
        started.append(server)
        return server

    yield start  # type: ignore[misc]
    for server in started:
        server.stop()


def test_an_unreachable_database_answers_503_with_retry_after_and_no_traceback(serve):
    closed = _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test",
           "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed}/wattledger", "WEB_WORKERS": "1"}  # fmt: skip
    server = serve(env)

    status, headers, body = _get(f"{server.url}/api/v1/reports/usage/", token="wlp_" + "x" * 40)
    server.stop()
    log = server.process.stderr.read().decode() if server.process.stderr else ""

    assert status == 503
    assert headers["Retry-After"] == "5"
    assert body["detail"].startswith("the database is unavailable for the moment; nothing was changed")
    assert "Traceback" not in log


def test_a_broker_that_cannot_be_reached_answers_503_not_500():
    from kombu import Connection
    from kombu.exceptions import OperationalError

    with pytest.raises(OperationalError) as refused:  # a real refusal: nothing listens on that port
        Connection(f"redis://127.0.0.1:{_free_port()}/0", connect_timeout=1).ensure_connection(max_retries=0)
    answer = ServiceUnavailable(lambda request: None).process_exception(  # type: ignore[arg-type,return-value]
        RequestFactory().post("/api/v1/scenarios/1/run/"), refused.value
    )

    assert answer is not None and (answer.status_code, answer["Retry-After"]) == (503, "5")
    assert json.loads(answer.content)["detail"].startswith("the task broker is unavailable")


@pytest.mark.django_db(transaction=True)
def test_a_frozen_database_holding_every_request_thread_leaves_healthz_a_503_within_2_s(serve):
    if connection.vendor != "postgresql":
        pytest.skip("a lock held by another PostgreSQL session freezes what the requests read")
    import psycopg

    user = UserFactory(username="reader")
    MembershipFactory(user=user, organization=OrganizationFactory(name="Acme", slug="acme"))
    _, token = personal_token_create(user=user, name="probe")
    server = serve({**subprocess_env(), "WEB_WORKERS": "1", "WEB_THREADS": "3"})
    assert _get(f"{server.url}/healthz")[0] == 200

    params = connection.get_connection_params()
    with psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"}, autocommit=False) as holder:
        # Frozen for these requests: every token lookup and the health check's own read wait on the lock.
        holder.execute("LOCK TABLE fleets_personaltoken, django_migrations IN ACCESS EXCLUSIVE MODE")
        answers: list[int] = []
        stuck = [
            threading.Thread(
                target=lambda: answers.append(_get(f"{server.url}/api/v1/reports/usage/", token=token, timeout=40)[0])
            )
            for _ in range(4)
        ]
        for thread in stuck:
            thread.start()
        time.sleep(1.0)  # two hold the process's request threads; the others are turned away at once
        started = time.monotonic()
        status, _, body = _get(f"{server.url}/healthz", timeout=10)
        elapsed_s = time.monotonic() - started
        holder.rollback()
    for thread in stuck:
        thread.join(timeout=40)

    assert (status, elapsed_s < 2.0) == (503, True)
    assert body["database"].startswith("down")
    assert sorted(answers) == [200, 200, 503, 503]  # the held ones finish once the lock goes; none is a 500
