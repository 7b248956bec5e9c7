"""``GET /api/v1/reports/journal/?period=YYYY-MM``: a month's ledger as journal entries (CSV), footed.

The same authentication, rate and scoping as every report (``reports.report_view``);
errors in JSON. The entries and the default account map: ``reports.journal``, docs/focus.md.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from common.query import QueryInputSerializer, organization_ref_field
from common.renderers import CSV_MEDIA_TYPE, CSVRenderer
from common.scope import report_filters
from reports.focus.charges import DAY
from reports.focus.rows import FocusSpec, usage_charges
from reports.journal import JOURNAL_COLUMNS, journal_rows
from reports.report_view import REPORT_ERRORS, ReportView
from reports.serializers import id_field


class JournalExportView(ReportView):
    # CSV whatever the Accept header says (a file for the books); errors stay JSON.
    renderer_classes = [CSVRenderer, JSONRenderer]

    class InputSerializer(QueryInputSerializer):
        period = serializers.RegexField(
            r"^\d{4}-(0[1-9]|1[0-2])$", help_text="the UTC calendar month booked, YYYY-MM, e.g. 2026-11"
        )
        organization = serializers.ListField(
            child=organization_ref_field("organization id or slug"),
            required=False,
            help_text="organization id or slug, repeatable; default: every organization you belong to",
        )
        fleet = serializers.ListField(child=id_field("fleet id"), required=False, help_text="fleet id, repeatable")

    @extend_schema(
        parameters=[InputSerializer],
        responses={(200, CSV_MEDIA_TYPE): OpenApiTypes.STR, **REPORT_ERRORS},
        operation_id="reports_journal",
        summary="A month's ledger as journal entries (CSV), footing to the usage report",
        description=(
            "Per organization (entity), fleet (cost centre), currency and charge kind (rent, depreciation, running "
            "cost, electricity): a debit to the kind's expense account and a credit to its counter account "
            "(the default account map, docs/focus.md), rounded once to the currency's minor unit, and per entity "
            "and currency a rounding line where needed, so that the expense debits foot to the usage report's cost "
            "for the month. reference names the FOCUS rows the line adds up. Always CSV."
        ),
    )
    def get(self, request: Request) -> Any:
        params, start, end, organization_ids = self.scope(request)
        spec = FocusSpec(
            organization_ids=organization_ids,
            start=start,
            end=end,
            period=DAY,
            filters=report_filters(organization_ids=organization_ids, params=params),
        )
        reference = f"/api/v1/reports/focus/?period={params['period']}&organization={{organization}}&fleet={{fleet}}"
        rows = journal_rows(
            usage_charges(spec=spec), period=params["period"], reference=reference + " x_ChargeKind={kind}"
        )
        return self.csv_answer(JOURNAL_COLUMNS, rows, report="journal", start=start, end=end)
