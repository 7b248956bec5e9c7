"""What the ledger's file exports (``/api/v1/reports/focus/``, ``/api/v1/reports/journal/``) share: always CSV,
errors in JSON, the FOCUS charges of the organizations and fleets asked for, and their OpenAPI operation."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, TypeVar

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from common.renderers import CSV_MEDIA_TYPE, CSVRenderer
from common.scope import report_filters
from reports.focus.charges import DAY
from reports.focus.rows import FocusSpec
from reports.report_view import REPORT_ERRORS, ReportView


class FocusExportBaseView(ReportView):
    # CSV whatever the Accept header says (a file format, a file for the books); errors stay JSON.
    renderer_classes = [CSVRenderer, JSONRenderer]

    report: str  # the export's name, in its file's
    columns: list[str]  # the CSV's header

    def get(self, request: Request) -> Any:
        params, spec = self.focus_scope(request)
        rows = self.rows(params, spec)
        return self.csv_answer(self.columns, rows, report=self.report, start=spec.start, end=spec.end)

    def rows(self, params: dict[str, Any], spec: FocusSpec) -> Iterable[dict[str, Any]]:
        """The export's rows (hook), from its parameters and the FOCUS charges they ask for."""
        raise NotImplementedError

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


ExportViewT = TypeVar("ExportViewT", bound=FocusExportBaseView)


def csv_export_operation(**operation: Any) -> Callable[[type[ExportViewT]], type[ExportViewT]]:
    """A file export's OpenAPI operation (``operation_id``, ``summary``, ``description``), declared on its class:
    its ``InputSerializer`` as the query, a CSV as its answer, the reports' errors."""

    def documented(view: type[ExportViewT]) -> type[ExportViewT]:
        responses: dict[Any, Any] = {(200, CSV_MEDIA_TYPE): OpenApiTypes.STR, **REPORT_ERRORS}
        schema = extend_schema(parameters=[view.InputSerializer], responses=responses, **operation)
        return extend_schema_view(get=schema)(view)

    return documented
