"""Fleet comparison: per fleet (or fleet x GPU model) figures and their ratios to a baseline fleet."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any

from django.db.models import BigIntegerField, Count, F, FilteredRelation, Q, QuerySet, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from accounting.ledger import CurrencyMismatchError
from accounting.models import NodeHourLedger
from accounting.reports.aggregates import ledger_sums, ledger_sums_from
from accounting.reports.metrics import (
    ComparisonRow,
    ComparisonStats,
    LedgerSums,
    ServingSums,
    UtilizationSums,
    ledger_sums_merge,
)
from accounting.reports.selectors.lines import (
    MIXED_MODEL,
    ReportFilters,
    embodied_sources,
    gpu_model_profiles,
    ledger_lines,
)
from fleets.models import Fleet
from telemetry.histogram import Histogram, histogram_merge
from telemetry.models import EndpointEpoch, EndpointHourUsage, ServingEndpoint

_Key = tuple[int, str | None]  # fleet id, GPU model key (None per fleet)


def fleet_comparison(
    *,
    organization_ids: Collection[int],
    start: datetime,
    end: datetime,
    baseline_fleet_id: int | None = None,
    by_model: bool = False,
    fleet_ids: Collection[int] = (),
) -> list[ComparisonRow]:
    """Each fleet's (or fleet x GPU model's) figures over the period, ordered by fleet name then model.

    The baseline is always the baseline fleet as a whole (all its models); its
    ratios are ``None`` when it has no data. Raises ``CurrencyMismatchError`` for a
    row whose lines are in two currencies. Fleets without any data are left out.
    """
    scope: dict[str, Any] = {"organization_ids": organization_ids, "start": start, "end": end}
    stats = _comparison_stats(**scope, by_model=by_model, fleet_ids=fleet_ids)
    baseline = None
    if baseline_fleet_id is not None:
        parts = [row for row in stats if row.fleet_id == baseline_fleet_id]
        if not parts and fleet_ids and baseline_fleet_id not in fleet_ids:  # filtered out: read it on its own
            parts = _comparison_stats(**scope, by_model=False, fleet_ids=[baseline_fleet_id])
        baseline = _stats_merge(parts) if parts else None
    ordered = sorted(stats, key=lambda s: (s.fleet_name, s.fleet_id, s.gpu_model or ""))
    return [ComparisonRow(stats=row, baseline=baseline) for row in ordered]


def _comparison_stats(
    *, organization_ids: Collection[int], start: datetime, end: datetime, by_model: bool, fleet_ids: Collection[int]
) -> list[ComparisonStats]:
    filters = ReportFilters(fleet_ids=frozenset(fleet_ids))
    ledger = _comparison_ledger(ledger_lines(organization_ids=organization_ids, start=start, end=end, filters=filters))
    endpoint_hours = EndpointHourUsage.objects.filter(
        endpoint__node__fleet__organization_id__in=organization_ids, hour_start__gte=start, hour_start__lt=end
    )
    if fleet_ids:
        endpoint_hours = endpoint_hours.filter(endpoint__node__fleet_id__in=fleet_ids)
    endpoint_hours, keys = _keyed_usage(endpoint_hours, "endpoint__node", by_model)
    serving, ttft = _serving_and_ttft(endpoint_hours, keys, _ttft_width_guess(organization_ids))
    return _stats_assemble(organization_ids, by_model, ledger, serving, ttft)


# Per key: the ledger sums, the GPU model, and the GPU utilization of the lines (stored on each
# line, so that a quarter of a large fleet reads its node-hours, not its millions of GPU-hours).
_LedgerPart = tuple[LedgerSums, str | None, UtilizationSums]


def _comparison_ledger(lines: QuerySet[NodeHourLedger]) -> dict[_Key, _LedgerPart]:
    """Ledger sums per fleet and model; per fleet, the model is its only one or "mixed"."""
    rows = (
        lines.values("fleet_id", "gpu_model", "currency")
        .annotate(**ledger_sums(), s_util_pct_s=Sum("util_pct_s"), s_util_observed_s=Sum("util_observed_s"))
        .order_by("fleet_id", "gpu_model", "currency")
    )
    return _by_fleet_or_model(rows)


def _by_fleet_or_model(rows: QuerySet[Any]) -> dict[_Key, _LedgerPart]:
    # Rows come per fleet x model x currency; the caller wants per fleet x model, or per fleet:
    # the fleet-level roll-up merges the (few) model rows with LedgerTotals.merge, which
    # refuses mixed currencies itself.
    per_model: dict[_Key, _LedgerPart] = {}
    for values in rows:
        key = (values["fleet_id"], values["gpu_model"])
        if key in per_model:
            raise CurrencyMismatchError(
                f"fleet {key[0]} ({key[1]}) holds lines in {per_model[key][0].totals.currency} and "
                f"{values['currency']}; money in different currencies is never added: filter by fleet"
            )
        utilization = UtilizationSums(values["s_util_pct_s"] or 0.0, values["s_util_observed_s"] or 0.0)
        per_model[key] = (ledger_sums_from(values, currency=values["currency"]), key[1], utilization)
    return per_model


def _keyed_usage(usage: QuerySet[Any], node_path: str, by_model: bool) -> tuple[QuerySet[Any], list[str]]:
    """Hourly usage keyed by fleet and, per model, by the GPU model on its node-hour's ledger line."""
    usage = usage.annotate(k_fleet=F(f"{node_path}__fleet_id"))
    if not by_model:
        return usage, ["k_fleet"]
    # A LEFT JOIN on the ledger's unique (node, hour_start): hours without a line keep a NULL model.
    lines = f"{node_path}__ledger_lines"
    same_hour = FilteredRelation(lines, condition=Q(**{f"{lines}__hour_start": F("hour_start")}))
    return usage.annotate(k_line=same_hour, k_model=F("k_line__gpu_model")), ["k_fleet", "k_model"]


