"""``GET /api/v1/reports/journal/?period=YYYY-MM``: a month's ledger as journal entries (CSV), footed.

The same authentication, rate and scoping as every report (``reports.report_view``);
errors in JSON. The entries and the default account map: ``reports.journal``, docs/focus.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from rest_framework import serializers

from common.query import QueryInputSerializer
from reports.focus.export_view import FocusExportBaseView, csv_export_operation
from reports.focus.rows import FocusSpec, site_charges, usage_charges
from reports.journal import JOURNAL_COLUMNS, journal_rows
from reports.selectors.journal_accounts import account_maps
from reports.serializers import OrganizationsInputSerializer


class _MonthInputSerializer(QueryInputSerializer):
    period = serializers.RegexField(
        r"^\d{4}-(0[1-9]|1[0-2])$", help_text="the UTC calendar month booked, YYYY-MM, e.g. 2026-11"
    )


@csv_export_operation(
    operation_id="reports_journal",
    summary="A month's ledger as journal entries (CSV), footing to the usage report",
    description=(
        "Per organization (entity), fleet (cost centre), currency and charge kind (rent, depreciation, running "
        "cost, electricity): a debit to the kind's expense account and a credit to its counter account "
        "(the organization's own account map where it maps the kind, /api/v1/journal-accounts/, else the default "
        "map, docs/focus.md; account_map names which), rounded once to the currency's minor unit, and per entity "
        "and currency a rounding line where needed, so that the expense debits foot to the usage report's cost "
        "for the month. Corrections of closed periods booked in the month are entries of their own "
        "(charge_class Correction) on the same accounts, footed apart to the usage report's corrections cost. "
        "reference names the FOCUS rows the line adds up. Always CSV."
    ),
)
class JournalExportView(FocusExportBaseView):
    class InputSerializer(_MonthInputSerializer, OrganizationsInputSerializer):
        """The month, then the organizations and fleets asked of."""

    report = "journal"
    columns = JOURNAL_COLUMNS

    def rows(self, params: dict[str, Any], spec: FocusSpec) -> Iterator[dict[str, Any]]:
        reference = f"/api/v1/reports/focus/?period={params['period']}&organization={{organization}}&fleet={{fleet}}"
        charges = itertools.chain(usage_charges(spec=spec), site_charges(spec=spec))
        return journal_rows(
            charges, period=params["period"], reference=reference + " x_ChargeKind={kind}",
            account_maps=account_maps(organization_ids=spec.organization_ids),
        )  # fmt: skip
