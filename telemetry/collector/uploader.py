"""Sends spooled batches to the server, oldest first, and removes them once acknowledged.

``POST {server}/api/v1/ingest/`` with the node's bearer token and the gzipped
batch. The answers:

* ``200``: acknowledged (whatever the JSON says; rows it refused are logged):
  the batch leaves the spool.
* ``400 401 403 404 413 415 422`` and every other 4xx but 408 and 429: refused
  for good; resending cannot help, so the batch moves to ``rejected/`` with a
  ``.reason`` file and the next one is sent.
* ``429`` or ``503`` with a ``Retry-After`` (seconds or HTTP-date): back-pressure,
  the server is busy and says when to come back (a database busy with other
  writes, every request thread taken). The uploader waits that long and sends
  the same batch again: not a failure (it is never parked, the backoff does not
  grow), logged at INFO, with one warning once it has lasted
  ``BACKPRESSURE_WARN_S`` (and every ``BACKPRESSURE_WARN_S`` x 10 after).
* ``408``, ``429``, ``5xx``, connection errors, timeouts, and anything
  unexpected (a redirect, another 2xx): retried, forever, after an exponential
  backoff with full jitter capped at ``max_backoff_s``; a ``Retry-After``
  (seconds or HTTP-date) is honoured instead.

One bad batch never blocks the newer ones: a batch that failed
``PARK_AFTER_FAILURES`` times in a row is *parked*: it stays in the spool (nothing
is lost) but newer batches go first, and it is tried once more when its own
delay has passed (``max_backoff_s``, doubling at each failure, at most
``PARK_MAX_S``; at most ``max_backoff_s`` once another batch was acknowledged),
before newer batches. When the server fails every batch, each is parked in
turn and the uploader waits for the first one due: an outage costs fewer
requests, not more. Parking is kept in memory: after a restart, the oldest
batch is tried first again.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import math
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from . import wire
from .spool import Spool, SpooledBatch

log = logging.getLogger(__name__)

INGEST_PATH = "/api/v1/ingest/"
RETRIED_4XX = frozenset({408, 429})
BACKPRESSURE_STATUSES = frozenset({429, 503})  # with a Retry-After: "busy, come back then"
BACKPRESSURE_WARN_S = 60.0  # back-pressure this long without an acknowledgement is worth a warning
MAX_RETRY_AFTER_S = 3600.0
PARK_AFTER_FAILURES = 5  # consecutive failures of one batch before newer batches go first
PARK_MAX_S = 3600.0  # the longest a parked batch waits for its next try


class Headers(Protocol):
    def get(self, name: str, /) -> Any: ...


@dataclass(frozen=True)
class Outcome:
    kind: str  # "ack" | "reject" | "retry" | "wait" (back-pressure) | "gone"
    status: int | None
    detail: str
    retry_after_s: float | None = None
    answer: Any = None


def ingest_url(server: str) -> str:
    return server.rstrip("/") + INGEST_PATH


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """``Retry-After`` in seconds from ``now``: delta-seconds or an HTTP-date; ``None`` if absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER_S)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max(0.0, moment.timestamp() - now), MAX_RETRY_AFTER_S)


def classify(status: int, headers: Headers | Mapping[str, str], body: bytes, *, now: float) -> Outcome:
    text = body[:2000].decode("utf-8", errors="replace")
    if status == 200:
        return Outcome("ack", status, text, answer=_json_or_none(body))
    if 400 <= status < 500 and status not in RETRIED_4XX:
        return Outcome("reject", status, text)
    retry_after_s = parse_retry_after(headers.get("Retry-After"), now=now)
    if status in BACKPRESSURE_STATUSES and retry_after_s is not None:
        return Outcome("wait", status, text, retry_after_s)
    return Outcome("retry", status, text, retry_after_s)


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirected POST would lose its body (urllib turns it into a GET): treat 3xx as a failure."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect())


def post_batch(url: str, token: str, body: bytes, *, timeout_s: float, now: Callable[[], float] = time.time) -> Outcome:
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": wire.CONTENT_TYPE,
        "Content-Encoding": "gzip",
    }
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310 - http(s) only, checked in config
    try:
        with _OPENER.open(request, timeout=timeout_s) as response:
            return classify(response.status, response.headers, response.read(1 << 20), now=now())
    except urllib.error.HTTPError as exc:
        return classify(exc.code, exc.headers, exc.read(1 << 16), now=now())
    except (OSError, http.client.HTTPException) as exc:  # refused, reset, DNS, timeout (URLError is an OSError)
        return Outcome("retry", None, f"{type(exc).__name__}: {exc}")


