"""What every report view shares: authentication, a rate per user, JSON or CSV, errors in JSON, its period.

Used by the reports API (``reports.api``) and by the other apps' report endpoints
(placement advice, Scope 2). Without a period a report ends where its
organizations' ledger is complete (``reports.selectors.complete``) and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, TypeVar

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import APIException
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from accounting.ledger import CurrencyMismatchError
from common.api import error_responses
from common.periods import holds_open_hours
from common.query import query_validated
from common.renderers import CSV_MEDIA_TYPE, CSVRenderer, csv_response
from common.scope import report_organization, report_organization_ids, report_period
from fleets.authentication import PersonalTokenAuthentication
from fleets.models import Organization
from reports.selectors.complete import complete_through


class MixedCurrencies(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "mixed_currencies"
    default_detail = "money in different currencies is never added: filter by currency or group by site or currency"


REPORT_ERRORS = error_responses(
    invalid="bad parameters, or money in two currencies in one row",
    forbidden="a node token: node tokens are for the ingest API only",
    not_found="an organization, fleet, site or node that is not among yours",
)


def _json_or_csv(output: Any) -> dict[Any, Any]:
    """A report's documented answers: ``output`` as JSON, the same rows as CSV, and its errors."""
    return {(200, "application/json"): output, (200, CSV_MEDIA_TYPE): OpenApiTypes.STR, **REPORT_ERRORS}


class ReportView(APIView):
    """What every report shares: authentication, a rate per user, JSON or CSV, and errors in JSON."""

    authentication_classes = [PersonalTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "reports"  # THROTTLE_REPORTS_RATE
    renderer_classes = [JSONRenderer, CSVRenderer]

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, CurrencyMismatchError):
            exc = MixedCurrencies(str(exc))
        response = super().handle_exception(exc)
        # A CSV holding an error message helps no client: errors are JSON whatever was asked.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response

    @staticmethod
    def wants_csv(request: Request) -> bool:
        return request.accepted_renderer.format == CSVRenderer.format

    InputSerializer: type[serializers.Serializer]  # the report's query parameters
    OutputSerializer: type[serializers.Serializer]  # its JSON answer (``report_operation``)

    def params(self, request: Request) -> dict[str, Any]:
        return query_validated(self.InputSerializer, request)

    # The clock the report reads (``timezone.now()`` at the request) and the end of the last complete hour of
    # the organizations it answers for then (``reports.selectors.complete``): set by ``scope``.
    now: datetime
    complete_through: datetime

    def scope(self, request: Request) -> tuple[dict[str, Any], datetime, datetime, list[int]]:
        """The validated parameters, the period ``[start, end)`` and the organizations asked for (each the user's).

        Without a period the report ends at the organizations' last complete hour (``complete_through``).
        """
        params = self.params(request)
        organization_ids = report_organization_ids(user=request.user, refs=params.get("organization", []))
        start, end = self._period(params, organization_ids)
        return params, start, end, organization_ids

    def organization_scope(self, request: Request) -> tuple[datetime, datetime, Organization]:
        """The period ``[start, end)`` asked for and the one organization (the user's) it is asked of."""
        params = self.params(request)
        organization = report_organization(user=request.user, ref=params.get("organization"))
        start, end = self._period(params, [organization.pk])
        return start, end, organization

    def _period(self, params: dict[str, Any], organization_ids: list[int]) -> tuple[datetime, datetime]:
        self.now = timezone.now()
        self.complete_through = complete_through(organization_ids=organization_ids, now=self.now)
        return report_period(params, now=self.now, through=self.complete_through)

    def completeness(self, end: datetime) -> dict[str, Any]:
        """What every report answer says of its hours: ``complete_through`` and ``includes_open_hours``."""
        return {
            "complete_through": self.complete_through,
            "includes_open_hours": holds_open_hours(end, self.complete_through),
        }

    @staticmethod
    def csv_answer(columns: list[str], rows: Iterable[Any], *, report: str, start: datetime, end: datetime) -> Any:
        """The report's rows streamed as CSV, in a file named after the report and its period."""
        return csv_response(columns, rows, filename=_csv_name(report, start, end))


ReportViewT = TypeVar("ReportViewT", bound=ReportView)


def report_operation(**operation: Any) -> Callable[[type[ReportViewT]], type[ReportViewT]]:
    """A report view's OpenAPI operation (``operation_id``, ``summary``, ``description``), declared on its class:
    its ``InputSerializer`` as the query, its ``OutputSerializer`` as JSON or the same rows as CSV, its errors."""

    def documented(view: type[ReportViewT]) -> type[ReportViewT]:
        schema = extend_schema(
            parameters=[view.InputSerializer], responses=_json_or_csv(view.OutputSerializer), **operation
        )
        return extend_schema_view(get=schema)(view)

    return documented


def _csv_name(report: str, start: datetime, end: datetime) -> str:
    return f"wattledger-{report}-{start:%Y%m%dT%H}-{end:%Y%m%dT%H}.csv"
