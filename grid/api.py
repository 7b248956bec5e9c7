"""``POST /api/v1/grid/intensity.csv``: an organization's hourly intensities (e.g. its supplier's) as CSV."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import APIException, NotFound, PermissionDenied
from rest_framework.parsers import BaseParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.query import QueryInputSerializer, query_validated
from fleets.authentication import PersonalTokenAuthentication
from fleets.models import Organization
from fleets.permissions import ROLES_FOR, Capability
from fleets.selectors import organizations_for_user
from governance.locks import PeriodLocked
from grid import CsvError
from grid.stored_intensity import SOURCE_NAME_PATTERN
from grid.upload_service import intensity_upload_save

CSV_CONTENT_TYPE = "text/csv"
# A year of hourly values for a dozen zones is about 4 MB.
MAX_CSV_BYTES = 16 * 1024 * 1024
# Enough to fix a file by; a wholly wrong file would otherwise answer one line per row.
MAX_PROBLEMS_LISTED = 200
UPLOAD_ROLES: set[str] = {str(role) for role in ROLES_FOR[Capability.SUSTAINABILITY]}  # fleets.permissions


class CsvTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


class CsvParser(BaseParser):
    """A ``text/csv`` body as ``{"csv": bytes}``, read from the stream up to the limit (413 past it).

    Parsed when the view reads ``request.data``, or earlier when the CSRF check of
    a session reads ``request.POST`` (which is then empty: the body is no form).
    The stream is read, not ``request.body``, which Django caps at
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MB).
    """

    media_type = CSV_CONTENT_TYPE

    def parse(
        self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> dict[str, bytes]:
        too_large = CsvTooLarge(f"the file is over the limit of {MAX_CSV_BYTES} bytes")
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > MAX_CSV_BYTES:
            raise too_large
        body = stream.read(MAX_CSV_BYTES + 1) if stream is not None else b""
        if len(body) > MAX_CSV_BYTES:
            raise too_large
        return {"csv": bytes(body)}


class _UploadRefused(Exception):
    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class IntensityCsvUploadView(APIView):
    # A personal token (wlp_...) as for the reports, or a signed-in browser with its CSRF token.
    authentication_classes = [PersonalTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [CsvParser]

    class InputSerializer(QueryInputSerializer):
        organization = serializers.SlugField(max_length=200, help_text="the organization's slug")
        source_name = serializers.RegexField(
            SOURCE_NAME_PATTERN, max_length=64, help_text='names the upload; rows are tagged "csv:<source_name>"'
        )

    class OutputSerializer(serializers.Serializer):
        organization = serializers.SlugField()
        source_name = serializers.CharField()
        stored = serializers.IntegerField(help_text="hours inserted or replaced")

    class ProblemsSerializer(serializers.Serializer):
        error = serializers.CharField()
        problems = serializers.ListField(child=serializers.CharField(), help_text='"line N: ..." each')
        problem_count = serializers.IntegerField()

    @extend_schema(
        operation_id="grid_intensity_csv_upload",
        summary="Upload hourly grid intensities (CSV) for one organization",
        description=(
            "Body: `text/csv` with header `zone,hour_start,gco2e_per_kwh[,kind]` (see grid.csv_upload). "
            "All rows are stored or none. Only the organization's admin and sustainability members may upload; "
            "the values are visible to that organization only and preferred over live providers in its reports. "
            "A file with an hour inside one of the organization's locked periods is refused whole (409)."
        ),
        parameters=[
            OpenApiParameter(
                "organization",
                {"type": "string", "maxLength": 200, "pattern": r"^[-a-zA-Z0-9_]+$"},
                required=True,
                description="the organization's slug",
            ),
            OpenApiParameter(
                "source_name",
                {"type": "string", "maxLength": 64, "pattern": SOURCE_NAME_PATTERN},
                required=True,
                description='names the upload; rows are tagged "csv:<source_name>"',
            ),
        ],
        request={CSV_CONTENT_TYPE: OpenApiTypes.STR},
        responses={
            201: OutputSerializer,
            400: OpenApiResponse(ProblemsSerializer, description="the file was rejected; nothing was stored"),
            403: OpenApiResponse(description="a member without the admin or sustainability role"),
            404: OpenApiResponse(description="no such organization among the user's"),
            401: OpenApiResponse(description="no, or an unknown, expired or revoked, personal token or session"),
            413: OpenApiResponse(description="body over the limit"),
            409: OpenApiResponse(description="an hour inside a locked period of the organization; nothing stored"),
            415: OpenApiResponse(description="not text/csv"),
        },
    )
    def post(self, request: Request) -> Response:
        query = query_validated(self.InputSerializer, request)
        organization = _organization_for_upload(user=request.user, slug=query["organization"])
        source_name = query["source_name"]
        try:
            stored, _ = intensity_upload_save(
                organization=organization, body=_csv_body(request), source_name=source_name, user=request.user
            )
        except _UploadRefused as refused:
            return Response({"error": str(refused)}, status=refused.status)
        except PeriodLocked as locked:
            return Response({"error": str(locked)}, status=status.HTTP_409_CONFLICT)
        except CsvError as error:
            return Response(_problems(error), status=status.HTTP_400_BAD_REQUEST)
        answer = {"organization": organization.slug, "source_name": source_name, "stored": stored}
        return Response(self.OutputSerializer(answer).data, status=status.HTTP_201_CREATED)


def _organization_for_upload(*, user: Any, slug: str) -> Organization:
    """404 for an organization the user is not in (its existence is not revealed), 403 for a lesser role."""
    organization = organizations_for_user(user=user).filter(slug=slug).first()
    if organization is None:
        raise NotFound("no such organization")
    if not organizations_for_user(user=user, roles=UPLOAD_ROLES).filter(pk=organization.pk).exists():
        raise PermissionDenied("uploading grid intensities needs the admin or sustainability role")
    return organization


def _csv_body(request: Request) -> bytes:
    content_type = (request.content_type or "").split(";")[0].strip().lower()
    if content_type != CSV_CONTENT_TYPE:
        raise _UploadRefused(f"Content-Type must be {CSV_CONTENT_TYPE}, got {content_type or 'none'!r}", status=415)
    data = request.data  # {} for an empty body: no parser ran
    return bytes(data["csv"]) if isinstance(data, dict) and "csv" in data else b""


def _problems(error: CsvError) -> dict[str, Any]:
    return {
        "error": "the CSV was rejected; nothing was stored",
        "problems": error.problems[:MAX_PROBLEMS_LISTED],
        "problem_count": len(error.problems),
    }
