"""Node-token authentication: a token speaks for exactly one node, and only to the ingest API.

Every request looks its token up (one indexed read): a revoked token is refused
from the next request on, on every worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
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


class NodeTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer wln_...``: the node of an active token; no bearer token: not this scheme."""

    def authenticate(self, request: Request) -> tuple[NodePrincipal, NodeCredential] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != b"bearer":
            return None
        if len(parts) != 2:
            raise AuthenticationFailed("Authorization must be 'Bearer <node token>'")
        token = parts[1].decode(errors="replace")
        if not token.startswith(TOKEN_PREFIX):
            raise AuthenticationFailed("not a node token")
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
