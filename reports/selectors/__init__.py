"""Report selectors: what the reports API and the dashboards read.

Every selector reads the stored ledger (``NodeHourLedger``, which carries each
node-hour's GPU utilization too) and hourly serving usage (``EndpointHourUsage``)
of ``organization_ids`` over ``[start, end)`` (aware UTC, whole hours), and
aggregates in SQL: a few queries per call whatever the number of lines, never
raw samples. Callers scope first: ``organization_ids`` must already be the
caller's own (``fleets.selectors.organizations_for_user``); any member may read
reports.

Money is never added across currencies: a group whose lines are in two
currencies raises ``accounting.ledger.CurrencyMismatchError`` (filter by
currency, or group by site or currency). Nothing is rounded here:
``reports.display`` rounds for display, money with ``money_quantize``.

- ``report_rows`` / ``report_page`` / ``report_rows_iter`` / ``report_rows_count``:
  cost, energy, carbon and tokens per period bucket x group (a list, a page with
  its total count, a stream for CSV, the count), each of the ``UsageSpec`` asked for.
- ``ledger_parts`` / ``parts_sum`` / ``parts_total``: the lines summed once per a
  few keys, for a page that shows several roll-ups of them (added exactly in Python).
- ``fleet_comparison``: per fleet (or fleet x GPU model): throughput, TTFT, cost,
  energy and carbon per token, utilization, idle share, each row traced (intensity and
  embodied factors' sources), and ratios to a baseline fleet.
- ``sustainability_report``: one organization's Scope 2 and embodied carbon,
  energy and PUE, with the quality and sources of the data behind them.
- ``complete_through``: the end of the organizations' last complete hour (every
  node-hour's ledger line and usage final), where default periods end; the
  comparison and the usage report by LLM model read final node-hours only.
"""

from reports.metrics import ComparisonRow, ComparisonStats, LedgerSums
from reports.selectors.comparison import fleet_comparison
from reports.selectors.complete import complete_through
from reports.selectors.lines import MIXED_MODEL, NO_FILTERS, ReportFilters, gpu_model_profiles, ledger_lines
from reports.selectors.parts import BUCKET, LedgerPart, ledger_parts, parts_sum, parts_total
from reports.selectors.sustainability import (
    FactorUse,
    GridHour,
    QualityHour,
    SustainabilityReport,
    sustainability_report,
)
from reports.selectors.usage import (
    GroupBy,
    ReportPage,
    ReportRow,
    UsageSpec,
    group_labels,
    report_page,
    report_row,
    report_rows,
    report_rows_count,
    report_rows_iter,
)

__all__ = [
    "BUCKET",
    "MIXED_MODEL",
    "NO_FILTERS",
    "ComparisonRow",
    "ComparisonStats",
    "FactorUse",
    "GridHour",
    "GroupBy",
    "LedgerPart",
    "LedgerSums",
    "QualityHour",
    "ReportFilters",
    "ReportPage",
    "ReportRow",
    "SustainabilityReport",
    "UsageSpec",
    "complete_through",
    "fleet_comparison",
    "gpu_model_profiles",
    "group_labels",
    "ledger_lines",
    "ledger_parts",
    "parts_sum",
    "parts_total",
    "report_page",
    "report_row",
    "report_rows",
    "report_rows_count",
    "report_rows_iter",
    "sustainability_report",
]
