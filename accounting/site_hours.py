"""The ledger's site-hours: node-hour lines summed per site, hour and report key, written with the lines.

Reports over an organization's period read the same lines in several grouped scans (the sustainability
report's parts, its zone-hours, the Scope 2 report's site-hours, the usage report's buckets), each a hash
aggregate of ``numeric`` sums over every line: 136k lines for 90 days x 500 GPUs. A site-hour's lines
differ in little that reports group by (their nodes share a site, and most their fleet, GPU model,
price and intensity source), so ``LedgerSiteHour`` holds them summed per site-hour and report key: one row
per a few nodes, the same sums.

Exact and never stale: ``site_hours_recompute`` rebuilds a site-hour's rows (and its served rows,
``accounting.served_hours``) from its lines, in the
transaction that stores them (``accounting.node_hour_lines._lines_store``), under a lock per site so that
two workers storing lines of one site-hour cannot each miss the other's. ``numeric`` sums of sums are the
sums (PostgreSQL adds ``numeric`` exactly), so a report read from these rows equals the same report read
from the lines (``reports.selectors.lines.ledger_rows`` chooses). The float sums (energy by method,
utilization seconds) are added in another order, as PostgreSQL's parallel plans already add them.

Lines written by any other way (SQL of a bench seed, a test's fixture) are summed again with
``site_hours_rebuild`` (``manage.py ledger_site_hours``, which also checks them against the lines), which sums the
node-days again too (``accounting.node_days``: the ledger writes them beside the lines).

On a Citus coordinator a site-hour's lines lie on the shards of several nodes, and summing them in a node's
ledger transaction would make it a multi-shard (two-phase) one. There the node's transaction marks the
site-hours its lines changed instead (``site_hours_changed``: a ``LedgerSiteHourPending`` row on the node's
shard, committed with the lines), and ``site_hours_settle`` sums them once it has committed (in its own
transaction per site, under the same lock, the marks deleted in it), and again at the end of every ledger run
for any left (a worker stopped between the two). Until then reports read a marked site-hour's lines instead of
its rows (``site_hours_pending``; ``reports.selectors.lines.site_hours_serve``), so they give the same figures
at every moment. The rows are citus local tables on the coordinator (docs/scaling.md, "Citus"). The node-days
and serving days, which are per node, are written in the node's transaction on both.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from datetime import datetime
from typing import Any

from django.db import DatabaseError, connection, connections, transaction
from django.db.models import (
    BooleanField,
    Case,
    Count,
    ExpressionWrapper,
    F,
    Max,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.utils import timezone

from accounting.ledger import ElectricityStatus
from accounting.ledger.line import NO_PRICE_ID
from accounting.models import LedgerServedHour, LedgerSiteHour, LedgerSiteHourPending, NodeHourLedger
from accounting.node_days import node_days_check, node_days_rebuild
from accounting.served_hours import served_rows_check, served_rows_delete, served_rows_store, sum_same
from common.citus import citus_coordinator

__all__ = [
    "KEYS",
    "MAXED",
    "SHARE_KEYS",
    "SUMMED",
    "served_hours_fill",
    "site_hours_any_pending",
    "site_hours_changed",
    "site_hours_check",
    "site_hours_fill",
    "site_hours_in_use",
    "site_hours_pending",
    "site_hours_rebuild",
    "site_hours_recompute",
    "site_hours_settle",
    "unpriced_with_telemetry",
]

# What a row is keyed by: the lines' own values (``pricing_price_id`` only as priced or not).
KEYS = (
    "organization_id",
    "site_id",
    "fleet_id",
    "hour_start",
    "gpu_model",
    "currency",
    "electricity_status",
    "energy_method",
    "vat_unknown",
    "location_source",
    "location_is_fallback",
    "location_basis",
    "market_source",
    "amortization",
)
# Keyed by, beside ``KEYS``: whose LLM model a line is whole (its sole endpoint's model name, ``None``: no sole
# endpoint), and whether it served no output token (the comparison per LLM model's idle rows), as the lines
# give them (``_grouped``); a site-hour's rows then split a node-hour only as its lines are split.
SHARE_KEYS = ("sole_llm_model", "no_output")
_SHARES = {
    "sole_llm_model": F("sole_endpoint__model_name"),
    "no_output": ExpressionWrapper(Q(generation_tokens=0), output_field=BooleanField()),
}
# The largest of the lines' (the grid intensity of a zone-hour: its lines share it).
MAXED = ("location_gco2e_per_kwh", "location_direct_gco2e_per_kwh")
# Counted, and the intensity's sum and count (for a mean), beside the sums.
_COUNTS = ("lines", "unpriced_hours", "location_gco2e_per_kwh_sum", "location_gco2e_per_kwh_n")
# Summed (``numeric``, integer or float, as the line's column): every other column of a row.
SUMMED = tuple(
    field.attname
    for field in LedgerSiteHour._meta.concrete_fields
    if field.attname not in {"id", *KEYS, *SHARE_KEYS, "pricing_price_id", *MAXED, *_COUNTS}
)
# Sums that may be null: a row's lines all have the value or all lack it.
_NULLABLE = tuple(name for name in SUMMED if NodeHourLedger._meta.get_field(name).null)

_FIGURES = (*_COUNTS, *SUMMED, *MAXED)
_ROW_KEYS = (*KEYS, *SHARE_KEYS)

logger = logging.getLogger(__name__)

# Two workers storing lines of one site recompute its site-hours one after the other (a transaction lock).
_LOCK_NAMESPACE = 0x57A7  # pg_advisory_xact_lock(namespace, site id)


def unpriced_with_telemetry(line: str = "") -> Q:
    """A node-hour with telemetry and no price, asset or tariff in force: unpriced, never free.

    ``line``: the path to the ledger line's columns (``""`` on the lines themselves).
    """
    unpriced = Q(**{f"{line}pricing_price_id": NO_PRICE_ID}) | Q(
        **{f"{line}electricity_status": ElectricityStatus.UNPRICED}
    )
    telemetry = Q()
    for column in ("observed_s", "it_kwh", "prompt_tokens", "generation_tokens"):
        telemetry |= Q(**{f"{line}{column}__gt": 0})
    return unpriced & telemetry


def site_hours_in_use(using: Any = connection) -> bool:
    """Whether this database keeps (and reports read) the site-hours: on every backend (a Citus coordinator
    settles them after the node's transaction, ``site_hours_changed``). Tests and ``bench.ledger`` turn it off to
    check or time the lines' own path."""
    return True


def site_hours_changed(*, node_id: int, site_hours: Iterable[tuple[int, int, datetime]]) -> int:
    """The node's lines of these ``(organization id, site id, hour start)`` changed in the caller's transaction
    (it opens one when called outside): their site-hours are summed again from the lines.

    On one server now, in the transaction (``site_hours_recompute``; returns the rows written). On a Citus
    coordinator each is marked on the node's shard, so that the transaction stays on that shard, and settled once
    it commits (``site_hours_settle``; returns 0): a mark made again takes the row's lock until the node's
    transaction ends, so a settle that deleted it reads the lines it marks."""
    if not site_hours_in_use():
        return 0
    triples = set(site_hours)
    if not citus_coordinator():
        return site_hours_recompute((site_id, hour) for _, site_id, hour in triples)
    if not triples:
        return 0
    now = timezone.now()
    marks = [
        LedgerSiteHourPending(node_id=node_id, organization_id=org, site_id=site, hour_start=hour, marked_at=now)
        for org, site, hour in sorted(triples)
    ]
    LedgerSiteHourPending.objects.bulk_create(
        marks, update_conflicts=True, unique_fields=["node", "site", "hour_start"], update_fields=["marked_at"]
    )
    pairs = sorted({(site, hour) for _, site, hour in triples})
    _after_commit(lambda: site_hours_settle(pairs))
    return 0


def _after_commit(settle: Callable[[], object]) -> None:
    """Run ``settle`` once the caller's transaction has committed (an error in it is logged, never raised into
    the caller: the marks stay for the ledger run's own settle)."""
    transaction.on_commit(settle, robust=True)


def site_hours_settle(site_hours: Iterable[tuple[int, datetime]] | None = None) -> int:
    """Sum again the marked site-hours (``site_hours_changed``): of ``site_hours`` (``(site id, hour start)``), or
    all; return how many were marked. Per site a transaction: the site's lock, its marks of those hours deleted,
    its rows summed from the lines as they then stand. A site whose rows fail to sum keeps its marks (its reports
    read its lines) and is logged; the other sites are settled."""
    marks = LedgerSiteHourPending.objects.all()
    wanted = set(marks.values_list("site_id", "hour_start").distinct()) if site_hours is None else set(site_hours)
    by_site: dict[int, set[datetime]] = defaultdict(set)
    for site_id, hour in wanted:
        by_site[site_id].add(hour)
    settled = 0
    for site_id in sorted(by_site):
        hours = sorted(by_site[site_id])
        try:
            with transaction.atomic():
                _site_lock(site_id)
                marked = set(marks.filter(site_id=site_id, hour_start__in=hours).values_list("hour_start", flat=True))
                if not marked:
                    continue
                marks.filter(site_id=site_id, hour_start__in=sorted(marked)).delete()
                site_hours_recompute((site_id, hour) for hour in marked)
                settled += len(marked)
        except DatabaseError:
            logger.exception("site %s: its site-hours stay marked (reports read their lines)", site_id)
    return settled


def site_hours_pending(
    *, organization_ids: Collection[int] | None, start: datetime | None = None, end: datetime | None = None
) -> set[tuple[int, datetime]]:
    """The organizations' (all: ``None``) marked site-hours (``site_hours_changed``) in ``[start, end)``, whose
    rows are not summed yet: ``(site id, hour start)``. None on one server (nothing is marked there: no query)."""
    if not citus_coordinator():
        return set()
    marks = _marks_in(organization_ids, start, end)
    return set(marks.order_by().values_list("site_id", "hour_start").distinct())


def site_hours_any_pending(*, organization_ids: Collection[int], start: datetime, end: datetime) -> bool:
    """Whether any of ``site_hours_pending`` is there: one ``EXISTS``, none on one server."""
    return citus_coordinator() and _marks_in(organization_ids, start, end).exists()


def _marks_in(
    organization_ids: Collection[int] | None, start: datetime | None, end: datetime | None
) -> QuerySet[LedgerSiteHourPending]:
    """The marks of ``organization_ids`` (of all: ``None``) in ``[start, end)`` (either end open: ``None``)."""
    marks = _marks_of(organization_ids)
    if start is not None:
        marks = marks.filter(hour_start__gte=start)
    if end is not None:
        marks = marks.filter(hour_start__lt=end)
    return marks


def site_hours_recompute(site_hours: Iterable[tuple[int, datetime]]) -> int:
    """Rebuild the rows of each ``(site id, hour start)`` from its lines; return how many rows were written.

    Call it in the transaction that changed the lines (it opens one when called outside): the rows commit
    with them. Sites are locked in id order, so two callers never wait on each other in a circle."""
    if not site_hours_in_use():
        return 0
    by_site: dict[int, set[datetime]] = defaultdict(set)
    for site_id, hour in site_hours:
        by_site[site_id].add(hour)
    written = 0
    with transaction.atomic():
        for site_id in sorted(by_site):
            _site_lock(site_id)
            hours = sorted(by_site[site_id])
            LedgerSiteHour.objects.filter(site_id=site_id, hour_start__in=hours).delete()
            lines = NodeHourLedger.objects.filter(site_id=site_id, hour_start__in=hours)
            written += _rows_store(lines)
            served_rows_delete(site_id=site_id, hours=hours)
            served_rows_store(lines)
    return written


def site_hours_rebuild(*, organization_ids: Collection[int] | None = None) -> int:
    """Rebuild every row (of ``organization_ids``, or of all) from the lines; return how many were written. The
    node-days and serving days too. Any marks of them (``site_hours_changed``) go: the rows are summed anew."""
    rows, lines = _of(organization_ids)
    with transaction.atomic():
        site_ids = sorted(set(lines.values_list("site_id", flat=True).distinct()) | set(
            rows.values_list("site_id", flat=True).distinct()
        ))  # fmt: skip
        for site_id in site_ids:
            _site_lock(site_id)
        rows.delete()
        _marks_of(organization_ids).delete()
        written = _rows_store(lines)
        _served_of(organization_ids).delete()
        _served_store_by_site(lines, site_ids)
        node_days_rebuild(organization_ids=organization_ids)
        return written


def site_hours_check(*, organization_ids: Collection[int] | None = None) -> list[str]:
    """How the rows differ from the lines, per site-hour (nothing: they agree), then the node-days' and serving
    days'. Reads both. A marked site-hour (``site_hours_changed``), whose rows are not summed yet and which
    reports read from its lines meanwhile, is not compared."""
    rows, lines = _of(organization_ids)
    marked = Q(pk__in=[])
    for site_id, hour in set(_marks_of(organization_ids).values_list("site_id", "hour_start")):
        marked |= Q(site_id=site_id, hour_start=hour)
    rows, lines = rows.exclude(marked), lines.exclude(marked)
    stored: dict[tuple[Any, ...], dict[str, Any]] = {}
    problems = []
    for row in rows.values(*_ROW_KEYS, "pricing_price_id", *_FIGURES):
        key = _key(row, row["pricing_price_id"])
        if key in stored:
            problems.append(f"two rows for {dict(zip(_ROW_KEYS, key, strict=False))}")
        stored[key] = row
    expected = {}
    for grouped in _grouped(lines):
        row = {**{name: grouped[name] for name in _ROW_KEYS}, **{name: grouped[f"s_{name}"] for name in _FIGURES}}
        expected[_key(row, grouped["k_pricing"])] = row
    for key in sorted(stored.keys() | expected.keys(), key=repr):
        have, want = stored.get(key), expected.get(key)
        named = dict(zip(_ROW_KEYS, key, strict=False))
        if have is None or want is None:
            problems.append(f"{'missing' if have is None else 'extra'} row {named}")
            continue
        for name in _FIGURES:
            if not sum_same(have[name], want[name]):
                problems.append(f"{name} {have[name]} != lines' {want[name]} in {named}")
    problems += served_rows_check(_served_of(organization_ids).exclude(marked), lines)
    return problems + node_days_check(organization_ids=organization_ids)


def _of(organization_ids: Collection[int] | None) -> tuple[QuerySet[LedgerSiteHour], QuerySet[NodeHourLedger]]:
    """The site-hours and the lines of ``organization_ids`` (of all: ``None``)."""
    rows, lines = LedgerSiteHour.objects.all(), NodeHourLedger.objects.all()
    if organization_ids is None:
        return rows, lines
    return rows.filter(organization_id__in=organization_ids), lines.filter(organization_id__in=organization_ids)


def _marks_of(organization_ids: Collection[int] | None) -> QuerySet[LedgerSiteHourPending]:
    """The marked site-hours (``site_hours_changed``) of ``organization_ids`` (of all: ``None``)."""
    marks = LedgerSiteHourPending.objects.all()
    return marks if organization_ids is None else marks.filter(organization_id__in=organization_ids)


def _served_of(organization_ids: Collection[int] | None) -> QuerySet[LedgerServedHour]:
    """The served site-hours (``accounting.served_hours``) of ``organization_ids`` (of all: ``None``)."""
    rows = LedgerServedHour.objects.all()
    return rows if organization_ids is None else rows.filter(organization_id__in=organization_ids)


def _key(row: dict[str, Any], pricing: str) -> tuple[Any, ...]:
    """A row's identity: its keys, priced or not, and which of its sums are null."""
    return (*(row[name] for name in _ROW_KEYS), pricing, *(row[name] is None for name in _NULLABLE))


def _site_lock(site_id: int) -> None:
    """Hold the site's transaction lock (PostgreSQL; SQLite lets one writer at a time write)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, site_id])


def _grouped(
    lines: QuerySet[NodeHourLedger], summed: Collection[str] = SUMMED, shares: Collection[str] = SHARE_KEYS
) -> QuerySet[Any]:
    """The lines summed per site-hour row: keys, then counts, sums and maxima as ``s_<row's column>``.

    ``summed``: the columns summed, ``shares``: the ``SHARE_KEYS`` keyed by (a migration's historical rows have
    the columns of their day)."""
    nulls = {f"k_{name}_null": ExpressionWrapper(Q(**{f"{name}__isnull": True}), BooleanField()) for name in _NULLABLE}
    unpriced = Case(When(pricing_price_id=NO_PRICE_ID, then=Value(NO_PRICE_ID)), default=Value(""))
    keyed = {name: _SHARES[name] for name in shares}
    return (
        lines.values(*KEYS, **keyed, k_pricing=unpriced, **nulls)
        .annotate(
            s_lines=Count("id"),
            s_unpriced_hours=Count("id", filter=unpriced_with_telemetry()),
            **{f"s_{name}": Sum(name) for name in summed},
            **{f"s_{name}": Max(name) for name in MAXED},
            s_location_gco2e_per_kwh_sum=Sum("location_gco2e_per_kwh"),
            s_location_gco2e_per_kwh_n=Count("location_gco2e_per_kwh"),
        )
        .order_by()
    )


def site_hours_fill(line_model: Any, row_model: Any, using: Any = connection) -> int:
    """Sum every line of ``line_model`` into ``row_model`` (empty): the migration that adds the rows runs it
    on its own (historical) models."""
    return _rows_store(line_model.objects.all(), row_model)


def served_hours_fill(line_model: Any, usage_model: Any, row_model: Any, using: Any = connection) -> int:
    """Sum every line of ``line_model`` into ``row_model``'s served site-hours (empty; ``accounting.served_hours``):
    the migration that adds them runs it on its own models."""
    lines = line_model.objects.all()
    site_ids = sorted(set(lines.values_list("site_id", flat=True).distinct()))
    return _served_store_by_site(lines, site_ids, usage_model=usage_model, row_model=row_model)


def _served_store_by_site(lines: QuerySet[Any], site_ids: Iterable[int], **models: Any) -> int:
    """Store the served site-hours of ``lines``, site by site (one site's lines in memory at a time)."""
    return sum(served_rows_store(lines.filter(site_id=site_id), **models) for site_id in site_ids)


def _rows_store(lines: QuerySet[Any], row_model: Any = LedgerSiteHour) -> int:
    """Insert ``lines`` summed into their rows: one ``INSERT ... SELECT`` of the ORM's grouped query, so that no
    row passes through Python (a ledger store's few rows, or a whole table's at a migration)."""
    held = {field.attname for field in row_model._meta.concrete_fields}
    summed = [name for name in SUMMED if name in held]
    figures = [name for name in _FIGURES if name in held]
    shares = [name for name in SHARE_KEYS if name in held]
    grouped = _grouped(lines, summed, shares)
    select, params = grouped.query.sql_with_params()
    columns = [*KEYS, *shares, "pricing_price_id", *figures]
    sources = [*KEYS, *shares, "k_pricing", *(f"s_{name}" for name in figures)]
    quote = connections[grouped.db].ops.quote_name
    # The rows' columns are named as the lines' (a foreign key's column: its ``_id`` name, as in ``KEYS``).
    sql = (
        f"INSERT INTO {quote(row_model._meta.db_table)} ({', '.join(quote(name) for name in columns)}) "  # noqa: S608
        f"SELECT {', '.join('g.' + quote(name) for name in sources)} FROM ({select}) g"
    )
    with connections[grouped.db].cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)
