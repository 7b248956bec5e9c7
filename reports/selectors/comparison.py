"""Fleet comparison: per fleet (or fleet x GPU model) figures and their ratios to a baseline fleet."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import (
    BigIntegerField,
    BooleanField,
    Count,
    ExpressionWrapper,
    F,
    Q,
    QuerySet,
    Sum,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from accounting.ledger import CurrencyMismatchError
from accounting.models import LedgerServingDay
from accounting.models.ledger import DEFAULT_GOODPUT_TTFT_TARGET_MS
from fleets.models import Fleet, Node
from reports.aggregates import ledger_sums, ledger_sums_from
from reports.latency import TimeSum
from reports.metrics import (
    BaselineBasis,
    ComparisonRow,
    ComparisonStats,
    LedgerAllocation,
    LedgerSums,
    ServingSums,
    UtilizationSums,
    ledger_sums_counts,
    ledger_sums_merge,
    ledger_sums_share,
)
from reports.selectors.allocation import LINE, allocated_rows, llm_name, same_node_hour, with_line
from reports.selectors.complete import final_ledger_rows
from reports.selectors.lines import MIXED_MODEL, ReportFilters, gpu_model_profiles
from reports.selectors.serving_days import serving_split
from reports.selectors.trace import TRACE_SUMS, RowTracer, TracePart, as_part
from reports.sharing import IdleTreatment, idle_shares, whole_parts
from telemetry.histogram import Histogram, histogram_merge
from telemetry.models import EndpointHourUsage, ServingEndpoint

# fleet id, GPU model key (None per fleet), LLM model (None: not split by LLM model, or the
# hours that served no output token)
_Key = tuple[int, str | None, str | None]
MS_PER_S = 1000.0


def fleet_comparison(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    baseline_fleet_id: int | None = None,
    by_model: bool = False,
    by_llm_model: bool = False,
    fleet_ids: Collection[int] = (),
    idle: IdleTreatment = IdleTreatment.APART,
    now: datetime | None = None,
) -> list[ComparisonRow]:
    """Each fleet's (fleet x GPU model's, or fleet x GPU model x LLM model's) figures over the period.

    Only final node-hours are read (``complete.final_q`` at ``now``, the clock unless given): the
    hour in progress and hours whose usage or line is still to be (re)computed wait until they are,
    so that a line and its usage always agree, the rows add up and a figure changes only with its
    data or inputs. Ordered by fleet name, GPU model, then LLM model (a GPU model's hours without
    output tokens last). Per LLM model (``by_llm_model``, which implies ``by_model``), each
    node-hour's ledger figures are allocated to the LLM models served on the node in that hour in
    proportion to their output tokens (``reports.sharing``); node-hours without output tokens stay
    with the fleet x GPU model as a row of their own (``idle`` apart), or are shared across its LLM
    models by their output tokens over the period (``idle`` shared), so the rows add up to the fleet.

    Ratios (``ComparisonRow.baseline_basis``): per fleet and per GPU model, to the baseline fleet as a
    whole; per LLM model, to the baseline fleet's rows of the same LLM model, ``None`` where it has
    none. Raises ``CurrencyMismatchError`` for a row whose lines are in two currencies. Fleets
    without any data are left out.
    """
    scope: dict[str, Any] = {"organization_ids": organization_ids, "start": start, "end": end}
    scope["now"] = now or timezone.now()
    grouping: dict[str, Any] = {"by_model": by_model or by_llm_model, "by_llm_model": by_llm_model, "idle": idle}
    stats, tracer = _comparison_stats(**scope, **grouping, fleet_ids=fleet_ids)
    ordered = sorted(stats, key=_order)
    if baseline_fleet_id is None:
        return [ComparisonRow(stats=row, baseline=None) for row in ordered]
    parts = [row for row in stats if row.fleet_id == baseline_fleet_id]
    if not parts and fleet_ids and baseline_fleet_id not in fleet_ids:  # filtered out: read it on its own
        parts, tracer = _comparison_stats(**scope, **grouping, fleet_ids=[baseline_fleet_id])
    if not by_llm_model:
        whole = _stats_merge(parts, tracer) if parts else None
        return [ComparisonRow(stats=row, baseline=whole, baseline_basis=BaselineBasis.FLEET) for row in ordered]
    return _like_for_like(ordered, parts, tracer)


def _like_for_like(
    ordered: list[ComparisonStats], parts: list[ComparisonStats], tracer: RowTracer
) -> list[ComparisonRow]:
    """Per LLM model, each row beside the baseline fleet's rows of the same LLM model, added up (any GPU model)."""
    per_llm: dict[str | None, list[ComparisonStats]] = defaultdict(list)
    for part in parts:
        per_llm[part.llm_model].append(part)
    baselines = {llm: _stats_merge(rows, tracer) for llm, rows in per_llm.items()}
    return [
        ComparisonRow(stats=row, baseline=baselines[row.llm_model], baseline_basis=BaselineBasis.SAME_LLM_MODEL)
        if row.llm_model in baselines
        else ComparisonRow(stats=row, baseline=None, baseline_basis=BaselineBasis.NO_BASELINE_ROW)
        for row in ordered
    ]


