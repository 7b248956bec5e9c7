"""A real HTTP server on 127.0.0.1 standing in for a grid provider.

Each test declares what the provider answers on each path (in order, the last
answer repeating) and reads back the requests it received.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # dict/list → JSON; str/bytes → sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


@dataclass(frozen=True)
class Seen:
    path: str
    query: dict[str, str]
    headers: dict[str, str]


Route = list[Reply] | Callable[[Seen], Reply]


class FakeProvider:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def reset(self) -> None:
        with self._lock:
            self.routes, self.requests = {}, []

    def on(self, path: str, *replies: Reply) -> None:
        self.routes[path] = list(replies)

    def on_call(self, path: str, respond: Callable[[Seen], Reply]) -> None:
        self.routes[path] = respond

    def seen(self, path: str) -> list[Seen]:
        return [request for request in self.requests if request.path == path]

    def reply_to(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            route = self.routes.get(seen.path)
            if route is None:
                return Reply(404, {"status": "error", "message": f"no route {seen.path}"})
            if callable(route):
                return route(seen)
            return route.pop(0) if len(route) > 1 else route[0]


def _handler(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            headers = {key.lower(): value for key, value in self.headers.items()}
            reply = fake.reply_to(Seen(parts.path, dict(parse_qsl(parts.query)), headers))
            time.sleep(reply.delay_s)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client gave up (timeout tests)
                self._send(reply)

        def _send(self, reply: Reply) -> None:
            payload = reply.payload()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture(scope="session")
def _fake_server() -> Iterator[FakeProvider]:
    # One server for the session: shutting one down per test costs a poll interval.
    provider = FakeProvider()
    thread = threading.Thread(target=provider.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield provider
    provider.server.shutdown()
    provider.server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def fake(_fake_server: FakeProvider) -> FakeProvider:
    _fake_server.reset()
    return _fake_server
