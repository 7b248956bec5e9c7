"""What the ledger's file exports (``/api/v1/reports/focus/``, ``/api/v1/reports/journal/``) share: always CSV,
errors in JSON, the FOCUS charges of the organizations and fleets asked for, and their OpenAPI operation."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from common.renderers import CSV_MEDIA_TYPE, CSVRenderer
from common.scope import report_filters
from reports.focus.charges import DAY
from reports.focus.rows import FocusSpec
from reports.report_view import REPORT_ERRORS, ReportView


def csv_export_schema(params: type[serializers.Serializer], **operation: Any) -> Any:
    """A file export's OpenAPI operation: ``params`` as its query, a CSV as its answer, the reports' errors."""
    return extend_schema(
        parameters=[params], responses={(200, CSV_MEDIA_TYPE): OpenApiTypes.STR, **REPORT_ERRORS}, **operation
    )


class FocusExportBaseView(ReportView):
    # CSV whatever the Accept header says (a file format, a file for the books); errors stay JSON.
    renderer_classes = [CSVRenderer, JSONRenderer]

    def charge_period(self, params: dict[str, Any]) -> timedelta:
        """The charge period the export adds hours up to (hook): a UTC day unless the export says otherwise."""
        return DAY

    def focus_scope(self, request: Request) -> tuple[dict[str, Any], FocusSpec]:
        """The validated parameters and the FOCUS charges they ask for, by ``charge_period``."""
        params, start, end, organization_ids = self.scope(request)
        spec = FocusSpec(
            organization_ids=organization_ids,
            start=start,
            end=end,
            period=self.charge_period(params),
            filters=report_filters(organization_ids=organization_ids, params=params),
        )
        return params, spec
