"""A real HTTP server on 127.0.0.1 standing in for the ingest API, answering as each test scripts it."""

from __future__ import annotations

import contextlib
import gzip
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, dict[str, str], bytes]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        raw = gzip.decompress(self.body) if self.headers.get("Content-Encoding") == "gzip" else self.body
        return json.loads(raw)


def ok_answer(request: Request) -> Answer:
    """What the ingest API answers when it stored a batch."""
    doc = request.json()
    stored = {"gpu_samples": len(doc["gpu_samples"]["ts"]), "serving_samples": len(doc["serving_samples"]["ts"])}
    body = json.dumps({"stored": stored, "duplicates": {}, "rejected": []}).encode()
    return 200, {"Content-Type": "application/json"}, body


@dataclass
class StubServer:
    """Answers from ``script`` (first in, first out), then with ``default``; records every request."""

    default: Callable[[Request], Answer] = ok_answer
    script: deque[Answer | Callable[[Request], Answer]] = field(default_factory=deque)
    requests: list[Request] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def answer(self, request: Request) -> Answer:
        self.requests.append(request)
        scripted = self.script.popleft() if self.script else self.default
        try:
            return scripted(request) if callable(scripted) else scripted
        except Exception as exc:  # noqa: BLE001 - a broken test answer is a 500 the test will see
            return 500, {}, f"stub server error: {exc!r}".encode()

    def start(self, port: int = 0) -> StubServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(self.command, self.path, dict(self.headers.items()), self.rfile.read(length))
                status, headers, body = stub.answer(request)
                self.send_response(status)
                for name, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                # A client that gave up waiting (a timeout under test) has nothing left to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

            do_GET = do_POST = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
