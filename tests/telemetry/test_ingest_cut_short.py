"""A batch whose body ends before its Content-Length (the client half-closed) is refused, not stored."""

from __future__ import annotations

import json
import socket

from telemetry.collector import wire
from telemetry.models import GpuSample
from tests.helpers.batches import make_batch
from tests.helpers.ingest import URL


def test_a_body_cut_short_of_its_content_length_is_a_400_and_nothing_is_stored(
    gunicorn_port, transactional_db, node, token
):
    body = json.dumps(make_batch()).encode()
    cut = body[: len(body) // 2]
    head = (
        f"POST {URL} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {wire.CONTENT_TYPE}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", gunicorn_port), timeout=20) as sock:
        sock.sendall(head + cut)
        sock.shutdown(socket.SHUT_WR)  # half-closed: the rest of the announced body never comes
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk

    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.split()[1] == b"400", answer[:300]
    assert json.loads(rest.split(b"\r\n\r\n", 1)[1]) == {
        "error": f"body ended after {len(cut)} of the {len(body)} bytes its Content-Length announced"
    }
    assert not GpuSample.objects.exists()
