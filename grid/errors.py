"""Typed failures of grid providers, so callers decide retry versus fallback by type.

- ``AuthError``: bad or missing credentials, or no access to the zone (401/403).
  Not retried; needs a person.
- ``RateLimited``: 429; ``retry_after_s`` from the Retry-After header when sent.
- ``ProviderUnavailable``: 5xx, timeouts, refused connections. Retry with backoff.
- ``BadResponse``: a 2xx answer we cannot parse or whose shape changed. Not retried.
- ``RequestRejected``: any other 4xx (unknown zone, range too long, bad parameter).
  Not retried; the caller falls back to the annual average.
"""

from __future__ import annotations


class ProviderError(Exception):
    def __init__(self, provider: str, message: str, *, status: int | None = None) -> None:
        self.provider = provider
        self.status = status
        prefix = f"{provider}: HTTP {status}: " if status is not None else f"{provider}: "
        super().__init__(prefix + message)


class AuthError(ProviderError):
    pass


class RateLimited(ProviderError):
    def __init__(
        self, provider: str, message: str, *, status: int | None = 429, retry_after_s: float | None = None
    ) -> None:
        super().__init__(provider, message, status=status)
        self.retry_after_s = retry_after_s


class ProviderUnavailable(ProviderError):
    pass


class BadResponse(ProviderError):
    pass


class RequestRejected(ProviderError):
    pass


class UnsupportedZone(ValueError):
    """A zone this provider cannot answer for (raised before any request is made)."""
