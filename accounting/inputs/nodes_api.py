"""Nodes and their tokens, managed by the ``admin`` and ``engineer`` roles.

- ``POST /api/v1/node-enrollments/``: enroll a node (fleet, site, hostname); the
  answer carries its first token, shown this once (only its SHA-256 is stored).
  (``GET /api/v1/nodes/`` lists nodes with their collectors' health.)
- ``GET /api/v1/node-tokens/``: the tokens of the user's organizations' nodes
  (prefix, created, last used, revoked; never a token itself). Any member.
- ``POST /api/v1/node-tokens/``: issue a node a new token (rotation); its
  active tokens are revoked unless ``revoke_others`` is false (a hand-over).
- ``DELETE /api/v1/node-tokens/<id>/``: revoke one token, from the node's next
  ingest request on.

A token speaks for its node only, on the ingest API. Other roles: 403; a node,
fleet or site of an organization the user does not belong to: 404. Every change
is audited (``subject`` ``node`` or ``node_token``).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.inputs.nodes import node_enroll_audited, node_token_revoke_audited, node_token_rotate_audited
from common.api import InputView, error_responses, owned, validated
from fleets.models import NodeCredential
from fleets.permissions import Capability, change_check
from fleets.selectors import fleets_for_user, nodes_for_user, sites_for_user
from fleets.services import IssuedToken, NodeRefused

ERRORS = error_responses(
    invalid="an invalid field, a hostname already enrolled in the fleet; nothing changed",
    forbidden="a node token, or a role other than admin or engineer",
    not_found="a node, fleet, site or token that is not among yours",
)


class TokenSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    node_id = serializers.IntegerField()
    hostname = serializers.CharField(source="node.hostname")
    prefix = serializers.CharField(help_text="first characters, to tell tokens apart")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class NodeInputSerializer(serializers.Serializer):
    fleet = serializers.IntegerField()
    site = serializers.IntegerField()
    hostname = serializers.CharField(max_length=253)
    tenure = serializers.CharField(required=False, max_length=10, help_text="rented (default) or owned")
    commissioned_at = serializers.DateTimeField(required=False, help_text="default: now")


class EnrolledSerializer(serializers.Serializer):
    node_id = serializers.IntegerField(source="credential.node_id")
    organization_id = serializers.IntegerField(source="credential.node.fleet.organization_id")
    hostname = serializers.CharField(source="credential.node.hostname")
    token = serializers.CharField(help_text="the node's bearer token (wln_...): shown this once, never again")
    token_id = serializers.IntegerField(source="credential.pk")
    prefix = serializers.CharField(source="credential.prefix")
    revoked_count = serializers.IntegerField(help_text="the node's tokens this issue revoked")


class RotateInputSerializer(serializers.Serializer):
    node = serializers.IntegerField()
    revoke_others = serializers.BooleanField(default=True, help_text="false: keep the active tokens (a hand-over)")


def node_tokens_for_user(*, user: Any) -> QuerySet[NodeCredential]:
    nodes = nodes_for_user(user=user)
    return NodeCredential.objects.filter(node__in=nodes).select_related("node__fleet").order_by("-created_at", "-id")


def _once(issued: IssuedToken) -> Response:
    response = Response(EnrolledSerializer(issued).data, status=status.HTTP_201_CREATED)
    response["Cache-Control"] = "no-store"  # the plaintext token must not stay in a cache
    return response


class NodeEnrollmentsView(InputView):
    @extend_schema(
        operation_id="nodes_enroll", summary="Enroll a node and issue its first token (shown once); admin or engineer",
        request=NodeInputSerializer, responses={201: EnrolledSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = validated(NodeInputSerializer, request)
        fleet = owned(fleets_for_user(user=request.user), data["fleet"], "fleet")
        site = owned(sites_for_user(user=request.user), data["site"], "site")
        change_check(user=request.user, organization=fleet.organization_id, capability=Capability.NODES)
        try:
            _, issued = node_enroll_audited(
                user=request.user, fleet=fleet, site=site, hostname=data["hostname"], tenure=data.get("tenure"),
                commissioned_at=data.get("commissioned_at"), now=timezone.now(),
            )  # fmt: skip
        except NodeRefused as error:
            raise ValidationError({"detail": str(error)}) from error
        return _once(issued)


class NodeTokensView(InputView):
    @extend_schema(operation_id="node_tokens_list", responses={200: TokenSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        return Response(TokenSerializer(node_tokens_for_user(user=request.user), many=True).data)

    @extend_schema(
        operation_id="node_tokens_rotate",
        summary="Issue a node a new token (shown once); its active tokens are revoked unless revoke_others=false",
        request=RotateInputSerializer, responses={201: EnrolledSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = validated(RotateInputSerializer, request)
        node = owned(nodes_for_user(user=request.user).select_related("fleet"), data["node"], "node")
        change_check(user=request.user, organization=node.fleet.organization_id, capability=Capability.NODES)
        issued = node_token_rotate_audited(
            user=request.user, node=node, revoke_others=data["revoke_others"], now=timezone.now()
        )
        return _once(issued)


class NodeTokenDetailView(InputView):
    @extend_schema(
        operation_id="node_tokens_revoke", summary="Revoke a node token (from the node's next ingest request on)",
        responses={200: TokenSerializer, **ERRORS},
    )  # fmt: skip
    def delete(self, request: Request, token_id: int) -> Response:
        credential = owned(node_tokens_for_user(user=request.user), token_id, "token")
        change_check(user=request.user, organization=credential.node.fleet.organization_id, capability=Capability.NODES)
        revoked = node_token_revoke_audited(user=request.user, credential=credential, now=timezone.now())
        return Response(TokenSerializer(revoked).data)
