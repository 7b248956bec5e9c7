"""GET-and-parse-JSON (:mod:`common.http`), mapping every failure to a typed ProviderError.

The base URL is configurable so tests point providers at a local server. JSON
numbers are parsed as Decimal, never float.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import Any

from common import http
from common.http import validate_base_url
from grid import errors

__all__ = ["DEFAULT_TIMEOUT_S", "JsonClient", "error_text", "retry_after_seconds", "validate_base_url"]

DEFAULT_TIMEOUT_S = 10.0
USER_AGENT = "wattledger-grid/0.1 (+urllib)"
_MAX_ERROR_TEXT = 300


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


@dataclass(frozen=True)
class JsonClient:
    """:class:`common.http.JsonClient`, every failure as this provider's :class:`~grid.errors.ProviderError`."""

    provider: str
    base_url: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    _http: http.JsonClient = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        client = http.JsonClient(self.base_url, self.timeout_s, user_agent=USER_AGENT, parse_float=Decimal)
        object.__setattr__(self, "base_url", client.base_url)
        object.__setattr__(self, "_http", client)

    def url(self, path: str, params: Mapping[str, str] | None = None) -> str:
        return self._http.url(path, params)

    def get_json(
        self, path: str, *, params: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None
    ) -> Any:
        try:
            return self._http.get_json(path, params=params, headers=headers)
        except http.HttpStatus as exc:
            raise status_error(self.provider, exc.status, exc.body, exc.retry_after) from exc
        except http.Unreachable as exc:
            raise errors.ProviderUnavailable(self.provider, str(exc)) from exc
        except http.BadJson as exc:
            raise errors.BadResponse(self.provider, str(exc)) from exc
