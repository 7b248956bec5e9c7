"""The API kit every app's input endpoints share: the base view, its error responses, row lookup.

``InputView`` maps the services' refusals to HTTP: ``InputInvalid`` 400, a role
that may not (``fleets.permissions.RoleRefused``) 403, a ``ChangeRefused`` (a change
that would alter a locked period; governance raises it) 409. Refusals are defined
here, below every app that raises them, so no app imports upward to be mapped.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from fleets.authentication import PersonalTokenAuthentication
from fleets.permissions import RoleRefused

# A request without valid credentials is refused the same way by every endpoint.
UNAUTHENTICATED = "no credentials, or an unknown, expired or revoked personal token"


def error_responses(
    *, invalid: str, forbidden: str, not_found: str, conflict: str | None = None
) -> dict[int, OpenApiResponse]:
    """An endpoint's documented errors: 400, 401, 403, 404 (and 409), each in the endpoint's own words but 401."""
    described = {400: invalid, 401: UNAUTHENTICATED, 403: forbidden, 404: not_found, 409: conflict}
    return {code: OpenApiResponse(description=text) for code, text in described.items() if text is not None}


ERRORS = error_responses(
    invalid="an invalid field or an overlapping validity period; nothing was changed",
    forbidden="a node token, or a role that may not make this change",
    not_found="a row or organization that is not among yours",
    conflict="the change would alter a locked period; nothing was changed",
)


class InputInvalid(ValueError):
    """An input that cannot be saved as given; the message says why."""


class ChangeRefused(Exception):
    """A change refused as a whole because of the state it would alter (a locked period); the message says which."""


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "period_locked"


# Maps the services' refusals to HTTP: invalid 400, role 403, locked period 409. InputView is this with a
# docstring, which drf-spectacular prints into the schema of every operation stating none of its own (it walks
# up a view's classes to the first docstring); this base, without one, is for views that do not want it.
class InputViewBase(APIView):
    authentication_classes = [PersonalTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, InputInvalid):
            exc = ValidationError({"detail": str(exc)})
        elif isinstance(exc, RoleRefused):
            exc = PermissionDenied(str(exc))
        elif isinstance(exc, ChangeRefused):
            exc = Conflict(str(exc))
        return super().handle_exception(exc)


class InputView(InputViewBase):
    """Maps the services' refusals to HTTP: invalid 400, role 403, locked period 409."""


# An organization's row as the API answers it (an input endpoint's, a ledger correction's): its id and its
# organization's, first. (A comment, not a docstring: drf-spectacular would print a docstring into every
# subclass's schema.)
class OrganizationRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    organization_id = serializers.IntegerField()


def validated(
    serializer_class: type[serializers.Serializer], request: Request, *, partial: bool = False
) -> dict[str, Any]:
    """The request body as ``serializer_class`` reads it (``partial``: only the fields given), or 400 naming fields."""
    serializer = serializer_class(data=request.data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def owned(queryset: QuerySet[Any], pk: Any, what: str) -> Any:
    """The row ``pk`` of a user-scoped queryset, or 404 whether it exists elsewhere or not."""
    row = queryset.filter(pk=pk).first()
    if row is None:
        raise NotFound(f"no {what} {pk} among yours")
    return row
