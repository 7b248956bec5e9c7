"""``GET /api/v1/reports/focus/``: the ledger as a FOCUS 1.2 cost and usage CSV, streamed.

The same authentication, rate and scoping as every report (``reports.report_view``);
errors in JSON. The mapping, column by column: docs/focus.md.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request

from common.renderers import CSV_MEDIA_TYPE, CSVRenderer
from common.scope import report_filters
from reports.focus.charges import DAY, HOUR
from reports.focus.columns import COLUMNS
from reports.focus.rows import FocusSpec, focus_rows
from reports.report_view import REPORT_ERRORS, ReportView
from reports.serializers import ScopeInputSerializer

_CHARGE_PERIODS = {"hour": HOUR, "day": DAY}


class FocusExportView(ReportView):
    # CSV whatever the Accept header says (FOCUS is a file format); errors stay JSON.
    renderer_classes = [CSVRenderer, JSONRenderer]

    class InputSerializer(ScopeInputSerializer):
        granularity = serializers.ChoiceField(
            choices=list(_CHARGE_PERIODS),
            default="hour",
            help_text="the charge period of each row: a UTC hour (the ledger's), or a UTC day of hours added up",
        )

    @extend_schema(
        parameters=[InputSerializer],
        responses={(200, CSV_MEDIA_TYPE): OpenApiTypes.STR, **REPORT_ERRORS},
        operation_id="reports_focus",
        summary="The ledger as a FOCUS 1.2 cost and usage dataset (CSV)",
        description=(
            "One row per node x charge period (hour, or day with granularity=day) x charge kind: rent, depreciation "
            "and running cost of owned nodes, electricity, and an owned node's purchase (ChargeCategory Purchase, "
            "EffectiveCost 0) in the period it is bought. BilledCost is cash as invoiced, EffectiveCost amortized. "
            "Money unrounded, in BillingCurrency; measured energy and CO2e in x_ columns, once per node and charge "
            "period. Always CSV, streamed. The mapping, column by column: docs/focus.md."
        ),
    )
    def get(self, request: Request) -> Any:
        params, start, end, organization_ids = self.scope(request)
        spec = FocusSpec(
            organization_ids=organization_ids,
            start=start,
            end=end,
            period=_CHARGE_PERIODS[params["granularity"]],
            filters=report_filters(organization_ids=organization_ids, params=params),
        )
        return self.csv_answer(COLUMNS, focus_rows(spec=spec), report="focus", start=start, end=end)