def _order(stats: ComparisonStats) -> tuple[Any, ...]:
    return (stats.fleet_name, stats.fleet_id, stats.gpu_model or "", stats.llm_model is None, stats.llm_model or "")


def _comparison_stats(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    now: datetime,
    by_model: bool,
    by_llm_model: bool,
    idle: IdleTreatment,
    fleet_ids: Collection[int],
) -> tuple[list[ComparisonStats], RowTracer]:
    """The rows of the final node-hours, each traced, and what traced them (to trace a merge of them alike)."""
    filters = ReportFilters(fleet_ids=frozenset(fleet_ids))
    final = final_ledger_rows(
        organization_ids=organization_ids, start=start, end=end, now=now, keys=_LEDGER_KEYS, filters=filters
    )
    lines = final.lines
    # The organizations' (and fleets') nodes as a list in SQL, so that the endpoint-hours are read without a join.
    nodes = Node.objects.filter(fleet__organization_id__in=organization_ids)
    nodes = nodes.filter(fleet_id__in=fleet_ids) if fleet_ids else nodes
    endpoint_hours = EndpointHourUsage.objects.filter(
        node_id__in=nodes.values("pk"), hour_start__gte=start, hour_start__lt=end
    ).filter(final.condition)
    layouts = _endpoint_layouts(organization_ids)
    ledger = (
        _llm_ledger(final.row_sets, endpoint_hours, layouts[1]) if by_llm_model else _comparison_ledger(final.row_sets)
    )
    if by_llm_model and idle is IdleTreatment.SHARED:
        ledger = _idle_shared(ledger)
    # The whole final node-days from the ledger's serving days, the other final hours hour by hour.
    split = serving_split(start=start, end=end, final=final)
    keyed, keys = _keyed_usage(endpoint_hours.filter(split.hours()), "node", by_model, lines_where=split.hours)
    in_days = split.days()
    days = None if in_days is None else LedgerServingDay.objects.filter(in_days, node_id__in=nodes.values("pk"))

    def rows(widths: tuple[int, int]) -> list[dict[str, Any]]:
        hourly = _serving_rows(keyed, keys, widths)
        return hourly if days is None else hourly + _serving_day_rows(days, by_model, widths)

    serving = _serving(rows, layouts, by_llm_model=by_llm_model)
    tracer = RowTracer(organization_ids=organization_ids, lines=lines)
    return _stats_assemble(organization_ids, by_model, by_llm_model, ledger, serving, tracer), tracer


@dataclass(frozen=True)
class _LedgerPart:
    """A key's ledger sums, its GPU model, the GPU utilization of its lines (stored on each line, so that a quarter
    of a large fleet reads its node-hours, not its millions of GPU-hours), and its lines by GPU model and
    intensity source (``trace.TracePart``; per LLM model, each line's share of them), summed in the same query."""

    sums: LedgerSums
    gpu_model: str | None
    utilization: UtilizationSums
    trace: tuple[TracePart, ...] = ()


# What a key's lines sum to beside ``ledger_sums``: their utilization and their trace parts.
_LINE_SUMS = {"s_util_pct_s": Sum("util_pct_s"), "s_util_observed_s": Sum("util_observed_s"), **TRACE_SUMS}


# What the comparison's ledger rows are grouped by (with the intensity source, as ``t_source``).
_LEDGER_KEYS = ("fleet_id", "gpu_model", "currency", "location_source")


