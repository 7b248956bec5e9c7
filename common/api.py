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
from rest_framework import status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import APIException, NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from fleets.authentication import PersonalTokenAuthentication
from fleets.permissions import RoleRefused

ERRORS = {
    400: OpenApiResponse(description="an invalid field or an overlapping validity period; nothing was changed"),
    401: OpenApiResponse(description="no credentials, or an unknown, expired or revoked personal token"),
    403: OpenApiResponse(description="a node token, or a role that may not make this change"),
    404: OpenApiResponse(description="a row or organization that is not among yours"),
    409: OpenApiResponse(description="the change would alter a locked period; nothing was changed"),
}


class InputInvalid(ValueError):
    """An input that cannot be saved as given; the message says why."""


class ChangeRefused(Exception):
    """A change refused as a whole because of the state it would alter (a locked period); the message says which."""


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "period_locked"


class InputView(APIView):
    """Maps the services' refusals to HTTP: invalid 400, role 403, locked period 409."""

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


def owned(queryset: QuerySet[Any], pk: Any, what: str) -> Any:
    """The row ``pk`` of a user-scoped queryset, or 404 whether it exists elsewhere or not."""
    row = queryset.filter(pk=pk).first()
    if row is None:
        raise NotFound(f"no {what} {pk} among yours")
    return row
