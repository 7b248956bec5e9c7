"""A small fault-injecting TCP proxy (asyncio) between the collectors and the web server.

Each connection carries one HTTP request (the collector closes after each), so
faults are injected per connection: :meth:`FaultProxy.inject` makes the next
``count`` connections fail one way:

* ``drop``: the request is read, then the connection closed without an answer
  and without reaching the server.
* ``reset``: the connection is reset (RST) before anything reaches the server.
* ``delay``: the request reaches the server ``delay_s`` late (past the
  collector's timeout: the batch arrives after the collector gave up on it).
* ``lose_response``: the request reaches the server, whose whole answer is read,
  then the connection to the collector is reset: the collector never learns and
  sends the batch again. The batch ids of those the server had answered 200
  (committed) are kept, so the oracle can check each was re-sent and dropped as
  a duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import struct
import threading
from collections import Counter, deque
from dataclasses import dataclass, field

MODES = ("drop", "reset", "delay", "lose_response")
HEADER_LIMIT = 64 * 1024


@dataclass
class ProxyTally:
    connections: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    lost_batch_ids: list[str] = field(default_factory=list)


def _batch_id(head: bytes, body: bytes) -> str | None:
    try:
        raw = gzip.decompress(body) if b"content-encoding: gzip" in head.lower() else body
        return str(json.loads(raw)["batch_id"])
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None


async def _read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """The request's head (through the blank line) and its Content-Length body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    return head, await reader.readexactly(length)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST instead of a FIN (SO_LINGER 0)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()


class FaultProxy:
    """Listens on 127.0.0.1 (a free port) and forwards to ``upstream_port``, injecting faults on demand."""

    def __init__(self, upstream_port: int, *, delay_s: float = 3.0) -> None:
        self.upstream_port = upstream_port
        self.delay_s = delay_s
        self.port = 0
        self.tally = ProxyTally()
        self._planned: deque[str] = deque()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fault-proxy", daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def inject(self, mode: str, count: int = 1) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown fault {mode!r}; known: {', '.join(MODES)}")
        with self._lock:
            self._planned.extend([mode] * count)

    def planned(self) -> int:
        with self._lock:
            return len(self._planned)

    def _next_mode(self) -> str | None:
        with self._lock:
            self.tally.connections += 1
            return self._planned.popleft() if self._planned else None

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        mode = self._next_mode()
        try:
            head, body = await _read_request(client_reader)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, ConnectionError):
            client_writer.close()
            return
        if mode is not None:
            self.tally.faults[mode] += 1
        if mode == "drop":
            client_writer.close()
            return
        if mode == "reset":
            _reset(client_writer)
            return
        if mode == "delay":
            await asyncio.sleep(self.delay_s)
        answer = await self._forward(head + body)
        if answer is None:  # the server is down: the collector sees the connection reset
            _reset(client_writer)
            return
        if mode == "lose_response":
            committed = answer.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200"))
            if committed and (batch_id := _batch_id(head, body)) is not None:
                self.tally.lost_batch_ids.append(batch_id)
            _reset(client_writer)
            return
        with contextlib.suppress(ConnectionError):
            client_writer.write(answer)
            await client_writer.drain()
        client_writer.close()

    async def _forward(self, request: bytes) -> bytes | None:
        """Send the request upstream and read the whole answer (the server closes after it)."""
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            return None
        try:
            writer.write(request)
            await writer.drain()
            return await asyncio.wait_for(reader.read(), timeout=120) or None
        except (OSError, TimeoutError):
            return None
        finally:
            writer.close()