def _comparison_ledger(row_sets: Iterable[tuple[QuerySet[Any], bool]]) -> dict[_Key, _LedgerPart]:
    """Ledger sums and trace parts per fleet and model, one query per set of rows (``complete.final_ledger_rows``:
    the final site-hours, and the final lines of the others) grouped by intensity source too (a line has one) and
    added up here; per fleet, the model is its only one or "mixed"."""
    keyed: list[tuple[_Key, dict[str, Any]]] = []
    for rows, site_hours in row_sets:
        grouped = (
            rows.values("fleet_id", "gpu_model", "currency", t_source=F("location_source"))
            .annotate(**ledger_sums(site_hours=site_hours), **_LINE_SUMS)
            .order_by()
        )
        keyed += [((v["fleet_id"], v["gpu_model"], None), dict(v)) for v in grouped]
    return _merged_by_key(keyed)


def _llm_ledger(
    row_sets: Iterable[tuple[QuerySet[Any], bool]], endpoint_hours: QuerySet[Any], endpoints: dict[int, _Endpoint]
) -> dict[_Key, _LedgerPart]:
    """Ledger sums per fleet x GPU model x LLM model, allocated by output-token share, and the idle rest,
    with each row's trace parts (its lines' facility kWh and embodied carbon per intensity source, allocated alike).

    Each endpoint-hour takes its output tokens' share of its node-hour's line (the line's output tokens are its
    endpoints'); lines without output tokens are summed whole under the fleet x GPU model with no LLM model. A
    line one endpoint holds all of (``NodeHourLedger.sole_endpoint``: the node-hour's only endpoint-hour, with
    output tokens; most node-hours) is its endpoint's LLM model's as it is: those and the idle lines are summed
    from the final rows alone (``complete.final_ledger_rows``: the site-hours, keyed by the sole endpoint's LLM
    model and whether their lines served no output token, and the lines of the others), and only the node-hours
    several endpoint-hours share are joined to their endpoint-hours and weighed (skipped where there are none).
    All are grouped by the lines' intensity source too (a line has one) and added up here.
    """
    keyed: list[tuple[_Key, dict[str, Any]]] = []
    shared = False
    for rows, site_hours in row_sets:
        summed, some_shared = _llm_site_hours(rows) if site_hours else _llm_lines(rows, endpoints)
        keyed += summed
        shared |= some_shared
    if shared:
        joined = with_line(endpoint_hours, where=Q(**{f"{LINE}sole_endpoint__isnull": True})).values(
            k_fleet=F(f"{LINE}fleet_id"),
            k_model=F(f"{LINE}gpu_model"),
            k_llm=F("endpoint__model_name"),
            currency=F(f"{LINE}currency"),
            t_source=F(f"{LINE}location_source"),
        )
        allocated = allocated_rows(joined, ["k_fleet", "k_model", "k_llm", "currency", "t_source"], utilization=True)
        keyed += [((v["k_fleet"], v["k_model"], llm_name(v["k_llm"])), v) for v in allocated]
    return _merged_by_key(keyed)


def _llm_site_hours(rows: QuerySet[Any]) -> tuple[list[tuple[_Key, Any]], bool]:
    """``_llm_ledger``'s whole and idle rows of site-hours (one query), and whether any of them holds shared lines
    (their figures are weighed from the lines)."""
    grouped = (
        rows.values("fleet_id", "gpu_model", "currency", "sole_llm_model", "no_output", t_source=F("location_source"))
        .annotate(**ledger_sums(site_hours=True), **_LINE_SUMS)
        .order_by()
    )
    keyed: list[tuple[_Key, Any]] = []
    shared = False
    for v in grouped:
        if v["sole_llm_model"] is not None:
            keyed.append(((v["fleet_id"], v["gpu_model"], llm_name(v["sole_llm_model"])), dict(v)))
        elif v["no_output"]:
            keyed.append(((v["fleet_id"], v["gpu_model"], None), dict(v)))
        else:
            shared = True
    return keyed, shared


