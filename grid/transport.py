"""GET-and-parse-JSON over urllib, mapping every failure to a typed ProviderError.

Stdlib only (no requests dependency); the base URL is configurable so tests point
providers at a local server. JSON numbers are parsed as Decimal, never float.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import Any

from grid import errors

DEFAULT_TIMEOUT_S = 10.0
USER_AGENT = "wattledger-grid/0.1 (+urllib)"
_MAX_ERROR_TEXT = 300


def validate_base_url(base_url: str) -> str:
    """Only http(s) URLs, so a misconfigured ``file:`` or ``ftp:`` URL fails loudly."""
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"base URL must be http(s)://host[:port][/path], got {base_url!r}")
    return base_url.rstrip("/")


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date; None if absent or unparseable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def error_text(body: bytes) -> str:
    """The human message of an error body: EM {"message"}, UK {"error": {"message"}}, WattTime {"error"}."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return text[:_MAX_ERROR_TEXT] or "(empty body)"
    message = _message_of(parsed)
    return (message or text)[:_MAX_ERROR_TEXT]


def _message_of(parsed: Any) -> str | None:
    if not isinstance(parsed, dict):
        return None
    for key in ("message", "error", "detail"):
        value = parsed.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, dict):
            return _message_of(value)
    return None


def status_error(provider: str, status: int, body: bytes, retry_after: str | None) -> errors.ProviderError:
    message = error_text(body)
    if status in (401, 403):
        return errors.AuthError(provider, message, status=status)
    if status == 429:
        return errors.RateLimited(provider, message, status=status, retry_after_s=retry_after_seconds(retry_after))
    if 400 <= status < 500:
        return errors.RequestRejected(provider, message, status=status)
    return errors.ProviderUnavailable(provider, message, status=status)


def parse_json(provider: str, body: bytes) -> Any:
    try:
        return json.loads(body, parse_float=Decimal)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise errors.BadResponse(provider, f"unparseable JSON: {exc}") from exc


@dataclass(frozen=True)
class JsonClient:
    provider: str
    base_url: str
    timeout_s: float = DEFAULT_TIMEOUT_S

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
        request = urllib.request.Request(  # noqa: S310 - scheme checked in validate_base_url
            self.url(path, params), headers={"Accept": "application/json", "User-Agent": USER_AGENT, **(headers or {})}
        )
        return parse_json(self.provider, self._read(request))

    def _read(self, request: urllib.request.Request) -> bytes:
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 - http(s) only
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            body = exc.read() if exc.fp is not None else b""
            raise status_error(self.provider, exc.code, body, exc.headers.get("Retry-After")) from exc
        except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets, truncated bodies
            raise errors.ProviderUnavailable(self.provider, f"{type(exc).__name__}: {exc}") from exc
