"""Sending batches: the retry matrix against a real HTTP server on 127.0.0.1, with a fast sleep."""

from __future__ import annotations

import logging
import socket
import threading
import time
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

import pytest

from telemetry.collector.spool import Spool
from telemetry.collector.uploader import Backoff, Outcome, Uploader, ingest_url, parse_retry_after, post_batch
from tests.helpers.stub_server import Request, StubServer

TOKEN = "node-token-123"


@pytest.fixture
def stub_server(stub_server: StubServer) -> StubServer:
    """These tests send opaque bodies: the server acknowledges without reading them."""
    stub_server.default = lambda _request: (200, {"Content-Type": "application/json"}, b'{"stored": {}}')
    return stub_server


def uploader_for(spool: Spool, url: str, sleeps: list[float], on_sleep=None) -> Uploader:
    def post(body: bytes, timeout_s: float) -> Outcome:
        return post_batch(ingest_url(url), TOKEN, body, timeout_s=timeout_s)

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if on_sleep is not None:
            on_sleep()

    return Uploader(spool, post=post, timeout_s=2.0, sleep=sleep, backoff=Backoff(rand=lambda: 0.5))


def run_until_empty(uploader: Uploader, timeout_s: float = 10.0) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=uploader.run, args=(stop,), daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while len(uploader.spool) and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    uploader.spool.changed.set()
    thread.join(timeout=5)
    assert not len(uploader.spool), "the spool did not empty"


def test_retries_5xx_and_429_with_retry_after_until_acknowledged(tmp_path: Path, stub_server: StubServer) -> None:
    stub_server.script.extend(
        [(500, {}, b"boom"), (502, {}, b""), (503, {}, b"down"), (429, {"Retry-After": "7"}, b"slow down")]
    )
    spool = Spool(tmp_path)
    spool.put("b1", b"\x1f\x8b first")
    spool.put("b2", b"\x1f\x8b second")
    sleeps: list[float] = []
    uploader = uploader_for(spool, stub_server.url, sleeps)

    run_until_empty(uploader)

    assert len(stub_server.requests) == 6  # 4 failures, then both batches
    assert [r.body for r in stub_server.requests[-2:]] == [b"\x1f\x8b first", b"\x1f\x8b second"]  # oldest first
    assert sleeps[:3] == [0.25, 0.5, 1.0]  # full jitter (rand=0.5) of 0.5, 1, 2 s
    assert 7.0 <= sleeps[3] <= 7.7  # Retry-After honoured: back-pressure, waited out
    assert uploader.stats.acknowledged == 2 and uploader.stats.retries == 3 and uploader.stats.waits == 1


def test_sends_the_ingest_headers(tmp_path: Path, stub_server: StubServer) -> None:
    spool = Spool(tmp_path)
    spool.put("b1", b"body")

    run_until_empty(uploader_for(spool, stub_server.url + "/", []))

    request = stub_server.requests[0]
    assert request.method == "POST" and request.path == "/api/v1/ingest/"
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Content-Encoding"] == "gzip"


def test_connection_refused_is_retried_until_the_server_comes_up(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    late = StubServer(default=lambda _request: (200, {}, b'{"stored": {}}'))
    spool = Spool(tmp_path)
    spool.put("b1", b"body")
    sleeps: list[float] = []

    def server_comes_up() -> None:
        if late.server is None:
            late.start(port)

    try:
        run_until_empty(uploader_for(spool, f"http://127.0.0.1:{port}", sleeps, on_sleep=server_comes_up))
    finally:
        late.stop()

    assert len(sleeps) == 1 and len(late.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 415, 422])
def test_refusals_are_not_retried_and_move_to_rejected(tmp_path: Path, stub_server: StubServer, status: int) -> None:
    stub_server.script.append((status, {"Content-Type": "application/json"}, b'{"detail": "why"}'))
    spool = Spool(tmp_path)
    spool.put("bad", b"refused body")
    spool.put("good", b"fine body")
    sleeps: list[float] = []

    run_until_empty(uploader_for(spool, stub_server.url, sleeps))

    assert sleeps == [] and len(stub_server.requests) == 2  # the refused one once, then the next
    (rejected,) = (tmp_path / "rejected").glob("*-bad.json.gz")
    assert rejected.read_bytes() == b"refused body"
    reason = (tmp_path / "rejected" / (rejected.name + ".reason")).read_text()
    assert f"HTTP {status}" in reason and "why" in reason


