"""GET and parse JSON over urllib: the one client of the services Wattledger reads over HTTP.

Stdlib only (no requests dependency). A failure is one of two typed errors, which
each caller maps to its own: :class:`HttpStatus` (the server answered with a
status other than 2xx: its code, body and ``Retry-After``) and :class:`Unreachable`
(no answer: refused, reset, cut short, or none within the timeout). A body that
is not JSON is :class:`BadJson`. Used by the grid providers (``grid.transport``)
and the Prometheus import (``telemetry.prometheus_import``).
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

USER_AGENT = "wattledger/0.1 (+urllib)"
_CHUNK_BYTES = 1 << 16


class HttpStatus(Exception):
    """The server answered ``status`` (not 2xx); ``body`` as sent, ``retry_after`` its header if any."""

    def __init__(self, status: int, body: bytes, retry_after: str | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status, self.body, self.retry_after = status, body, retry_after


class Unreachable(Exception):
    """No answer: ``str()`` says why (the exception's type and text), ``reason`` the text alone;
    ``timed_out`` when none came within the timeout."""

    def __init__(self, text: str, *, reason: str, timed_out: bool) -> None:
        super().__init__(text)
        self.reason, self.timed_out = reason, timed_out


class BadJson(ValueError):
    """The answer is not JSON."""


def validate_base_url(base_url: str) -> str:
    """Only http(s) URLs, so a misconfigured ``file:`` or ``ftp:`` URL fails loudly; and no query string or
    fragment, even an empty one: paths are appended to the base, so ``http://host/x#`` or ``...?`` would make
    every request go to a URL of the base's choosing whatever the path."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc or "?" in base_url or "#" in base_url:
        raise ValueError(
            f"base URL must be http(s)://host[:port][/path], without a query string or fragment, got {base_url!r}"
        )
    return base_url.rstrip("/")


@dataclass(frozen=True)
class JsonClient:
    """GETs under ``base_url``. ``timeout_s`` bounds each socket wait; with ``whole_answer_timeout``, it also
    bounds the whole answer (a server trickling its body is cut off). ``parse_float``: how JSON numbers with
    a fraction are read (``Decimal`` where money or rates must stay exact). ``opener``: how requests are sent
    (``common.outbound.pinned_opener`` for an address a user named); urllib's default one without it."""

    base_url: str
    timeout_s: float = 10.0
    user_agent: str = USER_AGENT
    parse_float: Callable[[str], Any] = float
    whole_answer_timeout: bool = False
    opener: urllib.request.OpenerDirector | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", validate_base_url(self.base_url))
        if not 0 < self.timeout_s <= 300:  # also refuses NaN
            raise ValueError(f"timeout_s must be in (0, 300] seconds, got {self.timeout_s}")

    def url(self, path: str, params: Mapping[str, str] | None = None) -> str:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return f"{self.base_url}{path}{query}"

    def get_json(
        self, path: str, *, params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None
    ) -> Any:
        """The parsed answer; raise :class:`HttpStatus`, :class:`Unreachable` or :class:`BadJson`."""
        request = urllib.request.Request(  # noqa: S310 - scheme checked in validate_base_url
            self.url(path, params),
            headers={"Accept": "application/json", "User-Agent": self.user_agent, **(headers or {})},
        )
        body = self._read(request)
        try:
            return json.loads(body, parse_float=self.parse_float)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
            raise BadJson(f"unparseable JSON: {exc}") from exc

    def _read(self, request: urllib.request.Request) -> bytes:
        deadline = time.monotonic() + self.timeout_s
        try:
            open_ = self.opener.open if self.opener is not None else urllib.request.urlopen
            with open_(request, timeout=self.timeout_s) as response:  # http(s) only: validate_base_url
                if not self.whole_answer_timeout:
                    return bytes(response.read())
                chunks = []
                while chunk := response.read(_CHUNK_BYTES):
                    chunks.append(chunk)
                    if time.monotonic() > deadline:
                        raise TimeoutError
                return b"".join(chunks)
        except urllib.error.HTTPError as exc:
            body = exc.read() if exc.fp is not None else b""
            raise HttpStatus(exc.code, body, exc.headers.get("Retry-After")) from exc
        except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets, truncated bodies
            reason = getattr(exc, "reason", exc)
            timed_out = isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError)
            raise Unreachable(f"{type(exc).__name__}: {exc}", reason=str(reason), timed_out=timed_out) from exc