def _llm_lines(lines: QuerySet[Any], endpoints: dict[int, _Endpoint]) -> tuple[list[tuple[_Key, Any]], bool]:
    """``_llm_ledger``'s whole and idle rows of lines (two queries), and whether any line is shared."""
    # Grouped by the endpoint's key, not its LLM model: with a column's statistics the planner expects a few
    # hundred groups and sums them in parallel, where a joined name or an expression made it sort every line.
    whole = (
        lines.filter(sole_endpoint__isnull=False)
        .values("fleet_id", "gpu_model", "currency", "sole_endpoint_id", t_source=F("location_source"))
        .annotate(**ledger_sums(), **_LINE_SUMS)
        .order_by()
    )
    rest = (
        lines.filter(sole_endpoint__isnull=True)
        .values("fleet_id", "gpu_model", "currency", t_source=F("location_source"), k_idle=_IDLE_LINE)
        .annotate(**ledger_sums(), **_LINE_SUMS)
        .order_by()
    )
    # Each sole endpoint named from the organizations' endpoints (``_endpoint_layouts``, read once for the serving
    # sums too); an endpoint deleted between the two reads has left its lines: its name is unknown, "unnamed".
    keyed: list[tuple[_Key, Any]] = [
        ((v["fleet_id"], v["gpu_model"], llm_name(_model_name(endpoints.get(v["sole_endpoint_id"])))), dict(v))
        for v in whole
    ]
    shared = False
    for v in rest:
        if not v["k_idle"]:
            shared = True
            continue
        keyed.append(((v["fleet_id"], v["gpu_model"], None), dict(v)))
    return keyed, shared


def _model_name(endpoint: _Endpoint | None) -> str | None:
    return endpoint.model_name if endpoint else None


# A line without output tokens: no LLM model's (the idle row).
_IDLE_LINE = ExpressionWrapper(Q(generation_tokens=0), output_field=BooleanField())


def _idle_shared(ledger: dict[_Key, _LedgerPart]) -> dict[_Key, _LedgerPart]:
    """Each fleet x GPU model's idle row shared across its LLM models' rows (``sharing.idle_shares``); an idle
    row none of whose models served an output token over the period stays apart."""
    shared = dict(ledger)
    for key, idle in ledger.items():
        if key[2] is not None:
            continue
        models = {k: part.sums.totals.generation_tokens for k, part in ledger.items() if k[:2] == key[:2] and k[2]}
        shares = idle_shares(models)
        if shares is None:
            continue
        counts = {name: whole_parts(count, shares) for name, count in ledger_sums_counts(idle.sums).items()}
        del shared[key]
        for model_key, share in shares.items():
            part = _LedgerPart(
                sums=ledger_sums_share(idle.sums, share, {name: split[model_key] for name, split in counts.items()}),
                gpu_model=idle.gpu_model,
                utilization=idle.utilization.share(share),
                trace=tuple((m, source, kwh * share, g * share) for m, source, kwh, g in idle.trace),
            )
            shared[model_key] = _part_merge(shared[model_key], part)
    return shared


def _merged_by_key(keyed: list[tuple[_Key, dict[str, Any]]]) -> dict[_Key, _LedgerPart]:
    """Rows per key x currency x intensity source added up per key x currency; a key in two currencies is refused
    (money is never added across currencies; the fleet-level roll-up merges model rows with
    ``LedgerTotals.merge``, which refuses mixed currencies itself)."""
    merged: dict[tuple[_Key, str], _LedgerPart] = {}
    for key, values in keyed:
        utilization = UtilizationSums(float(values["s_util_pct_s"] or 0.0), float(values["s_util_observed_s"] or 0.0))
        part = _LedgerPart(
            sums=ledger_sums_from(values, currency=values["currency"]),
            gpu_model=key[1],
            utilization=utilization,
            trace=(as_part({**values, "gpu_model": key[1], "location_source": values["t_source"]}),),
        )
        place = (key, values["currency"])
        merged[place] = _part_merge(merged[place], part) if place in merged else part
    ledger: dict[_Key, _LedgerPart] = {}
    for (key, currency), part in sorted(merged.items(), key=lambda item: _place_order(*item[0])):
        if key in ledger:
            raise CurrencyMismatchError(
                f"fleet {key[0]} ({key[1]}) holds lines in {ledger[key].sums.totals.currency} and "
                f"{currency}; money in different currencies is never added: filter by fleet"
            )
        ledger[key] = part
    return ledger


def _part_merge(a: _LedgerPart, b: _LedgerPart) -> _LedgerPart:
    """Two keys' lines as one; the model is their only one, or "mixed"."""
    return _LedgerPart(
        sums=_sums_merge(a.sums, b.sums),
        gpu_model=a.gpu_model if a.gpu_model == b.gpu_model else MIXED_MODEL,
        utilization=_utilization_merge(a.utilization, b.utilization),
        trace=a.trace + b.trace,
    )


def _place_order(key: _Key, currency: str) -> tuple[Any, ...]:
    return (key[0], key[1] or "", key[2] is None, key[2] or "", currency)