class Backoff:
    """Exponential backoff with full jitter: a delay drawn from [0, min(cap, base x 2^failures)]."""

    def __init__(self, *, base_s: float = 0.5, cap_s: float = 60.0, rand: Callable[[], float] | None = None):
        self.base_s = base_s
        self.cap_s = cap_s
        self._rand = rand or random.SystemRandom().random
        self.failures = 0

    def next_delay(self, retry_after_s: float | None = None) -> float:
        self.failures += 1
        if retry_after_s is not None:
            return retry_after_s * (1 + 0.1 * self._rand())  # honoured, spread a little
        return self._rand() * min(self.cap_s, self.base_s * 2 ** min(self.failures - 1, 30))

    def reset(self) -> None:
        self.failures = 0


@dataclass
class UploadStats:
    acknowledged: int = 0
    rejected: int = 0
    retries: int = 0
    parked: int = 0  # times a batch was set behind newer ones
    waits: int = 0  # back-pressure answers waited out (not failures)


@dataclass
class _Trouble:
    """One batch's failures: how many in a row, how often parked, and until when (monotonic)."""

    failures: int = 0
    tries: int = 0
    parks: int = 0
    due: float = 0.0


Post = Callable[[bytes, float], Outcome]


class Uploader:
    """Drains the spool; :meth:`run` is a thread's body, :meth:`drain` the bounded final try."""

    def __init__(
        self,
        spool: Spool,
        *,
        post: Post,
        timeout_s: float = 10.0,
        backoff: Backoff | None = None,
        park_after_failures: int = PARK_AFTER_FAILURES,
        sleep: Callable[[float], Any] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        on_ack: Callable[[SpooledBatch], None] | None = None,
    ) -> None:
        self.spool = spool
        self._post = post
        self._timeout_s = timeout_s
        self.backoff = backoff or Backoff()
        self._sleep = sleep
        self._monotonic = monotonic
        self.on_ack = on_ack
        self.stats = UploadStats()
        self._park_after = park_after_failures
        self._trouble: dict[int, _Trouble] = {}  # spool seq -> its failures
        self._pressed_since: float | None = None  # monotonic start of the back-pressure now waited out
        self._pressure_warned_s = 0.0  # how long it had lasted at its last warning

    def run(self, stop: threading.Event) -> None:
        sleep = self._sleep or stop.wait  # stop interrupts a backoff at once
        while not stop.is_set():
            self.spool.changed.clear()
            item = self.next_batch()
            if item is None:
                self.spool.changed.wait(self._idle_wait_s())
                continue
            outcome = self.attempt(item, timeout_s=self._timeout_s)
            if outcome.kind == "retry":
                sleep(self._delay(item, outcome))
            elif outcome.kind == "wait":
                sleep(self._wait(item, outcome))

    def drain(self, *, deadline: float) -> bool:
        """Send what is pending until ``deadline`` (monotonic) or a failure; True if the spool emptied."""
        while (item := self.next_batch()) is not None:
            remaining = deadline - self._monotonic()
            if remaining <= 0.05:
                return False
            if self.attempt(item, timeout_s=min(self._timeout_s, remaining)).kind in ("retry", "wait"):
                return False
        return not len(self.spool)

    def next_batch(self) -> SpooledBatch | None:
        """The oldest batch not parked, or parked with its delay passed; ``None`` when there is none now."""
        if not self._trouble:
            return self.spool.oldest()
        pending = self.spool.pending()
        seqs = {item.seq for item in pending}
        self._trouble = {seq: t for seq, t in self._trouble.items() if seq in seqs}  # gone meanwhile
        now = self._monotonic()
        return next((item for item in pending if self._due(item.seq, now)), None)

    def _due(self, seq: int, now: float) -> bool:
        trouble = self._trouble.get(seq)
        return trouble is None or trouble.due <= now

    def _idle_wait_s(self) -> float:
        """Until the first parked batch is due, at most 1 s (a new batch wakes the uploader sooner)."""
        due = min((t.due for t in self._trouble.values()), default=math.inf)
        return min(1.0, max(0.01, due - self._monotonic()))

    def attempt(self, item: SpooledBatch, *, timeout_s: float) -> Outcome:
        """One try at sending ``item``; the spool is updated by what the server answered."""
        body = item.read()
        if body is None:  # dropped meanwhile (the spool overflowed), or deleted by hand
            self.spool.acknowledge(item)
            log.warning("batch %s left the spool before it was sent", item.batch_id)
            return Outcome("gone", None, "not in the spool any more")
        outcome = self._post(body, timeout_s)
        if outcome.kind == "ack":
            self._acknowledged(item, outcome)
        elif outcome.kind == "reject":
            self._rejected(item, outcome)
        elif outcome.kind == "retry":
            self._failed(item, outcome)
        elif outcome.kind == "wait" and self._pressed_since is None:
            self._pressed_since = self._monotonic()
        return outcome

    def _failed(self, item: SpooledBatch, outcome: Outcome) -> None:
        """Count a failure of ``item``; park it after ``park_after_failures`` in a row."""
        trouble = self._trouble.setdefault(item.seq, _Trouble())
        trouble.failures += 1
        trouble.tries += 1
        if trouble.failures < (self._park_after if not trouble.parks else 1):  # once parked, one try per delay
            return
        trouble.parks += 1
        trouble.failures = 0
        delay_s = min(PARK_MAX_S, self.backoff.cap_s * 2 ** min(trouble.parks - 1, 20))
        trouble.due = self._monotonic() + delay_s
        self.stats.parked += 1
        what = f"HTTP {outcome.status}" if outcome.status is not None else outcome.detail
        log.warning(
            "batch %s failed %d times (%s): newer batches go first; it is tried again in %.0f s",
            item.batch_id, trouble.tries, what[:300], delay_s,
        )  # fmt: skip

    def _acknowledged(self, item: SpooledBatch, outcome: Outcome) -> None:
        self.spool.acknowledge(item)
        self._trouble.pop(item.seq, None)
        # The server answers again: no parked batch waits longer than the backoff's cap (after an
        # outage, every batch parked during it is tried again within that time).
        soon = self._monotonic() + self.backoff.cap_s
        for trouble in self._trouble.values():
            trouble.due = min(trouble.due, soon)
        self.backoff.reset()
        self._pressure_ended()
        self.stats.acknowledged += 1
        answer = outcome.answer if isinstance(outcome.answer, dict) else {}
        log.debug(
            "batch %s acknowledged: stored %s, duplicates %s",
            item.batch_id,
            answer.get("stored"),
            answer.get("duplicates"),
        )
        if answer.get("rejected"):
            log.warning("batch %s: the server refused some rows: %s", item.batch_id, str(answer["rejected"])[:500])
        if self.on_ack is not None:
            self.on_ack(item)

    def _rejected(self, item: SpooledBatch, outcome: Outcome) -> None:
        reason = f"HTTP {outcome.status}: {outcome.detail}"
        self.spool.reject(item, reason)
        self._trouble.pop(item.seq, None)
        self.backoff.reset()
        self.stats.rejected += 1
        log.error("batch %s refused, not retried, kept in %s: %s", item.batch_id, self.spool.rejected_dir, reason[:500])

    def _delay(self, item: SpooledBatch, outcome: Outcome) -> float:
        delay = self.backoff.next_delay(outcome.retry_after_s)
        self.stats.retries += 1
        what = f"HTTP {outcome.status}" if outcome.status is not None else outcome.detail
        level = (
            logging.WARNING if self.backoff.failures in (1, 10) or self.backoff.failures % 100 == 0 else logging.INFO
        )
        log.log(
            level, "batch %s not sent (%s); retry %d in %.1f s", item.batch_id, what[:300], self.backoff.failures, delay
        )
        return delay

    def _wait(self, item: SpooledBatch, outcome: Outcome) -> float:
        """Back-pressure: the server's ``Retry-After``, spread a little; the batch stays first in line."""
        assert outcome.retry_after_s is not None  # noqa: S101 - a "wait" outcome always carries it
        delay = outcome.retry_after_s * (1 + 0.1 * random.random())  # noqa: S311 - jitter, not a secret
        self.stats.waits += 1
        lasted_s = self._monotonic() - (self._pressed_since or self._monotonic())
        warn = lasted_s >= BACKPRESSURE_WARN_S and lasted_s - self._pressure_warned_s >= (
            BACKPRESSURE_WARN_S * 10 if self._pressure_warned_s else 0
        )
        if warn:
            self._pressure_warned_s = lasted_s
        log.log(
            logging.WARNING if warn else logging.INFO,
            "batch %s waits: the server is busy (HTTP %s) for %.0f s now; sent again in %.1f s, nothing is lost",
            item.batch_id, outcome.status, lasted_s, delay,
        )  # fmt: skip
        return delay

    def _pressure_ended(self) -> None:
        if self._pressed_since is not None:
            lasted_s = self._monotonic() - self._pressed_since
            level = logging.WARNING if self._pressure_warned_s else logging.INFO
            log.log(level, "the server takes batches again after %.0f s of back-pressure", lasted_s)
        self._pressed_since, self._pressure_warned_s = None, 0.0