def _usage_key(values: dict[str, Any]) -> _Key:
    return (values["k_fleet"], values.get("k_model"))


def _ttft_width_guess(organization_ids: Collection[int]) -> int:
    """Buckets of the widest TTFT layout the organizations' endpoints declared (a small table)."""
    epochs = EndpointEpoch.objects.filter(endpoint__node__fleet__organization_id__in=organization_ids)
    return max((len(bounds) + 1 for bounds in epochs.values_list("ttft_bucket_bounds_s", flat=True)), default=0)


# Servers whose "TTFT" histogram is a lower bound of TTFT (TGI: queue duration, before the prefill).
LOWER_BOUND_TTFT_KINDS = frozenset({ServingEndpoint.Kind.TGI})

_Ttft = dict[tuple[_Key, bool], Histogram]  # (key, lower bound?) -> merged histogram


def _serving_and_ttft(
    usage: QuerySet[EndpointHourUsage], keys: list[str], width: int
) -> tuple[dict[_Key, dict[str, Any]], _Ttft]:
    """Serving sums and merged TTFT histograms per key, in one pass over the endpoint-hours.

    Measured TTFT (vLLM, SGLang) and TGI's lower bound are merged apart, never together.

    Summed in SQL per key and bucket layout (bucket counts as ``width`` columns),
    layouts merged here onto the bounds they share (``histogram_merge(coarsen=True)``:
    exact, only coarser). ``width`` is a guess from the declared layouts; should an
    hour hold a wider one, the query runs again as wide as the widest it returned.
    """
    rows = _serving_rows(usage, keys, width)
    needed = max((len(row["ttft_bucket_bounds_s"] or ()) + 1 for row in rows), default=0)
    if needed > width:
        rows = _serving_rows(usage, keys, needed)
    serving: dict[_Key, dict[str, Any]] = {}
    parts: dict[tuple[_Key, bool], list[Histogram]] = defaultdict(list)
    for row in rows:
        key = _usage_key(row)
        summed = serving.setdefault(key, dict.fromkeys(_SERVING_SUMS, 0))
        for name in _SERVING_SUMS:
            summed[name] += row[name] or 0
        summed["s_cached_seen"] = summed.get("s_cached_seen") or row["s_cached"] is not None
        if row["s_histograms"]:
            bounds = tuple(float(bound) for bound in row["ttft_bucket_bounds_s"])
            counts = tuple(int(row[f"s_b{i}"] or 0) for i in range(len(bounds) + 1))
            parts[(key, row["endpoint__kind"] in LOWER_BOUND_TTFT_KINDS)].append(Histogram(bounds, counts))
    ttft = {key: merged for key, hs in parts.items() if (merged := histogram_merge(hs, coarsen=True)) is not None}
    return serving, ttft


# Serving sums per key; ``s_cached_seen`` beside them says whether any endpoint-hour counted
# prefix-cache hits (without one, the cached tokens are unknown, not zero).
_SERVING_SUMS = ("s_serving_s", "s_prompt", "s_generation", "s_cached", "s_prompt_cache_known")


def _cached(served: dict[str, Any]) -> int | None:
    return None if not served.get("s_cached_seen") else int(served["s_cached"])


