"""A ledger figure is declared once: the line's columns are the stored line's, and every summed
figure (``accounting.ledger.totals.summed``) means the same line by line in Python and in SQL."""

from __future__ import annotations

from decimal import Decimal

import pytest

from accounting.ledger import LedgerTotals, NodeHourLine
from accounting.ledger.line import line_columns
from accounting.ledger.totals import summed_fields
from accounting.models import NodeHourLedger
from reports.aggregates import ledger_sums, ledger_sums_from
from reports.metrics import LedgerSums
from tests.helpers.ledger_inputs import node

pytestmark = pytest.mark.django_db
STORED = {f.attname for f in NodeHourLedger._meta.concrete_fields}


def test_every_column_of_a_line_is_a_column_of_the_stored_line():
    from accounting.ledger import build_node_hour_line

    columns = line_columns(build_node_hour_line(node()))

    assert set(columns) <= STORED
    assert {"embodied_co2e_g_low", "embodied_co2e_g_central", "embodied_co2e_g_high"} <= set(columns)
    assert len(columns) == len(NodeHourLine.__dataclass_fields__) + 2  # the embodied range is three columns


def test_every_summed_figure_reads_stored_columns():
    for cls in (LedgerTotals, LedgerSums):
        for name, (spec, _) in summed_fields(cls).items():
            assert set(spec.columns or ()) | {column for column, _ in spec.where} <= STORED, name


def test_the_sql_sums_equal_the_declaration_applied_line_by_line(fleets, org_a):
    lines = NodeHourLedger.objects.filter(organization=org_a)
    stored = list(lines.values())
    assert len(stored) == 6

    in_sql = ledger_sums_from(lines.aggregate(**ledger_sums()), currency="USD")

    for cls, summed in ((LedgerTotals, in_sql.totals), (LedgerSums, in_sql)):
        for name, (spec, zero) in summed_fields(cls).items():
            by_hand = sum((spec.of(row) for row in stored), zero)
            # SQLite adds decimals as doubles: equal to the 12th significant digit.
            tolerance = Decimal("1e-12") if isinstance(zero, Decimal) else 1e-12
            assert getattr(summed, name) == pytest.approx(by_hand, rel=tolerance, abs=tolerance), name
    assert in_sql.totals.lines == 6 and in_sql.totals.generation_tokens == 3 * (500_000 + 300_000)


def test_the_nodes_page_sums_each_node_as_the_reports_do(fleets, client_a):
    html = client_a.get("/nodes/?start=2026-10-31&end=2026-11-01").content.decode()

    row = html[html.index("h100-a") :].split("</tr>")[0]
    # 3 hours of 5.54 (16.62) and 1.5M tokens; 3 x 1.8 kWh facility.
    assert "16.62 USD" in row and "4,500,000" in row and "5.4" in row