def _keyed_usage(
    usage: QuerySet[Any], node_path: str, by_model: bool, *, lines_where: Callable[[str], Q] | None = None
) -> tuple[QuerySet[Any], list[str]]:
    """Hourly usage keyed, per model, by the GPU model on its node-hour's ledger line (the fleet and the LLM model
    are the endpoint's: ``_serving`` keys its rows, grouped per endpoint, by them). ``lines_where``: the usage's
    own condition on its hours, said of the lines (at a path) to narrow the join alike."""
    if not by_model:
        return usage, []
    # A LEFT JOIN on the ledger's unique (node, hour_start): hours without a line keep a NULL model.
    path = f"{node_path}__ledger_lines"
    joined = same_node_hour(path, where=None if lines_where is None else lines_where(f"{path}__"))
    usage = usage.annotate(k_line=joined, k_model=F("k_line__gpu_model"))
    return usage, ["k_model"]


# Servers whose "TTFT" histogram is a lower bound of TTFT (TGI: queue duration, before the prefill).
LOWER_BOUND_TTFT_KINDS = frozenset({ServingEndpoint.Kind.TGI})


@dataclass
class _Serving:
    """What one pass over a key's endpoint-hours adds up, before it becomes a ``ServingSums``."""

    sums: dict[str, Any] = field(default_factory=dict)
    ttft: dict[bool, list[Histogram]] = field(default_factory=lambda: {False: [], True: []})
    ttft_sum: dict[bool, TimeSum] = field(default_factory=lambda: {False: TimeSum(), True: TimeSum()})
    itl: list[Histogram] = field(default_factory=list)
    itl_sum: TimeSum = field(default_factory=TimeSum)

    def serving_sums(self) -> ServingSums:
        served = self.sums
        return ServingSums(
            serving_s=float(served.get("s_serving_s") or 0.0),
            prompt_tokens=int(served.get("s_prompt") or 0),
            generation_tokens=int(served.get("s_generation") or 0),
            cached_prompt_tokens=_cached(served),
            prompt_tokens_cache_known=int(served.get("s_prompt_cache_known") or 0),
            ttft=histogram_merge(self.ttft[False], coarsen=True),
            ttft_lower_bound=histogram_merge(self.ttft[True], coarsen=True),
            requests=int(served.get("s_requests") or 0),
            gpu_serving_s=float(served.get("gpu_serving_s") or 0.0),
            gpu_generation_tokens=int(served.get("gpu_generation") or 0),
            gpu_requests=int(served.get("gpu_requests") or 0),
            ttft_sum=self.ttft_sum[False],
            ttft_lower_bound_sum=self.ttft_sum[True],
            itl=histogram_merge(self.itl, coarsen=True),
            itl_sum=self.itl_sum,
        )


def _serving(
    summed: Callable[[tuple[int, int]], list[dict[str, Any]]],
    layouts: tuple[tuple[int, int], dict[int, _Endpoint]],
    *,
    by_llm_model: bool = False,
) -> dict[_Key, ServingSums]:
    """Serving sums, merged TTFT and inter-token latency histograms per key, in one pass over the endpoint-hours.

    Measured TTFT (vLLM, SGLang) and TGI's lower bound are merged apart, never together.

    ``summed``: the endpoint-hours summed in SQL per key, endpoint and bucket layouts (bucket counts as
    ``widths`` columns; ``_serving_rows``, and ``_serving_day_rows`` for whole days), layouts merged here onto the
    bounds they share (``histogram_merge(coarsen=True)``: exact, only coarser). The widths are a guess from the
    declared layouts; should an hour hold a wider one, the queries run again as wide as the widest returned.
    """
    widths, endpoints = layouts
    rows = summed(widths)
    ttft, itl = (max((len(row[f"{p}_bucket_bounds_s"] or ()) + 1 for row in rows), default=0) for p in _LATENCIES)
    if ttft > widths[0] or itl > widths[1]:
        rows = summed((max(ttft, widths[0]), max(itl, widths[1])))
    per_key: dict[_Key, _Serving] = defaultdict(_Serving)
    for row in rows:
        endpoint = endpoints[row["endpoint_id"]]
        llm = llm_name(endpoint.model_name) if by_llm_model else None
        _serving_add(per_key[(endpoint.fleet_id, row.get("k_model"), llm)], row, endpoint)
    return {key: summed.serving_sums() for key, summed in per_key.items()}


