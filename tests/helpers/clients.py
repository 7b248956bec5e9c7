"""The ingest tests' two ways in: Django's test client in process, and a real gunicorn on the test database.

A module that imports ``both_ways_in`` runs each of its tests twice: once with
Django's test client, once over HTTP against ``gunicorn config.wsgi`` serving
the test database (SQLite or PostgreSQL, whichever the suite runs on). The
gunicorn run commits for real (a transactional test), so the server sees the
test's rows and the test sees the server's.
"""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from tests.helpers.processes import ROOT, subprocess_env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class HttpResponse:
    status_code: int
    headers: dict[str, str]  # names in lower case
    content: bytes

    def json(self) -> Any:
        return orjson.loads(self.content)

    @property
    def url(self) -> str:
        return self.headers.get("location", "")

    def __getitem__(self, name: str) -> str:
        return self.headers[name.lower()]


class GunicornClient:
    """``get`` and ``post`` with the signatures the tests use from Django's test client, over HTTP."""

    def __init__(self, port: int) -> None:
        self.port = port

    def get(self, path: str, *, headers: dict[str, str] | None = None) -> HttpResponse:
        return self.request("GET", path, None, headers=headers or {})

    def post(
        self,
        path: str,
        data: bytes = b"",
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> HttpResponse:
        return self.request("POST", path, data, headers={"Content-Type": content_type, **(headers or {})})

    def request(
        self, method: str, path: str, body: bytes | None, *, headers: dict[str, str], chunked: bool = False
    ) -> HttpResponse:
        """``chunked``: the body goes as ``Transfer-Encoding: chunked`` in pieces, with no ``Content-Length``."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            try:
                if chunked and body is not None:
                    pieces = iter([body[i : i + 1000] for i in range(0, len(body), 1000)])
                    connection.request(method, path, body=pieces, headers=headers, encode_chunked=True)
                else:
                    connection.request(method, path, body=body, headers=headers)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered (413) and closed before the whole body was sent: read its answer
            answer = connection.getresponse()
            content = answer.read()
            return HttpResponse(answer.status, {k.lower(): v for k, v in answer.getheaders()}, content)
        finally:
            connection.close()


def gunicorn_started(port: int) -> subprocess.Popen[bytes]:
    """``gunicorn config.wsgi`` on 127.0.0.1:``port``, serving the test database, once it answers."""
    command = [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    server = subprocess.Popen([*command, "--timeout", "120", "--log-level", "warning"], cwd=ROOT, env=subprocess_env())
    deadline = time.monotonic() + 60
    while True:
        try:
            GunicornClient(port).get("/healthz")
            return server
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise AssertionError("gunicorn did not start") from None
            time.sleep(0.2)


@pytest.fixture(
    params=["django", pytest.param("gunicorn", marks=[pytest.mark.django_db(transaction=True), pytest.mark.slow])],
    name="client",
)
def both_ways_in(request: pytest.FixtureRequest, client: Any) -> Any:
    """``client`` for a module that imports this: each test runs through Django's test client, then
    through a real gunicorn (its rows committed, so that the server sees them)."""
    return client if request.param == "django" else GunicornClient(request.getfixturevalue("gunicorn_port"))
