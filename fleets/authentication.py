"""``Authorization: Bearer wlp_...``: a person's token, for report clients (or, of scope metrics, for ``/metrics``).

A node token (``wln_...``) is refused with 403, not 401: it is a valid kind of
credential that is simply not allowed here, and a 401 would invite the client
to retry with the same token forever. So is a personal token of another scope
(``TokenScope``): a metrics token on the reports API, a reports token on ``/metrics``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.request import Request

from fleets.models import PersonalToken, TokenScope
from fleets.personal_tokens import personal_token_authenticate
from fleets.tokens import PERSONAL_TOKEN_PREFIX, TOKEN_PREFIX


class PersonalTokenAuthentication(BaseAuthentication):
    # The token scope this authenticator accepts; a valid token of another scope is refused with 403.
    scope = TokenScope.REPORTS

    def authenticate(self, request: Request) -> tuple[Any, PersonalToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != b"bearer":
            return None
        if len(parts) != 2:
            raise AuthenticationFailed("Authorization must be 'Bearer <personal token>'")
        token = parts[1].decode(errors="replace")
        if token.startswith(TOKEN_PREFIX):
            raise PermissionDenied("node tokens are for the ingest API only; use a personal token (wlp_...)")
        if not token.startswith(PERSONAL_TOKEN_PREFIX):
            raise AuthenticationFailed("not a personal token (wlp_...)")
        row = personal_token_authenticate(token=token)
        if row is None:
            raise AuthenticationFailed("unknown, expired or revoked token")
        if row.scope != self.scope:
            raise PermissionDenied(f"a token of scope {row.scope!r} is not for this API; use a {self.scope} token")
        return row.user, row

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="wattledger"'


class MetricsTokenAuthentication(PersonalTokenAuthentication):
    """A personal token of scope metrics, the only credential ``/metrics`` takes (read-only, one URL)."""

    scope = TokenScope.METRICS


class PersonalTokenScheme(OpenApiAuthenticationExtension):
    target_class = "fleets.authentication.PersonalTokenAuthentication"
    name = "personalToken"
    description = "a personal token (wlp_...) from POST /api/v1/tokens/, shown once"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": self.description}


class MetricsTokenScheme(PersonalTokenScheme):
    target_class = "fleets.authentication.MetricsTokenAuthentication"
    name = "metricsToken"
    description = "a personal token of scope metrics (wlp_...), from POST /api/v1/tokens/ with scope=metrics"
