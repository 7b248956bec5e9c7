"""Node-token authentication: a token speaks for exactly one node, and only to the ingest API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from fleets.models import Node, NodeCredential
from fleets.services import credential_authenticate
from fleets.tokens import TOKEN_PREFIX


@dataclass(frozen=True)
class NodePrincipal:
    """``request.user`` for a node: authenticated, but no person and member of no organization."""

    node: Node
    is_authenticated: bool = True
    is_anonymous: bool = False
    is_staff: bool = False
    is_superuser: bool = False


def node_token(header: str | bytes) -> str | None:
    """The node token of an ``Authorization`` header; ``None`` if it offers none (not a bearer token).

    Raises ``AuthenticationFailed`` for a malformed one. (The header is read from
    ``META``, as DRF's ``get_authorization_header`` reads it, without building
    ``request.headers``.)
    """
    parts = (header.encode("iso-8859-1") if isinstance(header, str) else header).split()
    if not parts or parts[0].lower() != b"bearer":
        return None
    if len(parts) != 2:
        raise AuthenticationFailed("Authorization must be 'Bearer <node token>'")
    token = parts[1].decode(errors="replace")
    if not token.startswith(TOKEN_PREFIX):
        raise AuthenticationFailed("not a node token")
    return token


class KnownTokens:
    """Node tokens this process has seen accepted, by digest, with their credential.

    A hint, never proof: a batch sent with a known token has the token checked in
    the batch's own transaction (``batch_ingest(token_digest=...)``) instead of in a
    lookup of its own before it, one round trip fewer. A refused one is forgotten, and
    the request gets Django's 401. (Until its batch reaches that check, a token revoked
    since it was remembered has its body decoded and the day's raw partitions created if
    missing: nothing else.)
    """

    LIMIT = 10_000  # tokens per process; beyond, it starts again (each is looked up once more)

    def __init__(self) -> None:
        self._credentials: dict[str, NodeCredential] = {}

    def get(self, digest: str) -> NodeCredential | None:
        return self._credentials.get(digest)

    def remember(self, digest: str, credential: NodeCredential) -> None:
        if len(self._credentials) >= self.LIMIT:
            self._credentials.clear()
        self._credentials[digest] = credential

    def forget(self, digest: str) -> None:
        self._credentials.pop(digest, None)


class NodeTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[NodePrincipal, NodeCredential] | None:
        token = node_token(request.META.get("HTTP_AUTHORIZATION", b""))
        if token is None:
            return None
        credential = credential_authenticate(token=token)
        if credential is None:
            raise AuthenticationFailed("unknown or revoked node token")
        return NodePrincipal(node=credential.node), credential

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="wattledger-ingest"'


class IsNode(BasePermission):
    message = "a node token is required"

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, NodeCredential)


class NodeTokenScheme(OpenApiAuthenticationExtension):
    target_class = "telemetry.auth.NodeTokenAuthentication"
    name = "nodeToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "a node token from `manage.py enroll_node`"}
