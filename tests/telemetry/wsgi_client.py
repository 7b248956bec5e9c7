"""A test client that sends requests through ``config.wsgi.application``, as gunicorn does.

Django's test client calls Django's handler directly, so it never passes the
WSGI route that answers valid collector batches (``telemetry.route``). This
client builds a WSGI environ and calls the deployed application, so the same
tests check both ways in.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from django.core import signals
from django.db import close_old_connections

from config.wsgi import application


@dataclass
class WsgiResponse:
    status_code: int
    headers: dict[str, str]
    content: bytes
    url: str = field(default="")

    def json(self) -> Any:
        return orjson.loads(self.content)

    def __getitem__(self, name: str) -> str:
        return self.headers[name.lower()]


class WsgiClient:
    """``get`` and ``post`` with the signatures the tests use from Django's test client."""

    def __init__(self, app: Any = application, *, host: str = "testserver", scheme: str = "http") -> None:
        self.app, self.host, self.scheme = app, host, scheme

    def get(self, path: str, *, headers: dict[str, str] | None = None) -> WsgiResponse:
        return self.request("GET", path, b"", headers=headers)

    def post(
        self,
        path: str,
        data: bytes = b"",
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> WsgiResponse:
        return self.request("POST", path, data, content_type=content_type, headers=headers)

    def request(
        self,
        method: str,
        path: str,
        body: bytes,
        *,
        content_type: str | None = None,
        headers: dict[str, str] | None = None,
        script_name: str = "",
    ) -> WsgiResponse:
        parts = urlsplit(path)
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": script_name,
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "443" if self.scheme == "https" else "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": self.host,
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": self.scheme,
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
        }
        if content_type is not None:
            environ["CONTENT_TYPE"] = content_type
        for name, value in (headers or {}).items():
            environ["HTTP_" + name.upper().replace("-", "_")] = value
        answer: dict[str, Any] = {}

        def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            answer["status"] = int(status.split(" ", 1)[0])
            answer["headers"] = {name.lower(): value for name, value in response_headers}

        # As Django's test client does: the test's transaction is not to be closed by the request signals.
        signals.request_started.disconnect(close_old_connections)
        signals.request_finished.disconnect(close_old_connections)
        try:
            chunks = self.app(environ, start_response)
            try:
                content = b"".join(chunks)
            finally:
                if hasattr(chunks, "close"):
                    chunks.close()
        finally:
            signals.request_started.connect(close_old_connections)
            signals.request_finished.connect(close_old_connections)
        return WsgiResponse(answer["status"], answer["headers"], content, answer["headers"].get("location", ""))


@pytest.fixture(params=["django", "wsgi"], name="client")
def both_ways_in(request: pytest.FixtureRequest, client: Any) -> Any:
    """``client`` for a module that imports this: each test runs through Django's test client, then
    through the deployed WSGI application (where valid batches take the ingest route)."""
    return client if request.param == "django" else WsgiClient()
