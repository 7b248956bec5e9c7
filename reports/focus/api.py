"""``GET /api/v1/reports/focus/``: the ledger as a FOCUS 1.2 cost and usage CSV, streamed.

The same authentication, rate and scoping as every report (``reports.report_view``);
errors in JSON. The mapping, column by column: docs/focus.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from rest_framework import serializers

from reports.focus.charges import DAY, HOUR
from reports.focus.columns import COLUMNS
from reports.focus.export_view import FocusExportBaseView, csv_export_operation
from reports.focus.rows import FocusSpec, focus_rows
from reports.serializers import ScopeInputSerializer

_CHARGE_PERIODS = {"hour": HOUR, "day": DAY}


@csv_export_operation(
    operation_id="reports_focus",
    summary="The ledger as a FOCUS 1.2 cost and usage dataset (CSV)",
    description=(
        "One row per node x charge period (hour, or day with granularity=day) x charge kind: rent, depreciation "
        "and running cost of owned nodes, electricity, and an owned node's purchase (ChargeCategory Purchase, "
        "EffectiveCost 0) in the period it is bought, and the corrections of closed periods booked in the "
        "period (ChargeClass Correction, charged to the locked hour they restate, billed in the month they are "
        "booked in). BilledCost is cash as invoiced, EffectiveCost amortized. "
        "Money unrounded, in BillingCurrency; measured energy and CO2e in x_ columns, once per node and charge "
        "period. Always CSV, streamed. The mapping, column by column: docs/focus.md."
    ),
)
class FocusExportView(FocusExportBaseView):
    class InputSerializer(ScopeInputSerializer):
        granularity = serializers.ChoiceField(
            choices=list(_CHARGE_PERIODS),
            default="hour",
            help_text="the charge period of each row: a UTC hour (the ledger's), or a UTC day of hours added up",
        )

    report = "focus"
    columns = COLUMNS

    def charge_period(self, params: dict[str, Any]) -> timedelta:
        return _CHARGE_PERIODS[params["granularity"]]

    def rows(self, params: dict[str, Any], spec: FocusSpec) -> Iterator[dict[str, Any]]:
        return focus_rows(spec=spec)
