"""The usage report: cost, energy, carbon and tokens per period bucket x group."""

from __future__ import annotations

import dataclasses
import enum
import functools
import itertools
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, F, Max, Min, Q, QuerySet
from django.utils import timezone

from accounting.ledger import CurrencyMismatchError
from accounting.models import NodeHourLedger
from common.periods import Granularity, bucket_end
from fleets.models import Fleet, Node, Organization, Site
from reports.aggregates import ledger_sums, ledger_sums_from
from reports.metrics import LedgerSums, ledger_sums_merge
from reports.selectors.allocation import LINE, allocated_rows, llm_name, with_line
from reports.selectors.complete import final_q
from reports.selectors.lines import (
    NO_FILTERS,
    ReportFilters,
    gpu_model_profiles,
    ledger_lines,
    ledger_lines_where,
    ledger_rows,
    site_hours_serve,
)
from reports.selectors.parts import bucket_expression
from reports.selectors.trace import TRACE_SUMS, RowTracer, TracePart, as_part, trace_parts
from telemetry.models import EndpointHourUsage

# Rows fetched per round trip when streaming a report (CSV): a few hundred kB each.
STREAM_CHUNK_ROWS = 2000


class GroupBy(enum.StrEnum):
    NONE = "none"
    ORGANIZATION = "organization"
    FLEET = "fleet"
    SITE = "site"
    NODE = "node"
    GPU_MODEL = "gpu_model"
    CURRENCY = "currency"
    LLM_MODEL = "llm_model"


_GROUP_FIELDS = {
    GroupBy.ORGANIZATION: "organization_id",
    GroupBy.FLEET: "fleet_id",
    GroupBy.SITE: "site_id",
    GroupBy.NODE: "node_id",
    GroupBy.GPU_MODEL: "gpu_model",
    GroupBy.CURRENCY: "currency",
    GroupBy.LLM_MODEL: "k_llm",
}
# The group of node-hours without output tokens when grouping by LLM model (attributed to no model).
NO_OUTPUT_TOKENS_LABEL = "no output tokens (idle, attributed to no LLM model)"


@dataclass(frozen=True)
class ReportRow:
    """One bucket x group of the usage report. The bucket is cut to the period asked for.

    ``group_key``: the id (organization, fleet, site, node), model key or currency
    code as text; ``None`` without grouping. ``sums`` holds the unrounded totals
    and their per-token figures (``sums.totals.cost_per_1m_tokens`` ...).
    ``embodied_sources``: the sources of the embodied factors of the GPU models whose
    lines carry embodied carbon (``None`` when none does); ``location_sources``: each
    grid intensity source with its share (0-1) of the row's facility kWh,
    ``"source=share; ..."`` largest first (the rest has no intensity).
    """

    period_start: datetime
    period_end: datetime
    group_key: str | None
    group_label: str | None
    sums: LedgerSums
    embodied_sources: str | None = None
    location_sources: str | None = None


# Per row, the smallest and largest GPU model and intensity source of its lines: when each pair
# agrees (one model, one source: node rows, and most fleet rows) the row's trace needs no other query.
_TRACE_BOUNDS = {
    "s_model_lo": Min("gpu_model"),
    "s_model_hi": Max("gpu_model"),
    "s_source_lo": Min("location_source"),
    "s_source_hi": Max("location_source"),
}


@dataclass(frozen=True)
class UsageSpec:
    """What a usage report asks for: whose lines, over which period, in which buckets and groups."""

    organization_ids: Collection[int]
    start: datetime
    end: datetime
    granularity: Granularity
    group_by: GroupBy
    filters: ReportFilters = NO_FILTERS
    # The clock (``timezone.now()`` unless given): by LLM model, only node-hours final by then are allocated.
    now: datetime | None = None


@dataclass(frozen=True)
class ReportPage:
    """One page of usage rows and the number of rows in all pages."""

    count: int
    rows: list[ReportRow]


