"""What every report says of its period's closing (``closed``, ``restated``), the usage report's
``corrections``, and ``/api/v1/reports/corrections/``: the corrections of locked lines, JSON or CSV.

Money is rounded once here (``reports.display.money``), carbon shown in kgCO2e, as in every report.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.ledger.corrections import Cause
from accounting.models import LedgerCorrection
from common.api import OrganizationRowSerializer
from common.scope import report_fleet_ids
from reports.display import G_PER_KG, money, rounded
from reports.report_view import ReportView, report_operation
from reports.selectors.closing import (
    Closed,
    CorrectionSums,
    corrections_booked,
    corrections_in,
    corrections_restating,
    period_closed,
)
from reports.serializers import (
    PeriodOutputSerializer,
    ScopeInputSerializer,
    complete_through_field,
    includes_open_hours_field,
)

CLOSED = (
    "whether the period is closed: 'all' (every hour locked, for every organization asked for), 'partly' or "
    "'no'. A locked hour's figures never change; what would have changed them is booked as a correction in the "
    "first open period (see restated)"
)
RESTATED = (
    "what was restated since the period was closed: the standing corrections of its locked hours (late "
    "telemetry, a revised grid value, an input or formula change), counted and summed per currency; not in "
    "the period's figures, which stay as closed"
)
CORRECTIONS = (
    "the corrections (and reversals) booked in this period, restating hours of closed periods: figures of their "
    "own, per currency, not in the rows; the list: /api/v1/reports/corrections/"
)
_MONEY = (
    "hardware_cost", "electricity_cost", "cost", "rent_cost", "depreciation_cost", "opex_cost", "energy_tax_cost",
    "vat_amount", "vat_cost",
)  # fmt: skip
_KWH = ("it_kwh", "facility_kwh")
_CARBON = ("location_co2e_g", "market_co2e_g", "embodied_co2e_g_central")
_TOKENS = ("prompt_tokens", "generation_tokens")


def _kg(value: Any) -> float | None:
    return rounded(value / G_PER_KG, "kg")


def _figures(currency: str, sums: dict[str, Any]) -> dict[str, Any]:
    figures: dict[str, Any] = {name: money(sums[name], currency) for name in _MONEY}
    figures |= {name: rounded(sums[name], "kwh") for name in _KWH}
    figures |= {name.replace("co2e_g", "kgco2e"): _kg(sums[name]) for name in _CARBON}
    return figures | {name: int(sums[name]) for name in _TOKENS}


def _section(found: list[CorrectionSums]) -> dict[str, Any]:
    return {
        "count": sum(entry.count for entry in found),
        "by_currency": [
            {"currency": e.currency, "count": e.count, "reversals": e.reversals, **_figures(e.currency, e.sums)}
            for e in found
        ],
    }


def closing_output(*, organization_ids: Collection[int], start: datetime, end: datetime) -> dict[str, Any]:
    """``closed`` and ``restated`` of a report over ``[start, end)``."""
    return {
        "closed": period_closed(organization_ids=organization_ids, start=start, end=end).value,
        "restated": _section(corrections_restating(organization_ids=organization_ids, start=start, end=end)),
    }


def corrections_output(*, organization_ids: Collection[int], start: datetime, end: datetime) -> dict[str, Any]:
    """The usage report's ``corrections``: those booked in ``[start, end)``."""
    return _section(corrections_booked(organization_ids=organization_ids, start=start, end=end))


# A correction's figures (``_figures``); a serializer lists them after the fields of its first base, that say
# whose they are. (A comment, not a docstring: the schema would take it as each subclass's description.)
class _FiguresSerializer(serializers.Serializer):
    hardware_cost = serializers.DecimalField(max_digits=None, decimal_places=None)
    electricity_cost = serializers.DecimalField(max_digits=None, decimal_places=None)
    cost = serializers.DecimalField(max_digits=None, decimal_places=None)
    it_kwh = serializers.FloatField()
    facility_kwh = serializers.FloatField()
    location_kgco2e = serializers.FloatField()
    market_kgco2e = serializers.FloatField()
    embodied_kgco2e_central = serializers.FloatField()
    prompt_tokens = serializers.IntegerField()
    generation_tokens = serializers.IntegerField()
    # The hardware cost's split, as a line carries it (after the figures above, so that CSV columns only add).
    rent_cost = serializers.DecimalField(max_digits=None, decimal_places=None, help_text="of hardware_cost, rent")
    depreciation_cost = serializers.DecimalField(
        max_digits=None, decimal_places=None, help_text="of hardware_cost, depreciation"
    )
    opex_cost = serializers.DecimalField(max_digits=None, decimal_places=None, help_text="of hardware_cost, opex")
    # The taxes, as a line carries them (appended: CSV columns only add).
    energy_tax_cost = serializers.DecimalField(max_digits=None, decimal_places=None, help_text="energy tax, in cost")
    vat_amount = serializers.DecimalField(max_digits=None, decimal_places=None, help_text="VAT on the net amounts")
    vat_cost = serializers.DecimalField(
        max_digits=None, decimal_places=None, help_text="of vat_amount, the non-recoverable part (in cost)"
    )