def test_retry_after_http_date_is_honoured(tmp_path: Path, stub_server: StubServer) -> None:
    later = datetime.fromtimestamp(time.time() + 30, tz=UTC)
    stub_server.script.append((503, {"Retry-After": format_datetime(later, usegmt=True)}, b""))
    spool = Spool(tmp_path)
    spool.put("b1", b"body")
    sleeps: list[float] = []

    run_until_empty(uploader_for(spool, stub_server.url, sleeps))

    assert 27 <= sleeps[0] <= 34


def test_parse_retry_after() -> None:
    now = 1_764_400_000.0
    date = format_datetime(datetime.fromtimestamp(now + 120, tz=UTC), usegmt=True)

    assert parse_retry_after("15", now=now) == 15
    assert parse_retry_after(date, now=now) == pytest.approx(120)
    assert parse_retry_after(format_datetime(datetime.fromtimestamp(now - 5, tz=UTC), usegmt=True), now=now) == 0
    assert parse_retry_after("soon", now=now) is None and parse_retry_after(None, now=now) is None
    assert parse_retry_after("999999", now=now) == 3600


def test_backoff_is_exponential_with_full_jitter_and_a_cap() -> None:
    highest = Backoff(base_s=0.5, cap_s=60, rand=lambda: 1.0)
    lowest = Backoff(base_s=0.5, cap_s=60, rand=lambda: 0.0)

    assert [highest.next_delay() for _ in range(10)] == [0.5, 1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert lowest.next_delay() == 0
    highest.reset()
    assert highest.next_delay() == 0.5


def test_drain_stops_at_the_first_failure_and_keeps_the_batch(tmp_path: Path, stub_server: StubServer) -> None:
    stub_server.default = lambda _request: (503, {}, b"")
    spool = Spool(tmp_path)
    spool.put("b1", b"body")
    uploader = uploader_for(spool, stub_server.url, [])

    assert uploader.drain(deadline=time.monotonic() + 5) is False
    assert len(spool) == 1 and len(stub_server.requests) == 1


def test_a_batch_deleted_by_hand_is_skipped_not_retried_forever(tmp_path: Path, stub_server: StubServer) -> None:
    spool = Spool(tmp_path)
    spool.put("gone", b"x")
    spool.put("kept", b"y")
    (spool.oldest() or pytest.fail("empty")).path.unlink()

    run_until_empty(uploader_for(spool, stub_server.url, []))

    assert [r.body for r in stub_server.requests] == [b"y"]


class FastClock:
    """A monotonic clock that runs 1000 times faster than real time, plus every backoff slept."""

    def __init__(self) -> None:
        self.slept_s = 0.0
        self._start = time.monotonic()

    def __call__(self) -> float:
        return 1000.0 + self.slept_s + (time.monotonic() - self._start) * 1000

    def sleep(self, seconds: float) -> None:
        self.slept_s += seconds


def parking_uploader(spool: Spool, url: str, clock: FastClock) -> Uploader:
    def post(body: bytes, timeout_s: float) -> Outcome:
        return post_batch(ingest_url(url), TOKEN, body, timeout_s=timeout_s)

    return Uploader(spool, post=post, backoff=Backoff(cap_s=60, rand=lambda: 1.0), sleep=clock.sleep, monotonic=clock)


def test_a_batch_that_keeps_failing_is_parked_behind_newer_ones_and_sent_once_the_server_takes_it(
    tmp_path: Path, stub_server: StubServer
) -> None:
    # given: a real server that answers 500 to one batch for its first 8 tries, 200 to the others
    def answer(request: Request) -> tuple[int, dict[str, str], bytes]:
        tries = sum(r.body == b"poison" for r in stub_server.requests)
        if request.body == b"poison" and tries <= 8:
            return 500, {}, b"server error on this batch"
        return 200, {"Content-Type": "application/json"}, b'{"stored": {}}'

    stub_server.default = answer
    spool = Spool(tmp_path)
    for name in ("poison", "b2", "b3"):
        spool.put(name, name.encode())
    clock = FastClock()
    uploader = parking_uploader(spool, stub_server.url, clock)

    # when
    run_until_empty(uploader)

    # then: five tries, the newer batches, then one try per (doubling) delay: three more failures, the ninth taken
    bodies = [r.body for r in stub_server.requests]
    assert bodies == [b"poison"] * 5 + [b"b2", b"b3"] + [b"poison"] * 4
    assert uploader.stats.acknowledged == 3 and uploader.stats.parked == 4 and uploader.stats.rejected == 0
    assert not list((tmp_path / "rejected").iterdir())  # nothing set aside, nothing lost


def test_when_every_batch_fails_each_is_parked_in_turn_and_none_is_lost(
    tmp_path: Path, stub_server: StubServer
) -> None:
    stub_server.default = lambda _request: (503, {}, b"down")
    spool = Spool(tmp_path)
    spool.put("b1", b"one")
    spool.put("b2", b"two")
    clock = FastClock()
    uploader = parking_uploader(spool, stub_server.url, clock)
    stop = threading.Event()
    thread = threading.Thread(target=uploader.run, args=(stop,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while len(stub_server.requests) < 11 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(timeout=5)

    bodies = [r.body for r in stub_server.requests[:11]]
    assert bodies[:6] == [b"one"] * 5 + [b"two"]  # the second goes first once the first is parked
    assert uploader.stats.parked >= 1 and len(spool) == 2 and uploader.stats.rejected == 0


class SleptClock(FastClock):
    """A monotonic clock that runs at real time plus every backoff slept (the logs' durations are the sleeps')."""

    def __call__(self) -> float:
        return 1000.0 + self.slept_s + (time.monotonic() - self._start)


def test_503_with_retry_after_is_back_pressure_the_batch_waits_first_in_line_and_no_warning_is_logged(
    tmp_path: Path, stub_server: StubServer, caplog: pytest.LogCaptureFixture
) -> None:
    # given: a server busy (SQLite locked by other writes) for eight answers, each saying when to come back
    stub_server.script.extend([(503, {"Retry-After": "5"}, b'{"detail": "the database (busy) ..."}')] * 8)
    spool = Spool(tmp_path)
    spool.put("b1", b"first")
    spool.put("b2", b"second")
    clock = SleptClock()
    uploader = parking_uploader(spool, stub_server.url, clock)

    # when
    with caplog.at_level("INFO", logger="telemetry.collector.uploader"):
        run_until_empty(uploader)

    # then: the same batch each time (never parked behind the newer one), Retry-After waited, nothing lost
    assert [r.body for r in stub_server.requests] == [b"first"] * 9 + [b"second"]
    assert uploader.stats.waits == 8 and uploader.stats.parked == 0 and uploader.stats.retries == 0
    assert uploader.backoff.failures == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # 40 s of it: INFO lines only
    assert "the server takes batches again after" in caplog.records[-1].getMessage()


def test_back_pressure_that_lasts_a_minute_is_warned_once(
    tmp_path: Path, stub_server: StubServer, caplog: pytest.LogCaptureFixture
) -> None:
    stub_server.script.extend([(429, {"Retry-After": "10"}, b"")] * 12)  # two minutes of it
    spool = Spool(tmp_path)
    spool.put("b1", b"first")
    clock = SleptClock()
    uploader = parking_uploader(spool, stub_server.url, clock)

    with caplog.at_level("INFO", logger="telemetry.collector.uploader"):
        run_until_empty(uploader)

    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2, warnings  # once it has lasted a minute, and when it ends
    assert "the server is busy (HTTP 429)" in warnings[0]
    assert warnings[1].startswith("the server takes batches again after")