def _serving_add(summed: _Serving, row: dict[str, Any], endpoint: _Endpoint) -> None:
    gpu_count = endpoint.gpu_count
    sums = summed.sums
    for name in _SERVING_SUMS:
        sums[name] = sums.get(name, 0) + (row[name] or 0)
    sums["s_cached_seen"] = sums.get("s_cached_seen") or row["s_cached"] is not None
    if gpu_count:  # per GPU: the endpoint's seconds while serving times the GPUs it serves from
        sums["gpu_serving_s"] = sums.get("gpu_serving_s", 0.0) + (row["s_serving_s"] or 0.0) * gpu_count
        sums["gpu_generation"] = sums.get("gpu_generation", 0) + (row["s_generation"] or 0)
        sums["gpu_requests"] = sums.get("gpu_requests", 0) + (row["s_requests"] or 0)
    if row["s_ttft_histograms"]:
        histogram = _histogram_of(row, "ttft")
        lower_bound = endpoint.kind in LOWER_BOUND_TTFT_KINDS
        summed.ttft[lower_bound].append(histogram)
        if row["k_ttft_sum_known"]:
            summed.ttft_sum[lower_bound] += TimeSum(float(row["s_ttft_sum"] or 0.0), histogram.total)
    if row["s_itl_histograms"]:
        histogram = _histogram_of(row, "itl")
        summed.itl.append(histogram)
        if row["k_itl_sum_known"]:
            summed.itl_sum += TimeSum(float(row["s_itl_sum"] or 0.0), histogram.total)


def _histogram_of(row: dict[str, Any], prefix: str) -> Histogram:
    bounds = tuple(float(bound) for bound in row[f"{prefix}_bucket_bounds_s"])
    return Histogram(bounds, tuple(int(row[f"s_{prefix}{i}"] or 0) for i in range(len(bounds) + 1)))


# Serving sums per key; ``s_cached_seen`` beside them says whether any endpoint-hour counted
# prefix-cache hits (without one, the cached tokens are unknown, not zero).
_SERVING_SUMS = ("s_serving_s", "s_prompt", "s_generation", "s_cached", "s_prompt_cache_known", "s_requests")


def _cached(served: dict[str, Any]) -> int | None:
    return None if not served.get("s_cached_seen") else int(served["s_cached"])


