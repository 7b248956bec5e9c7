"""``/api/v1/tokens/``: a person's API tokens for report clients.

``POST`` issues a token and shows it once; it needs a signed-in browser
session, so a token can never mint another. ``GET`` lists your own tokens
(never their secret); ``DELETE /api/v1/tokens/<id>/`` revokes one of yours.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle, ScopedRateThrottle
from rest_framework.views import APIView

from fleets.authentication import PersonalTokenAuthentication
from fleets.models import PersonalToken, TokenScope
from fleets.personal_tokens import personal_token_create, personal_token_revoke, personal_tokens_for_user


def _token_state(token: PersonalToken, now: Any) -> dict[str, Any]:
    expired = token.expires_at is not None and token.expires_at <= now
    return {
        "id": token.pk,
        "name": token.name,
        "prefix": token.prefix,
        "created_at": token.created_at,
        "last_used_at": token.last_used_at,
        "expires_at": token.expires_at,
        "revoked_at": token.revoked_at,
        "active": token.revoked_at is None and not expired,
        "scope": token.scope,
    }


def _scope_field(**options: Any) -> serializers.ChoiceField:
    return serializers.ChoiceField(
        choices=TokenScope.choices,
        help_text="reports: the reports API; metrics: GET /metrics only (read-only, for a Prometheus scraper)",
        **options,
    )


class PersonalTokensView(APIView):
    """One URL, two operations: the list (GET) and the issue (POST), each with its own serializers."""

    authentication_classes = [SessionAuthentication, PersonalTokenAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_scope = "personal_token_create"  # THROTTLE_TOKEN_CREATE_RATE, per user

    def get_throttles(self) -> list[BaseThrottle]:
        # Only issuing is rate-limited: listing one's tokens costs nothing and mints nothing.
        return [ScopedRateThrottle()] if self.request.method == "POST" else []

    @extend_schema_serializer(component_name="PersonalToken")
    class ListOutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        name = serializers.CharField()
        prefix = serializers.CharField(help_text="the token's first characters, to tell tokens apart")
        created_at = serializers.DateTimeField()
        last_used_at = serializers.DateTimeField(allow_null=True, help_text="to the minute")
        expires_at = serializers.DateTimeField(allow_null=True)
        revoked_at = serializers.DateTimeField(allow_null=True)
        active = serializers.BooleanField()
        scope = _scope_field()

    @extend_schema_serializer(component_name="PersonalTokenRequest")
    class CreateInputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=100, help_text="what the token is for")
        expires_at = serializers.DateTimeField(required=False, allow_null=True, help_text="empty: until revoked")
        scope = _scope_field(default=TokenScope.REPORTS.value)

    @extend_schema_serializer(component_name="PersonalTokenIssued")
    class CreateOutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        name = serializers.CharField()
        prefix = serializers.CharField()
        token = serializers.CharField(help_text="send as 'Authorization: Bearer <token>'; shown this once only")
        created_at = serializers.DateTimeField()
        expires_at = serializers.DateTimeField(allow_null=True)
        scope = _scope_field()

    @extend_schema(
        operation_id="tokens_list", summary="Your personal API tokens", responses=ListOutputSerializer(many=True)
    )
    def get(self, request: Request) -> Response:
        now = timezone.now()
        tokens = [_token_state(token, now) for token in personal_tokens_for_user(user=request.user)]
        return Response(self.ListOutputSerializer(tokens, many=True).data)

    @extend_schema(
        operation_id="tokens_create",
        summary="Issue a personal API token (shown once)",
        description="Needs a signed-in browser session (with its CSRF token); a token cannot issue tokens.",
        request=CreateInputSerializer,
        responses={
            201: CreateOutputSerializer,
            400: OpenApiResponse(description="no name, or an expiry in the past"),
            403: OpenApiResponse(description="not a browser session"),
        },
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.successful_authenticator, SessionAuthentication):
            raise PermissionDenied("tokens are issued from a signed-in browser session, not with a token")
        data = self.CreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        expires_at = data.validated_data.get("expires_at")
        if expires_at is not None and expires_at <= timezone.now():
            raise ValidationError({"expires_at": ["must be in the future"]})
        token, secret = personal_token_create(
            user=request.user,
            name=data.validated_data["name"],
            expires_at=expires_at,
            scope=data.validated_data["scope"],
        )
        answer = {**_token_state(token, timezone.now()), "token": secret}
        return Response(self.CreateOutputSerializer(answer).data, status=status.HTTP_201_CREATED)


class PersonalTokenRevokeView(APIView):
    authentication_classes = [SessionAuthentication, PersonalTokenAuthentication]
    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="tokens_revoke",
        summary="Revoke one of your personal API tokens",
        responses={204: None, 404: OpenApiResponse(description="not one of your tokens")},
    )
    def delete(self, request: Request, token_id: int) -> Response:
        if not personal_token_revoke(user=request.user, token_id=token_id):
            raise NotFound("no such token among yours")
        return Response(status=status.HTTP_204_NO_CONTENT)