class _CurrencyTallySerializer(serializers.Serializer):
    currency = serializers.CharField()
    count = serializers.IntegerField()
    reversals = serializers.IntegerField(help_text="of count, reversals (an unlocked hour rewritten)")


class CorrectionFiguresSerializer(_CurrencyTallySerializer, _FiguresSerializer):
    pass


class CorrectionSectionSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    by_currency = CorrectionFiguresSerializer(many=True)


def closed_field() -> serializers.ChoiceField:
    return serializers.ChoiceField(choices=[c.value for c in Closed], help_text=CLOSED)


def restated_field() -> CorrectionSectionSerializer:
    return CorrectionSectionSerializer(help_text=RESTATED)


def corrections_field() -> CorrectionSectionSerializer:
    return CorrectionSectionSerializer(help_text=CORRECTIONS)


# What a report answer says of its period before its figures: the period, through when its hours are final
# (``ReportView.completeness``), whether it is closed and what was restated since (``closing_output``).
# (A comment, not a docstring: the schema would take it as each subclass's description.)
class ReportPeriodSerializer(PeriodOutputSerializer):
    complete_through = complete_through_field()
    includes_open_hours = includes_open_hours_field()
    closed = closed_field()
    restated = restated_field()


class _CorrectionIdentitySerializer(OrganizationRowSerializer):
    node_id = serializers.IntegerField()
    node = serializers.CharField(help_text="the node's hostname")
    fleet_id = serializers.IntegerField()
    site_id = serializers.IntegerField()
    gpu_model = serializers.CharField()
    restated_hour = serializers.DateTimeField(help_text="the locked node-hour it restates")
    booked_hour = serializers.DateTimeField(help_text="the start of the first open period when it was booked")
    cause = serializers.ChoiceField(choices=[c.value for c in Cause])
    reverses = serializers.IntegerField(allow_null=True, help_text="a reversal: the correction it undoes")
    reversed_at = serializers.DateTimeField(allow_null=True, help_text="when a reversal undid it")
    created_at = serializers.DateTimeField()
    currency = serializers.CharField()


class CorrectionRowSerializer(_CorrectionIdentitySerializer, _FiguresSerializer):
    pass


def correction_row_output(correction: LedgerCorrection) -> dict[str, Any]:
    sums = {name: getattr(correction, name) for name in (*_MONEY, *_KWH, *_CARBON, *_TOKENS)}
    return {
        "id": correction.pk, "organization_id": correction.organization_id, "node_id": correction.node_id,
        "node": correction.node.hostname, "fleet_id": correction.fleet_id, "site_id": correction.site_id,
        "gpu_model": correction.gpu_model, "restated_hour": correction.restated_hour,
        "booked_hour": correction.booked_hour, "cause": correction.cause, "reverses": correction.reverses_id,
        "reversed_at": correction.reversed_at, "created_at": correction.created_at, "currency": correction.currency,
        **_figures(correction.currency, sums),
    }  # fmt: skip


@report_operation(
    operation_id="reports_corrections",
    summary="Corrections of locked ledger lines: booked in the period, or restating its hours",
    description=(
        "A locked hour's line never changes; what would have changed it (late telemetry, a revised grid "
        "value, an input or formula change) is booked as a correction in the first open period, and undone "
        "by a reversal once the hour is unlocked and rewritten. Each correction's figures are the "
        "difference it books. CSV: `Accept: text/csv` or `?format=csv`."
    ),
)
class CorrectionsView(ReportView):
    class InputSerializer(ScopeInputSerializer):
        by = serializers.ChoiceField(
            choices=["booked", "restated"], default="booked",
            help_text="booked: the corrections booked in the period (the default); restated: those restating "
            "an hour of it",
        )  # fmt: skip

    @extend_schema_serializer(component_name="LedgerCorrections")
    class OutputSerializer(PeriodOutputSerializer):
        by = serializers.CharField()
        count = serializers.IntegerField()
        results = CorrectionRowSerializer(many=True)

    def get(self, request: Request) -> Any:
        params, start, end, organization_ids = self.scope(request)
        found = corrections_in(organization_ids=organization_ids, start=start, end=end, by=params["by"])
        if params.get("fleet"):
            found = found.filter(fleet_id__in=report_fleet_ids(organization_ids=organization_ids, ids=params["fleet"]))
        rows = [correction_row_output(correction) for correction in found]
        if self.wants_csv(request):
            return self.csv_answer(list(CorrectionRowSerializer().fields), rows, report="corrections", start=start,
                                   end=end)  # fmt: skip
        answer = {"start": start, "end": end, "by": params["by"], "count": len(rows), "results": rows}
        return Response(self.OutputSerializer(answer).data)


def restated_metric_rows(restated: dict[str, Any]) -> list[tuple[str, Any]]:
    """The ``restated`` section as a metric-per-line CSV's rows: ``restated:count``, then
    ``restated:<currency>:<figure>``."""
    rows: list[tuple[str, Any]] = [("restated:count", restated["count"])]
    for entry in restated["by_currency"]:
        rows += [(f"restated:{entry['currency']}:{name}", value) for name, value in entry.items() if name != "currency"]
    return rows