def _cached_sum(values: Iterable[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _buckets(prefix: str, width: int, where: Q | None) -> dict[str, Sum]:
    return {
        f"s_{prefix}{i}": Sum(Cast(KT(f"{prefix}_bucket_counts__{i}"), BigIntegerField()), filter=where)
        for i in range(width)
    }


# The latency histograms an endpoint-hour may hold: time to first token, inter-token latency.
_LATENCIES = ("ttft", "itl")


@dataclass(frozen=True)
class _Endpoint:
    """What an endpoint's rows are keyed and weighed by: its node's fleet, its server, its LLM model, and how many
    GPUs it serves from (inventory)."""

    fleet_id: int
    kind: str
    model_name: str
    gpu_count: int


def _endpoint_layouts(organization_ids: Collection[int]) -> tuple[tuple[int, int], dict[int, _Endpoint]]:
    """The buckets of the widest TTFT and inter-token latency layouts the endpoints declared, and each endpoint
    (``_Endpoint``): one query over the endpoints, their epochs and GPUs."""
    rows = (
        ServingEndpoint.objects.filter(node__fleet__organization_id__in=organization_ids)
        .values("id", "node__fleet_id", "kind", "model_name", *(f"epochs__{p}_bucket_bounds_s" for p in _LATENCIES))
        .annotate(s_gpus=Count("gpus", distinct=True))
        .order_by()
    )
    widths = {p: 0 for p in _LATENCIES}
    endpoints: dict[int, _Endpoint] = {}
    for row in rows:
        endpoints[row["id"]] = _Endpoint(row["node__fleet_id"], row["kind"], row["model_name"], row["s_gpus"])
        for p in _LATENCIES:
            widths[p] = max(widths[p], len(row[f"epochs__{p}_bucket_bounds_s"] or ()) + 1)
    return (widths["ttft"], widths["itl"]), endpoints


def _serving_rows(usage: QuerySet[EndpointHourUsage], keys: list[str], widths: tuple[int, int]) -> list[dict[str, Any]]:
    served = Q(prompt_tokens__gt=0) | Q(generation_tokens__gt=0)
    latencies: dict[str, Any] = {}
    for prefix, width in zip(_LATENCIES, widths, strict=True):
        with_histogram = Q(**{f"{prefix}_bucket_counts__isnull": False})
        latencies |= {
            f"s_{prefix}_histograms": Count("id", filter=with_histogram),
            f"s_{prefix}_sum": Sum(f"{prefix}_sum_s", filter=with_histogram),
            **_buckets(prefix, width, with_histogram),
        }
    known = {
        f"k_{prefix}_sum_known": ExpressionWrapper(Q(**{f"{prefix}_sum_s__isnull": False}), output_field=BooleanField())
        for prefix in _LATENCIES
    }
    rows = (
        usage.annotate(**known)
        .values(*keys, "endpoint_id", *(f"{p}_bucket_bounds_s" for p in _LATENCIES), *known)
        .annotate(
            s_serving_s=Sum("observed_s", filter=served),
            s_prompt=Sum("prompt_tokens"),
            s_generation=Sum("generation_tokens"),
            s_requests=Sum("requests", filter=served),
            s_cached=Sum("cached_prompt_tokens"),
            s_prompt_cache_known=Sum("prompt_tokens", filter=Q(cached_prompt_tokens__isnull=False)),
            **latencies,
        )
        .order_by()
    )
    return list(rows)


def _serving_day_rows(
    days: QuerySet[LedgerServingDay], by_model: bool, widths: tuple[int, int]
) -> list[dict[str, Any]]:
    """``_serving_rows`` of the node-days in ``days``, from their stored sums (``accounting.serving_days``): the
    same keys and sums, so that a day's rows add up with the hours' as the hours would."""
    latencies: dict[str, Any] = {}
    for prefix, width in zip(_LATENCIES, widths, strict=True):
        latencies |= {
            f"s_{prefix}_histograms": Sum(f"{prefix}_histograms"),
            f"s_{prefix}_sum": Sum(f"{prefix}_sum_s"),
            **_buckets(prefix, width, None),
        }
    keys = {"k_model": F("gpu_model")} if by_model else {}
    rows = (
        days.values(
            "endpoint_id",
            *(f"{p}_bucket_bounds_s" for p in _LATENCIES),
            k_ttft_sum_known=F("ttft_sum_known"),
            k_itl_sum_known=F("itl_sum_known"),
            **keys,
        )
        .annotate(
            s_serving_s=Sum("serving_s"),
            s_prompt=Sum("prompt_tokens"),
            s_generation=Sum("generation_tokens"),
            s_requests=Sum("requests"),
            s_cached=Sum("cached_prompt_tokens"),
            s_prompt_cache_known=Sum("prompt_tokens_cache_known"),
            **latencies,
        )
        .order_by()
    )
    return list(rows)


def _stats_assemble(
    organization_ids: Collection[int],
    by_model: bool,
    by_llm_model: bool,
    ledger: dict[_Key, _LedgerPart],
    serving: dict[_Key, ServingSums],
    tracer: RowTracer,
) -> list[ComparisonStats]:
    if not by_model:
        ledger = _per_fleet(ledger)
    fleets = Fleet.objects.filter(organization_id__in=organization_ids)
    target = "organization__ledger_settings__goodput_ttft_target_ms"  # NULL: no settings, the default
    names = {pk: (name, ms) for pk, name, ms in fleets.values_list("id", "name", target)}
    profiles = gpu_model_profiles(organization_ids=organization_ids)
    unshared = _unshared_trace(ledger) if by_llm_model else {}
    stats = []
    for key in ledger.keys() | serving.keys():
        part = ledger.get(key, _LedgerPart(LedgerSums(), None, UtilizationSums(), unshared.get(key[:2], ())))
        model = part.gpu_model if part.gpu_model is not None else key[1]
        name, target_ms = names.get(key[0], (str(key[0]), None))
        trace = tracer.trace(list(part.trace), part.sums)
        stats.append(
            ComparisonStats(
                fleet_id=key[0],
                fleet_name=name,
                gpu_model=model,
                gpu_class=profiles.get(model or "", ("", None))[1],
                sums=part.sums,
                serving=serving.get(key, ServingSums()),
                utilization=part.utilization,
                embodied_sources=trace.embodied_sources,
                llm_model=key[2],
                allocation=_allocation(by_llm_model, key),
                goodput_ttft_target_s=(target_ms or DEFAULT_GOODPUT_TTFT_TARGET_MS) / MS_PER_S,
                location_sources=trace.location_sources,
                trace_parts=part.trace,
            )
        )
    return stats


def _unshared_trace(ledger: dict[_Key, _LedgerPart]) -> dict[tuple[int, str | None], tuple[TracePart, ...]]:
    """Per fleet x GPU model, the trace parts of all its rows: those of an LLM model that served on it with no
    share of its lines (prompt tokens only, in idle node-hours), which name the GPU model's embodied factors."""
    per_model: dict[tuple[int, str | None], tuple[TracePart, ...]] = defaultdict(tuple)
    for key, part in ledger.items():
        per_model[key[:2]] += part.trace
    return per_model


def _allocation(by_llm_model: bool, key: _Key) -> LedgerAllocation:
    if not by_llm_model:
        return LedgerAllocation.WHOLE
    return LedgerAllocation.UNATTRIBUTED if key[2] is None else LedgerAllocation.ALLOCATED


def _per_fleet(per_model: dict[_Key, _LedgerPart]) -> dict[_Key, _LedgerPart]:
    """Model rows rolled up per fleet; the fleet's model is its only one, or "mixed"."""
    per_fleet: dict[_Key, _LedgerPart] = {}
    for (fleet_id, _, _), part in per_model.items():
        key = (fleet_id, None, None)
        per_fleet[key] = _part_merge(per_fleet[key], part) if key in per_fleet else part
    return per_fleet


def _stats_merge(parts: list[ComparisonStats], tracer: RowTracer) -> ComparisonStats:
    """One fleet's model rows as one row: the fleet as a whole (histograms merged, sums and trace parts added)."""
    if len(parts) == 1 and parts[0].allocation is LedgerAllocation.WHOLE:
        return parts[0]
    models = {part.gpu_model for part in parts}
    sums = functools.reduce(_sums_merge, (part.sums for part in parts))
    trace_parts = tuple(trace_part for part in parts for trace_part in part.trace_parts)
    trace = tracer.trace(list(trace_parts), sums)
    return ComparisonStats(
        fleet_id=parts[0].fleet_id,
        fleet_name=parts[0].fleet_name,
        gpu_model=models.pop() if len(models) == 1 else MIXED_MODEL,
        gpu_class=parts[0].gpu_class if len(models) == 1 else None,
        sums=sums,
        serving=_serving_merge([part.serving for part in parts]),
        utilization=functools.reduce(_utilization_merge, (part.utilization for part in parts)),
        embodied_sources=trace.embodied_sources,
        goodput_ttft_target_s=parts[0].goodput_ttft_target_s,
        location_sources=trace.location_sources,
        trace_parts=trace_parts,
    )


def _serving_merge(parts: list[ServingSums]) -> ServingSums:
    def merged(name: str) -> Histogram | None:
        return histogram_merge((h for part in parts if (h := getattr(part, name)) is not None), coarsen=True)

    def added(name: str) -> Any:
        return functools.reduce(lambda a, b: a + b, (getattr(part, name) for part in parts))

    return ServingSums(
        cached_prompt_tokens=_cached_sum(part.cached_prompt_tokens for part in parts),
        ttft=merged("ttft"),
        ttft_lower_bound=merged("ttft_lower_bound"),
        itl=merged("itl"),
        **{name: added(name) for name in _SERVING_ADDED},
    )


# ServingSums fields that add up across rows.
_SERVING_ADDED = (
    "serving_s",
    "prompt_tokens",
    "generation_tokens",
    "prompt_tokens_cache_known",
    "requests",
    "gpu_serving_s",
    "gpu_generation_tokens",
    "gpu_requests",
    "ttft_sum",
    "ttft_lower_bound_sum",
    "itl_sum",
)


def _utilization_merge(a: UtilizationSums, b: UtilizationSums) -> UtilizationSums:
    return UtilizationSums(pct_s=a.pct_s + b.pct_s, observed_s=a.observed_s + b.observed_s)


def _sums_merge(a: LedgerSums, b: LedgerSums) -> LedgerSums:
    """Two ``LedgerSums`` added (``LedgerTotals.merge`` raises on mixed currencies)."""
    try:
        return ledger_sums_merge(a, b)
    except CurrencyMismatchError as error:
        raise CurrencyMismatchError(
            f"{error}: a fleet holds lines in two currencies; money in different currencies is never added"
        ) from error