def _chunks(items: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _one_part(values: Mapping[str, Any]) -> bool:
    """Whether a row's lines are of one GPU model and one intensity source (its own sums trace it)."""
    return values["s_model_lo"] == values["s_model_hi"] and values["s_source_lo"] == values["s_source_hi"]


@dataclass(frozen=True)
class _UsageQuery:
    """The lines of one usage report, their bucket annotated, and the fields a row is keyed by (currency aside)."""

    spec: UsageSpec
    lines: QuerySet[Any]  # the lines, or their site-hours where they serve (``site_hours``)
    keys: list[str]
    site_hours: bool = False

    def rows(self, offset: int, limit: int | None) -> QuerySet[Any]:
        # Currency is in the GROUP BY so that money of two currencies can never be summed,
        # even if the check were skipped; after the check it splits no row.
        sums = ledger_sums(site_hours=self.site_hours)
        aggregated = self.lines.values(*self.keys, "currency").annotate(**sums, **_TRACE_BOUNDS)
        ordered = aggregated.order_by(*self.keys, "currency")
        return ordered[offset : None if limit is None else offset + limit]

    def rows_traced(self, page: Iterable[dict[str, Any]], labels: dict[str, str]) -> list[ReportRow]:
        """The report rows of ``page`` (values of ``rows``), each traced to its sources.

        A row of one GPU model and one intensity source is its own trace part; the parts of the rows that mix
        them are read in one grouped query for the whole page (not one per row: an hourly report's page is 500
        rows, most of two models)."""
        values_list = list(page)
        rows = [self._row(values, labels) for values in values_list]
        mixed = [(values, row) for values, row in zip(values_list, rows, strict=True) if not _one_part(values)]
        parts = self._mixed_parts(mixed)
        traced = []
        for values, row in zip(values_list, rows, strict=True):
            own = self._own_part(values, row) if _one_part(values) else parts.get(self._part_key(values), [])
            trace = self.tracer.trace(own, row.sums)
            traced.append(
                dataclasses.replace(
                    row, embodied_sources=trace.embodied_sources, location_sources=trace.location_sources
                )
            )
        return traced

    def _row(self, values: dict[str, Any], labels: dict[str, str]) -> ReportRow:
        group_by = self.spec.group_by
        return report_row(
            ledger_sums_from(values, currency=values["currency"]),
            start=self.spec.start,
            end=self.spec.end,
            granularity=self.spec.granularity,
            bucket=values.get("bucket"),
            group_key=None if group_by is GroupBy.NONE else values[_GROUP_FIELDS[group_by]],
            labels=labels,
        )

    @staticmethod
    def _own_part(values: dict[str, Any], row: ReportRow) -> list[TracePart]:
        totals = row.sums.totals
        known_kwh = totals.facility_kwh - totals.location_unknown_facility_kwh
        return [(values["s_model_lo"], values["s_source_lo"], known_kwh, totals.embodied_co2e_g.central)]

    def _part_key(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        return tuple(values[key] for key in (*self.keys, "currency"))

    def _mixed_parts(self, mixed: list[tuple[dict[str, Any], ReportRow]]) -> dict[tuple[Any, ...], list[TracePart]]:
        """The rows' lines by GPU model and intensity source, per row key: one query over the rows' hours,
        currencies and groups (lines of other rows it may read are not any row's key, and are left)."""
        if not mixed:
            return {}
        lines = self.lines.filter(
            hour_start__gte=min(row.period_start for _, row in mixed),
            hour_start__lt=max(row.period_end for _, row in mixed),
            currency__in={values["currency"] for values, _ in mixed},
        )
        if self.spec.group_by is not GroupBy.NONE:
            field = _GROUP_FIELDS[self.spec.group_by]
            lines = lines.filter(**{f"{field}__in": {values[field] for values, _ in mixed}})
        parts: dict[tuple[Any, ...], list[TracePart]] = {}
        for values in trace_parts(lines, *self.keys, "currency"):
            parts.setdefault(self._part_key(values), []).append(as_part(values))
        return parts

    @functools.cached_property
    def tracer(self) -> RowTracer:
        spec = self.spec  # the mixed nodes' models are read from the lines (a site-hour has no node)
        ids = spec.organization_ids
        lines = ledger_lines(organization_ids=ids, start=spec.start, end=spec.end, filters=spec.filters)
        return RowTracer(organization_ids=ids, lines=lines)

    def labels(self) -> dict[str, str]:
        return group_labels(self.spec.group_by, self.spec.organization_ids)


def report_row(
    sums: LedgerSums,
    *,
    start: datetime,
    end: datetime,
    granularity: Granularity,
    bucket: datetime | None = None,
    group_key: Any = None,
    labels: Mapping[str, str] | None = None,
) -> ReportRow:
    """The report row of ``sums``: its bucket cut to ``[start, end)``, its group key as text and labelled."""
    bucket = bucket or start
    key = None if group_key is None else str(group_key)
    return ReportRow(
        period_start=max(bucket, start),
        period_end=bucket_end(bucket, granularity, end),
        group_key=key,
        group_label=None if key is None else (labels or {}).get(key, key),
        sums=sums,
    )


def _usage_query(spec: UsageSpec) -> _UsageQuery:
    """The report's query: over the lines' site-hours where they serve its group and filters, else the lines."""
    group = [] if spec.group_by is GroupBy.NONE else [_GROUP_FIELDS[spec.group_by]]
    site_hours = site_hours_serve(
        organization_ids=spec.organization_ids, start=spec.start, end=spec.end, keys=group, filters=spec.filters
    )
    lines = ledger_rows(
        organization_ids=spec.organization_ids, start=spec.start, end=spec.end, filters=spec.filters,
        site_hours=site_hours,
    )  # fmt: skip
    keys = []
    bucket = bucket_expression(spec.granularity)
    if bucket is not None:
        lines, keys = lines.annotate(bucket=bucket), ["bucket"]
    return _UsageQuery(spec, lines, [*keys, *group], site_hours)


def report_rows(*, spec: UsageSpec, offset: int = 0, limit: int | None = None) -> list[ReportRow]:
    """Cost, energy, carbon and tokens per bucket x group, ordered by bucket then group key.

    ``offset`` / ``limit`` page through the rows in SQL. Raises ``CurrencyMismatchError``
    when a row would add money in different currencies. Three queries.
    """
    if spec.group_by is GroupBy.LLM_MODEL:
        return _llm_model_rows(spec)[offset : _stop(offset, limit)]
    query = _usage_query(spec)
    _currency_check(query.lines, query.keys)
    labels = query.labels()
    return query.rows_traced(query.rows(offset, limit), labels)


def report_page(*, spec: UsageSpec, offset: int = 0, limit: int | None = None) -> ReportPage:
    """As ``report_rows``, with the number of rows in all pages (counted with the currency check)."""
    if spec.group_by is GroupBy.LLM_MODEL:
        rows = _llm_model_rows(spec)
        return ReportPage(count=len(rows), rows=rows[offset : _stop(offset, limit)])
    query = _usage_query(spec)
    page = list(query.rows(offset, limit))
    if offset == 0 and (limit is None or len(page) < limit):
        count = _whole_checked(query, page)  # the first page holds every row: counted as read
    else:
        count = _rows_counted_and_checked(query.lines, query.keys)
    labels = query.labels()
    return ReportPage(count=count, rows=query.rows_traced(page, labels))


def report_rows_iter(*, spec: UsageSpec) -> Iterator[ReportRow]:
    """Every row of ``report_rows``, streamed from the database in chunks (for CSV of any length).

    The currency check runs now, before the first row, so that a caller can still
    answer with an error (it counts the rows too); past one chunk, the rows are read as they are consumed.
    """
    if spec.group_by is GroupBy.LLM_MODEL:
        return iter(_llm_model_rows(spec))
    query = _usage_query(spec)
    labels = query.labels()
    # No more than a chunk: read by a plain query, which counts and checks them as read. PostgreSQL plans no
    # parallel scan for a cursor (DECLARE ... CURSOR), and the cursor read a quarter's daily report three
    # times slower.
    first = list(query.rows(0, STREAM_CHUNK_ROWS))
    if len(first) < STREAM_CHUNK_ROWS:
        _whole_checked(query, first)
        return iter(query.rows_traced(first, labels))
    # Longer: checked over every row first (one more grouped query), then every row read by one cursor as
    # they are consumed (one snapshot: no row shifts between two reads of a changing ledger).
    _rows_counted_and_checked(query.lines, query.keys)
    values = query.rows(0, None).iterator(chunk_size=STREAM_CHUNK_ROWS)
    return (row for chunk in _chunks(values, STREAM_CHUNK_ROWS) for row in query.rows_traced(chunk, labels))


def report_rows_count(*, spec: UsageSpec) -> int:
    """How many rows ``report_rows`` gives without paging; raises ``CurrencyMismatchError`` as it does."""
    if spec.group_by is GroupBy.LLM_MODEL:
        return len(_llm_model_rows(spec))
    query = _usage_query(spec)
    return _rows_counted_and_checked(query.lines, query.keys)


def _stop(offset: int, limit: int | None) -> int | None:
    return None if limit is None else offset + limit


def _llm_model_rows(spec: UsageSpec) -> list[ReportRow]:
    """Rows per bucket x LLM model: each node-hour's line allocated to its LLM models by output-token share.

    The node-hours without output tokens make a row of their own per bucket (``group_key``
    ``None``), so the rows add up. Only final node-hours are allocated (``complete.final_q``), as in
    the comparison: a line and its usage then agree. Few rows (buckets x models), built whole and paged here.
    """
    organization_ids, start, end, granularity = spec.organization_ids, spec.start, spec.end, spec.granularity
    now = spec.now or timezone.now()
    lines = ledger_lines(organization_ids=organization_ids, start=start, end=end, filters=spec.filters)
    lines = lines.filter(final_q(organization_ids=organization_ids, now=now, node="node_id"))
    bucket = bucket_expression(granularity)
    keys = [] if bucket is None else ["bucket"]
    idle = lines.filter(generation_tokens=0)
    idle = idle if bucket is None else idle.annotate(bucket=bucket)
    usage = EndpointHourUsage.objects.filter(
        node__fleet__organization_id__in=organization_ids, hour_start__gte=start, hour_start__lt=end
    ).filter(final_q(organization_ids=organization_ids, now=now, node="node_id"))
    usage = with_line(usage, where=ledger_lines_where(line=LINE, filters=spec.filters))
    usage = usage if bucket is None else usage.annotate(bucket=bucket)
    # Keyed by the lines' GPU model and intensity source too (a line has one of each), for each row's trace.
    trace = {"t_model": F(f"{LINE}gpu_model"), "t_source": F(f"{LINE}location_source")}
    grouped = usage.values(*keys, k_llm=F("endpoint__model_name"), currency=F(f"{LINE}currency"), **trace)
    found: list[tuple[dict[str, Any], str | None]] = [
        (values, llm_name(values["k_llm"])) for values in allocated_rows(grouped, [*keys, "k_llm", "currency", *trace])
    ]
    idle_sums = idle.values(*keys, "currency", t_model=F("gpu_model"), t_source=F("location_source")).annotate(
        **ledger_sums(), **TRACE_SUMS
    )
    found += [(values, None) for values in idle_sums.order_by()]
    merged: dict[tuple[Any, str | None, str], tuple[LedgerSums, list[TracePart]]] = {}
    for values, model in found:
        key = (values.get("bucket"), model, values["currency"])
        sums = ledger_sums_from(values, currency=values["currency"])
        part = as_part({**values, "gpu_model": values["t_model"], "location_source": values["t_source"]})
        if key in merged:
            sums = ledger_sums_merge(merged[key][0], sums)
        merged[key] = (sums, [*merged[key][1], part] if key in merged else [part])
    tracer = RowTracer(organization_ids=organization_ids, lines=lines)
    rows: dict[tuple[datetime, bool, str], ReportRow] = {}
    for (bucket, model, currency), (sums, parts) in merged.items():
        row = report_row(sums, start=start, end=end, granularity=granularity, bucket=bucket, group_key=model)
        traced = tracer.trace(parts, sums)
        row = dataclasses.replace(
            row,
            group_label=row.group_label if model is not None else NO_OUTPUT_TOKENS_LABEL,
            embodied_sources=traced.embodied_sources,
            location_sources=traced.location_sources,
        )
        place = (row.period_start, model is None, model or "")
        if place in rows:
            raise CurrencyMismatchError(
                f"a report row ({row.period_start:%Y-%m-%d %H:00}, LLM model {model}) holds lines in "
                f"{rows[place].sums.totals.currency} and {currency}; money in different currencies is "
                "never added: filter by currency (currency=...)"
            )
        rows[place] = row
    return [rows[place] for place in sorted(rows)]


def _whole_checked(query: _UsageQuery, rows: list[dict[str, Any]]) -> int:
    """The number of report rows, ``rows`` being every one of them (``_UsageQuery.rows``, keyed and ordered by
    the row's fields, then currency); ``CurrencyMismatchError`` as ``_rows_counted_and_checked`` raises it where
    two of them share their fields (one report row's lines in two currencies). No query unless one does."""
    keys = [tuple(values[key] for key in query.keys) for values in rows]
    if any(key == after for key, after in itertools.pairwise(keys)):
        _currency_check(query.lines, query.keys)  # names the first mixed row
    return len(rows)


def _rows_counted_and_checked(lines: QuerySet[NodeHourLedger], keys: list[str]) -> int:
    """The number of report rows, and whether one mixes currencies, in one query over the grouped lines."""
    if not keys:
        _currency_check(lines, keys)
        return 1 if lines.exists() else 0
    per_row = _currency_range(lines, keys).order_by()
    counted = per_row.aggregate(s_rows=Count("s_lo"), s_mixed=Count("s_lo", filter=MIXED))
    if counted["s_mixed"]:
        _currency_check(lines, keys)  # names the first mixed row
    return int(counted["s_rows"])


# A row mixes currencies when its lines' smallest and largest currency codes differ: the same
# test as counting distinct codes, without the sort a COUNT(DISTINCT) needs per group.
MIXED = Q(s_lo__lt=F("s_hi"))


def _currency_range(lines: QuerySet[NodeHourLedger], keys: list[str]) -> QuerySet[Any]:
    return lines.values(*keys).annotate(s_lo=Min("currency"), s_hi=Max("currency"))


def _currency_check(lines: QuerySet[NodeHourLedger], keys: list[str]) -> None:
    """Raise ``CurrencyMismatchError`` naming the first row whose lines are in more than one currency."""
    where: dict[str, Any] = {}
    if keys:
        mixed = _currency_range(lines, keys).filter(MIXED).order_by(*keys).first()
        if mixed is None:
            return
        where = {key: mixed[key] for key in keys}
    currencies = sorted(lines.filter(**where).order_by().values_list("currency", flat=True).distinct())
    if len(currencies) > 1:
        row = ", ".join(f"{key}={value}" for key, value in where.items()) or "the whole period"
        raise CurrencyMismatchError(
            f"a report row ({row}) holds lines in {' and '.join(currencies)}; money in different currencies "
            "is never added: filter by currency (currency=...) or group by site or currency"
        )


def group_labels(group_by: GroupBy, organization_ids: Collection[int]) -> dict[str, str]:
    """Display names of every possible group key of the organizations (one small query)."""
    pairs: Any
    if group_by is GroupBy.ORGANIZATION:
        pairs = Organization.objects.filter(id__in=organization_ids).values_list("id", "name")
    elif group_by is GroupBy.FLEET:
        pairs = Fleet.objects.filter(organization_id__in=organization_ids).values_list("id", "name")
    elif group_by is GroupBy.SITE:
        pairs = Site.objects.filter(organization_id__in=organization_ids).values_list("id", "name")
    elif group_by is GroupBy.NODE:
        pairs = Node.objects.filter(fleet__organization_id__in=organization_ids).values_list("id", "hostname")
    elif group_by is GroupBy.GPU_MODEL:
        pairs = [(key, name) for key, (name, _) in gpu_model_profiles(organization_ids=organization_ids).items()]
    else:
        pairs = []
    return {str(key): label for key, label in pairs}