def _cached_sum(values: Iterable[int | None]) -> int | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def _serving_rows(usage: QuerySet[EndpointHourUsage], keys: list[str], width: int) -> list[dict[str, Any]]:
    served = Q(prompt_tokens__gt=0) | Q(generation_tokens__gt=0)
    with_histogram = Q(ttft_bucket_counts__isnull=False)
    buckets = {
        f"s_b{i}": Sum(Cast(KT(f"ttft_bucket_counts__{i}"), BigIntegerField()), filter=with_histogram)
        for i in range(width)
    }
    rows = (
        usage.values(*keys, "endpoint__kind", "ttft_bucket_bounds_s")
        .annotate(
            s_serving_s=Sum("observed_s", filter=served),
            s_prompt=Sum("prompt_tokens"),
            s_generation=Sum("generation_tokens"),
            s_cached=Sum("cached_prompt_tokens"),
            s_prompt_cache_known=Sum("prompt_tokens", filter=Q(cached_prompt_tokens__isnull=False)),
            s_histograms=Count("id", filter=with_histogram),
            **buckets,
        )
        .order_by()
    )
    return list(rows)


def _stats_assemble(
    organization_ids: Collection[int],
    by_model: bool,
    ledger: dict[_Key, _LedgerPart],
    serving: dict[_Key, dict[str, Any]],
    ttft: _Ttft,
) -> list[ComparisonStats]:
    if not by_model:
        ledger = _per_fleet(ledger)
    names = dict(Fleet.objects.filter(organization_id__in=organization_ids).values_list("id", "name"))
    profiles = gpu_model_profiles(organization_ids=organization_ids)
    sources = embodied_sources(organization_ids=organization_ids)
    stats = []
    for key in ledger.keys() | serving.keys() | {key for key, _ in ttft}:
        sums, model, utilization = ledger.get(key, (LedgerSums(), None, UtilizationSums()))
        served = serving.get(key, {})
        stats.append(
            ComparisonStats(
                fleet_id=key[0],
                fleet_name=names.get(key[0], str(key[0])),
                gpu_model=model if model is not None else key[1],
                gpu_class=profiles.get(model or key[1] or "", ("", None))[1],
                sums=sums,
                serving=ServingSums(
                    serving_s=float(served.get("s_serving_s") or 0.0),
                    prompt_tokens=int(served.get("s_prompt") or 0),
                    generation_tokens=int(served.get("s_generation") or 0),
                    cached_prompt_tokens=_cached(served),
                    prompt_tokens_cache_known=int(served.get("s_prompt_cache_known") or 0),
                    ttft=ttft.get((key, False)),
                    ttft_lower_bound=ttft.get((key, True)),
                ),
                utilization=utilization,
                embodied_sources=_sources_of(model if model is not None else key[1], sources),
            )
        )
    return stats


def _sources_of(model: str | None, sources: dict[str, str]) -> str | None:
    return sources.get(model) or None if model is not None else None


def _per_fleet(per_model: dict[_Key, _LedgerPart]) -> dict[_Key, _LedgerPart]:
    """Model rows rolled up per fleet; the fleet's model is its only one, or "mixed"."""
    per_fleet: dict[_Key, _LedgerPart] = {}
    for (fleet_id, model), (sums, _, utilization) in per_model.items():
        key = (fleet_id, None)
        if key not in per_fleet:
            per_fleet[key] = (sums, model, utilization)
            continue
        merged, first_model, merged_utilization = per_fleet[key]
        per_fleet[key] = (
            _sums_merge(merged, sums),
            first_model if first_model == model else MIXED_MODEL,
            _utilization_merge(merged_utilization, utilization),
        )
    return per_fleet


def _stats_merge(parts: list[ComparisonStats]) -> ComparisonStats:
    """One fleet's model rows as one row: the fleet as a whole (histograms merged, sums added)."""
    if len(parts) == 1:
        return parts[0]
    models = {part.gpu_model for part in parts}
    histograms = [part.serving.ttft for part in parts if part.serving.ttft is not None]
    lower_bounds = [part.serving.ttft_lower_bound for part in parts if part.serving.ttft_lower_bound is not None]
    return ComparisonStats(
        fleet_id=parts[0].fleet_id,
        fleet_name=parts[0].fleet_name,
        gpu_model=models.pop() if len(models) == 1 else MIXED_MODEL,
        gpu_class=parts[0].gpu_class if len(models) == 1 else None,
        sums=functools.reduce(_sums_merge, (part.sums for part in parts)),
        serving=ServingSums(
            serving_s=sum(part.serving.serving_s for part in parts),
            prompt_tokens=sum(part.serving.prompt_tokens for part in parts),
            generation_tokens=sum(part.serving.generation_tokens for part in parts),
            cached_prompt_tokens=_cached_sum(part.serving.cached_prompt_tokens for part in parts),
            prompt_tokens_cache_known=sum(part.serving.prompt_tokens_cache_known for part in parts),
            ttft=histogram_merge(histograms, coarsen=True),
            ttft_lower_bound=histogram_merge(lower_bounds, coarsen=True),
        ),
        utilization=functools.reduce(_utilization_merge, (part.utilization for part in parts)),
        embodied_sources="; ".join(sorted({p.embodied_sources for p in parts if p.embodied_sources})) or None,
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
