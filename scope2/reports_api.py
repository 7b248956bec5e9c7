"""``/api/v1/reports/scope2/...``: Scope 2 dual reporting with the instruments behind the market-based figure.

- ``scope2/``: JSON, or CSV (``Accept: text/csv`` / ``?format=csv``) as
  ``level,site,instrument,metric,value`` lines;
- ``scope2/ghg-table/``: the GHG-Protocol-shaped table, JSON rows or CSV;
- ``scope2/esrs/``: datapoints keyed to ESRS E1-5 and E1-6, JSON;
- ``sustainability/``: ``reports.api.SustainabilityReportView`` led by this report's market-based
  figure, the one to disclose (``scope2.headline``), the site-factor figure beside it.

Each carries the audit trail of the inputs bearing on the period
(``governance.report_audit``): an ``audit`` section in JSON, ``audit``
lines in the Scope 2 CSV (the GHG table's CSV is the table alone; its JSON
carries the section).

Authentication and scoping as every report (any member reads). Every CSV cell
that a spreadsheet would take for a formula is escaped.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from common.csv_safety import csv_escaped
from common.query import organization_ref_field
from common.renderers import CSV_MEDIA_TYPE, csv_response
from fleets.models import Organization
from governance.report_audit import AUDIT_SECTION, audit_metric_rows, report_audit
from reports.api import ReportView
from reports.api import SustainabilityReportView as LedgerSustainabilityReportView
from reports.selectors.sustainability import SustainabilityReport
from reports.serializers import PeriodInputSerializer
from scope2.disclosures import GHG_COLUMNS, ghg_inventory_rows, ghg_table
from scope2.esrs import ID_SCHEME, STANDARD_VERSION, esrs_export_datapoints
from scope2.exports import biogenic_memo, scope2_csv_rows, scope2_output
from scope2.headline import sustainability_shown
from scope2.inventory import organization_boundary
from scope2.inventory_output import inventory
from scope2.selectors import Scope2Report, scope2_report

CSV_COLUMNS = ["level", "site", "instrument", "metric", "value"]


class Scope2InputSerializer(PeriodInputSerializer):
    organization = organization_ref_field("organization id or slug; optional if you belong to one only", required=False)


class Scope2View(ReportView):
    name = "scope2"
    InputSerializer = Scope2InputSerializer

    def report(self, request: Request) -> tuple[Scope2Report, Organization]:
        start, end, organization = self.organization_scope(request)
        return scope2_report(organization_id=organization.pk, start=start, end=end), organization

    def audit(self, request: Request, report: Scope2Report, organization: Organization) -> dict[str, Any]:
        return report_audit(user=request.user, organization=organization, start=report.start, end=report.end)

    def filename(self, report: Scope2Report) -> str:
        return f"wattledger-{self.name}-{report.start:%Y%m%dT%H}-{report.end:%Y%m%dT%H}.csv"


_RESPONSES = {(200, "application/json"): OpenApiTypes.OBJECT, (200, CSV_MEDIA_TYPE): OpenApiTypes.STR}
_AUDIT = f"The JSON's `audit` section: {AUDIT_SECTION} (`/api/v1/audit/?period_start=...&period_end=...`)."


class Scope2ReportView(Scope2View):
    @extend_schema(
        operation_id="reports_scope2",
        summary="Scope 2 dual reporting: location- and market-based, instruments, residual mix, 24/7 CFE score",
        description=(
            "Per organization and period: location-based and market-based Scope 2, the market-based figure both "
            "annually and hourly matched (each stating its `matching`), `market` the one the organization "
            "discloses (`/api/v1/scope2-disclosure/`); a period inside a year is the year-to-date slice of the "
            "year's allocation, so quarters add up to the year; the biogenic CO2 memo of biomass instruments; the "
            "instruments used with the quality criteria each met or failed; the residual-mix share and the "
            "location-based fallback, labelled; the 24/7 carbon-free-energy score per site. " + _AUDIT + " The CSV "
            "ends with `audit` lines: `entries_count`, `sha256`, `href`, then `<id>:<field>` per listed change."
        ),
        parameters=[Scope2InputSerializer],
        responses=_RESPONSES,
    )
    def get(self, request: Request) -> Any:
        report, organization = self.report(request)
        shown = scope2_output(report, organization)
        audit = self.audit(request, report, organization)
        if self.wants_csv(request):
            rows = chain(scope2_csv_rows(shown), ({"level": "audit", "metric": m, "value": v}
                                                  for m, v in audit_metric_rows(audit)))  # fmt: skip
            return csv_response(CSV_COLUMNS, csv_escaped(rows), filename=self.filename(report))
        return Response(shown | {"audit": audit})


class Scope2GhgTableView(Scope2View):
    name = "scope2-ghg-table"

    @extend_schema(
        operation_id="reports_scope2_ghg_table",
        summary="Scope 2 as the GHG Protocol table: a row per site and a total, both methods side by side",
        description=_AUDIT + " The CSV is the table alone.",
        parameters=[Scope2InputSerializer],
        responses=_RESPONSES,
    )
    def get(self, request: Request) -> Any:
        report, organization = self.report(request)
        rows, shown, memo = ghg_table(report), inventory(report=report), biogenic_memo(report)
        scopes = ghg_inventory_rows(shown)
        if self.wants_csv(request):
            memo_row = {
                "site": "MEMO: BIOGENIC CO2 (outside the scopes)",
                "note": f"{memo['tco2']} tCO2; {memo['note']}",
            }
            return csv_response(
                GHG_COLUMNS, csv_escaped(iter([*rows, *scopes, memo_row])), filename=self.filename(report)
            )
        audit = self.audit(request, report, organization)
        return Response({"start": report.start, "end": report.end, "market_matching": report.matching,
                         "columns": GHG_COLUMNS, "rows": rows, "inventory_rows": scopes, "biogenic_co2_memo": memo,
                         "inventory": shown, "audit": audit})  # fmt: skip


class Scope2EsrsView(Scope2View):
    name = "scope2-esrs"
    renderer_classes = [JSONRenderer]  # datapoints with their units and notes: JSON only

    @extend_schema(
        operation_id="reports_scope2_esrs",
        summary="Datapoints keyed to ESRS E1-5 (para. 37, energy mix, AR 34 shares) and E1-6 (Scopes 1-3, totals)",
        description=_AUDIT,
        parameters=[Scope2InputSerializer],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Any:
        report, organization = self.report(request)
        shown = inventory(report=report)
        return Response(
            {
                "standard": "ESRS E1 (Commission Delegated Regulation (EU) 2023/2772)",
                "standard_version": STANDARD_VERSION,
                "id_scheme": ID_SCHEME,
                "organization": organization.slug,
                "start": report.start,
                "end": report.end,
                "datapoints": esrs_export_datapoints(
                    report, share=organization_boundary(organization_id=organization.pk).share, inventory=shown
                ),
                "method": shown["embodied_amortized"]["method"],
                "market_matching": report.matching,
                "biogenic_co2_memo": biogenic_memo(report),
                "inventory": shown,
                "audit": self.audit(request, report, organization),
            }
        )


class SustainabilityReportView(LedgerSustainabilityReportView):
    """``/api/v1/reports/sustainability/``: its ``market_*`` the figure to disclose, as the page shows it;
    ``location_*`` within the organizational boundary's Scope 2, and the inventory (Scopes 1-3, totals)."""

    def shown(self, report: SustainabilityReport, organization: Organization) -> dict[str, Any]:
        return sustainability_shown(report=report, organization=organization)[0]
