"""Node pages for engineers: collector health, per-GPU telemetry, serving latency and the node's ledger.

Serving is shown per LLM model (an endpoint is one model at one metrics URL):
each model's tokens, TTFT and inter-token latency, in a table over the period
and as chart series named by the model.

Everything is read from hourly usage and the stored ledger, bounded by the
period and summed to the period's granularity (a quarter: a point per day); the
one exception is the recent raw view (the last few minutes of raw samples),
bounded in time and thinned in SQL to a fixed number of points per GPU.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import plotly.graph_objects as go
from django.contrib.auth.decorators import login_required
from django.db.models import Avg, Func, IntegerField, Max, Sum, TextField
from django.db.models.functions import Cast, TruncDay, TruncHour, TruncMonth
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting.models import NodeHourLedger
from accounting.profiles import gpu_profiles
from common.charts import (
    LINE_COLOURS,
    Buckets,
    band_added,
    figure_html,
    series_lines,
)
from common.labels import short_labels, short_name
from common.series import median_band, overlapping_series_merged
from dashboards.common import column_set, dashboard_context
from fleets.models import Gpu, GpuInstallation, Node
from grid.hours import floor_hour
from reports.aggregates import (
    UNPRICED_WITH_TELEMETRY,
    ledger_figures_from,
    ledger_figures_sums,
)
from reports.metrics import grid_kind
from reports.node_status_api import node_status_data, node_statuses, nodes_with_gpu_profiles
from telemetry.histogram import Histogram, histogram_merge, histogram_quantile
from telemetry.models import GpuSample
from telemetry.prometheus_sync import node_sources, organization_sources
from telemetry.selectors import endpoint_hour_usage_for_node, gpu_hour_usage_for_gpus, node_gaps

RECENT_RAW = timedelta(minutes=10)
RECENT_SLOT_S = 10  # the recent view's resolution: 60 points per GPU at 0.1 Hz and up, whatever the rate
LEDGER_ROWS = 168  # a week of hours: the table is for reading, the API for exporting
GIB = 1024**3
MAX_GPU_LINES = 4  # past this many lines on a chart, a GPU model's cards are drawn as their median and band
TIMES, EN_DASH = "\u00d7", "\u2013"
_TRUNC = {"hour": TruncHour, "day": TruncDay, "month": TruncMonth}


@login_required
def nodes_page(request: HttpRequest) -> HttpResponse:
    context = dashboard_context(request, now=timezone.now())
    organization, period = context["organization"], context["period"]
    nodes = node_statuses(user=request.user).filter(fleet__organization=organization)
    totals = _ledger_totals_by_node(organization, period.start, period.end)
    now = timezone.now()
    rows = [
        {**node_status_data(node, now=now, profiles=pairs), "totals": totals.get(node.pk, _NO_TOTALS)}
        for node, pairs in nodes_with_gpu_profiles(list(nodes))
    ]
    sources = organization_sources(organization.pk) if organization else []
    return render(
        request,
        "dashboards/nodes.html",
        {**context, **column_set(request), "section": "nodes", "rows": rows, "prometheus_sources": sources},
    )


# A node with no line in the period (newly enrolled, say): every total unknown, shown as "—".
_NO_TOTALS: dict[str, Any] = {"currency": "", "cost": None, "facility_kwh": None, "tokens": None}


# The figures the list shows per node: summed alone (a quarter of a large fleet's lines, ~60 sums fewer).
_LISTED = ("facility_kwh", "cost", "prompt_tokens", "generation_tokens")


def _ledger_totals_by_node(organization: Any, start: datetime, end: datetime) -> dict[int, dict[str, Any]]:
    """Each node's facility kWh, cost and tokens over the period (``_NO_TOTALS``' keys), summed as every report
    sums them (``reports.aggregates``)."""
    lines = NodeHourLedger.objects.filter(organization=organization, hour_start__gte=start, hour_start__lt=end)
    rows = lines.values("node_id", "currency").annotate(**ledger_figures_sums(_LISTED)).order_by()
    totals = {}
    for row in rows:
        figures = ledger_figures_from(row, _LISTED)
        tokens = figures["prompt_tokens"] + figures["generation_tokens"]
        totals[row["node_id"]] = {"currency": row["currency"], **figures, "tokens": tokens}
    return totals


@login_required
def node_page(request: HttpRequest, node_id: int) -> HttpResponse:
    context = dashboard_context(request, now=timezone.now())
    node = node_statuses(user=request.user).filter(pk=node_id).first()
    if node is None:
        raise Http404("no such node in your organizations")
    period, now = context["period"], timezone.now()
    buckets = Buckets(period.granularity, period.start, period.end, now=now)
    gpus = list(node.gpus.all())  # prefetched, by index
    profiles = gpu_profiles(gpus, organization_id=node.fleet.organization_id)
    usage = gpu_usage_by_bucket(gpus=gpus, start=period.start, end=period.end, granularity=period.granularity)
    serving = serving_by_bucket(node_id=node.pk, start=period.start, end=period.end, granularity=period.granularity)
    models = serving_by_model(serving)
    names = {f"GPU {gpu.index}": gpu.name for gpu in gpus}
    gpu_charts = _gpu_charts(usage, buckets, names)
    serving_charts = _serving_charts(serving, buckets)
    recent = _recent_raw_chart(gpus, now, interval_s=_sample_interval_s(node), names=names)
    return render(
        request,
        "dashboards/node.html",
        {
            **context,
            "section": "nodes",
            "node": node,
            "status": node_status_data(node, now=now, profiles=profiles),
            "prometheus_sources": node_sources(node),
            "gpu_profiles": profiles,
            # What an engineer checks first (power, utilization, tokens/s, TTFT), then the rest.
            "lead_charts": [gpu_charts["power"], gpu_charts["util"], *serving_charts],
            "charts": [recent, gpu_charts["energy"], gpu_charts["memory"], gpu_charts["temp"]],
            "has_usage": bool(usage),
            "served_models": models,
            "gaps": node_gaps(node_id=node.pk, start=period.start, end=min(period.end, floor_hour(now))),
            "hardware_changes": GpuInstallation.objects.filter(gpu__node=node).select_related("gpu"),
            "ledger": _ledger_rows(node, period.start, period.end),
            "unpriced_hours": NodeHourLedger.objects.filter(
                UNPRICED_WITH_TELEMETRY, node=node, hour_start__gte=period.start, hour_start__lt=period.end
            ).count(),
        },
    )


def gpu_usage_by_bucket(*, gpus: list[Gpu], start: datetime, end: datetime, granularity: str) -> list[dict[str, Any]]:
    """Per GPU and hour, day or month: the period's hourly usage summed or averaged in SQL.

    A quarter at daily granularity is 90 points per GPU and chart, not 2,160.
    """
    if not gpus:
        return []
    index = {gpu.pk: gpu.index for gpu in gpus}
    buckets = (
        gpu_hour_usage_for_gpus(node_id=gpus[0].node_id, gpu_ids=index, start=start, end=end)
        .annotate(bucket=_TRUNC[granularity]("hour_start", tzinfo=UTC))
        .values("gpu_id", "bucket")
        .annotate(
            energy_j=Sum("energy_j"),
            mean_power_w=Avg("mean_power_w"),
            mean_util_pct=Avg("mean_util_pct"),
            max_mem_used_bytes=Max("max_mem_used_bytes"),
            mean_temp_c=Avg("mean_temp_c"),
        )
        .order_by()
    )
    rows = [{**row, "gpu__index": index[row["gpu_id"]]} for row in buckets]
    return sorted(rows, key=lambda row: (row["gpu__index"], row["bucket"]))


def serving_by_bucket(*, node_id: int, start: datetime, end: datetime, granularity: str) -> list[dict[str, Any]]:
    """Per endpoint (one LLM model at one URL) and hour, day or month: tokens, requests, observed seconds,
    and the merged TTFT and inter-token latency (ITL) histograms with their sums.

    ``endpoint`` names it: its model, or its URL where it has none (with the URL where two share a model).
    ``*_sum_s`` and ``*_summed``: the histogram's seconds and observations over the hours that carry a sum
    (older hours may not), so a mean is ``ttft_sum_s / ttft_summed``.
    Read as plain values (one small tuple per endpoint-hour) and added here: the
    histograms of one bucket may have different bounds, which SQL cannot merge.
    """
    # The bucket bounds as text, decoded once per layout (an endpoint keeps one for months): JSON decoding of
    # every endpoint-hour's four lists was a third of the page's Python.
    hours = (
        endpoint_hour_usage_for_node(node_id=node_id, start=start, end=end)
        .annotate(k_ttft_bounds=Cast("ttft_bucket_bounds_s", TextField()))
        .annotate(k_itl_bounds=Cast("itl_bucket_bounds_s", TextField()))
        .values_list(
            "endpoint_id", "endpoint__url", "endpoint__model_name", "hour_start", "prompt_tokens", "generation_tokens",
            "requests", "observed_s", "k_ttft_bounds", "ttft_bucket_counts", "ttft_sum_s",
            "k_itl_bounds", "itl_bucket_counts", "itl_sum_s",
        )
    )  # fmt: skip
    names = _endpoint_names({row[0]: (row[1], row[2]) for row in hours})
    buckets: dict[tuple[int, datetime], dict[str, Any]] = {}
    layouts: dict[str, tuple[float, ...]] = {}
    for endpoint_id, url, model, hour, prompt, generation, requests, observed_s, *histograms in hours:
        bucket = buckets.setdefault((endpoint_id, _bucket_start(hour, granularity)), _serving_sums(url, model))
        for name, value in (("prompt_tokens", prompt), ("generation_tokens", generation), ("requests", requests)):
            bucket[name] += value
        bucket["tokens"] += prompt + generation
        bucket["observed_s"] += observed_s
        for kind, (text, counts, sum_s) in zip(("ttft", "itl"), (histograms[:3], histograms[3:]), strict=True):
            if text not in layouts:
                layouts[text] = tuple(json.loads(text))
            _histogram_added(bucket, kind, layouts[text], counts, sum_s)
    return [
        {
            **sums,
            "endpoint": names[endpoint_id],
            "bucket": bucket,
            "ttft": histogram_merge(sums["ttft"], coarsen=True),
            "itl": histogram_merge(sums["itl"], coarsen=True),
        }
        for (endpoint_id, bucket), sums in buckets.items()
    ]


def _serving_sums(url: str, model: str) -> dict[str, Any]:
    sums: dict[str, Any] = {"url": url, "model": model, "tokens": 0, "observed_s": 0.0}
    sums |= {"prompt_tokens": 0, "generation_tokens": 0, "requests": 0}
    for kind in ("ttft", "itl"):
        sums |= {kind: [], f"{kind}_sum_s": 0.0, f"{kind}_summed": 0}
    return sums


def _histogram_added(
    sums: dict[str, Any], kind: str, bounds: tuple[float, ...], counts: list[int] | None, sum_s: Any
) -> None:
    if not counts:
        return
    sums[kind].append(Histogram(bounds, tuple(counts)))
    if sum_s is not None:
        sums[f"{kind}_sum_s"] += sum_s
        sums[f"{kind}_summed"] += sum(counts)


def _endpoint_names(endpoints: dict[int, tuple[str, str]]) -> dict[int, str]:
    """Each endpoint's name on the page: its LLM model; its URL without one; both where two share a model."""
    models = [model for _, model in endpoints.values()]
    return {
        endpoint_id: url if not model else model if models.count(model) == 1 else f"{model} ({url})"
        for endpoint_id, (url, model) in endpoints.items()
    }


_SUMMED = ("prompt_tokens", "generation_tokens", "requests", "observed_s", "ttft_sum_s", "ttft_summed")
_SUMMED_ITL = ("itl_sum_s", "itl_summed")


def serving_by_model(serving: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The period per endpoint (LLM model) from :func:`serving_by_bucket`'s rows: tokens, output tokens per
    observed second, and TTFT and ITL means and quantiles (``*_s``, and ``*_ms`` as shown; ``None``: not measured)."""
    totals: dict[str, dict[str, Any]] = {}
    for row in serving:
        total = totals.setdefault(row["endpoint"], _serving_sums(row["url"], row["model"]))
        for name in (*_SUMMED, *_SUMMED_ITL):
            total[name] += row[name]
        total["ttft"] += [row["ttft"]] if row["ttft"] else []
        total["itl"] += [row["itl"]] if row["itl"] else []
    models = []
    for name, total in sorted(totals.items()):
        row = {**total, "name": name}
        row["output_tokens_per_s"] = total["generation_tokens"] / total["observed_s"] if total["observed_s"] else None
        for kind in ("ttft", "itl"):
            histogram = histogram_merge(total[kind], coarsen=True)
            row[f"{kind}_mean_s"] = (
                total[f"{kind}_sum_s"] / total[f"{kind}_summed"] if total[f"{kind}_summed"] else None
            )
            for q in (50, 99):
                row[f"{kind}_p{q}_s"] = histogram_quantile(q / 100, histogram) if histogram else None
            for stat in ("mean", "p50", "p99"):  # as shown
                value = row[f"{kind}_{stat}_s"]
                row[f"{kind}_{stat}_ms"] = None if value is None else value * 1000
        models.append(row)
    return models


def _bucket_start(hour: datetime, granularity: str) -> datetime:
    """The start of the UTC day or month of ``hour`` (as ``TruncDay`` / ``TruncMonth`` in SQL)."""
    if granularity == "day":
        return hour.replace(hour=0)
    if granularity == "month":
        return hour.replace(day=1, hour=0)
    return hour


GpuSeries = dict[str, list[tuple[datetime, float | None]]]
Bands = dict[str, tuple[list[tuple[datetime, float | None]], list[tuple[datetime, float | None]]]]


def _per_gpu(usage: list[dict[str, Any]], value: Any) -> GpuSeries:
    series: GpuSeries = defaultdict(list)
    for row in usage:
        series[f"GPU {row['gpu__index']}"].append((row["bucket"], value(row)))
    return dict(series)


def gpu_lines(series: GpuSeries, names: dict[str, str]) -> tuple[GpuSeries, Bands]:
    """The lines to draw of per-GPU series: GPUs whose lines would lie one over another as one (``8 x H100 80GB
    HBM3``); where more than ``MAX_GPU_LINES`` remain, each GPU model's cards as their median line, with the band
    from the lowest to the highest of them."""
    merged = overlapping_series_merged(series, lambda group: gpu_group_name(group, names))
    if len(merged) <= MAX_GPU_LINES:
        return merged, {}
    by_model: dict[str | None, list[str]] = defaultdict(list)
    for gpu in series:
        by_model[names.get(gpu)].append(gpu)
    lines: GpuSeries = {}
    bands: Bands = {}
    for gpus in by_model.values():
        if len(gpus) == 1:
            lines[gpus[0]] = series[gpus[0]]
            continue
        median, low, high = median_band([series[gpu] for gpu in gpus])
        label = f"median of {gpu_group_name(gpus, names)}"
        lines[label], bands[label] = median, (low, high)
    return lines, bands


def _gpu_figure(title: str, unit: str, series: GpuSeries, names: dict[str, str], **options: Any) -> go.Figure:
    """``series_lines`` of :func:`gpu_lines`, each median line in its band's colour."""
    lines, bands = gpu_lines(series, names)
    colours = {name: LINE_COLOURS[n % len(LINE_COLOURS)] for n, name in enumerate(lines)} if bands else None
    figure = series_lines(title, unit, lines, colours=colours, **options)
    for name, (low, high) in bands.items():
        band_added(figure, name, low, high, colour=(colours or {})[name], gap=options.get("gap"))
    return figure


def gpu_group_name(group: list[str], names: dict[str, str]) -> str:
    """``8 x H100 80GB HBM3 (GPU 0-7)`` (a multiplication sign, an en dash) for GPUs ``GPU 0`` ... ``GPU 7``
    of one model; ``3 x GPUs (GPU 0, 2, 5)`` for others."""
    models = {names.get(gpu) for gpu in group}
    model = next(iter(models)) if len(models) == 1 else None
    indices = sorted(int(gpu.removeprefix("GPU ")) for gpu in group)
    contiguous = indices == list(range(indices[0], indices[-1] + 1))
    which = f"GPU {indices[0]}{EN_DASH}{indices[-1]}" if contiguous else "GPU " + ", ".join(map(str, indices))
    return f"{len(group)} {TIMES} {short_name(model) if model else 'GPUs'} ({which})"


def _memory_gib(row: dict[str, Any]) -> float | None:
    return row["max_mem_used_bytes"] / GIB if row["max_mem_used_bytes"] else None


def _one_bucket(buckets: Buckets) -> timedelta:
    """Consecutive buckets lie at most this far apart (a month of 31 days); further apart, one is missing."""
    return {"hour": timedelta(hours=1), "day": timedelta(days=1)}.get(buckets.granularity, timedelta(days=31))


def _gpu_charts(usage: list[dict[str, Any]], buckets: Buckets, names: dict[str, str]) -> dict[str, str]:
    """The per-GPU charts by key; utilization and memory from 0 (a line near the top is not a full card)."""
    granularity = buckets.granularity
    mean = f"mean per {granularity}"
    specs = [
        ("power", f"Power per GPU ({mean})", "W", lambda r: r["mean_power_w"]),
        ("energy", "Energy per GPU", f"kWh per {granularity}", lambda r: r["energy_j"] / 3.6e6),
        ("util", f"GPU utilization ({mean})", "%", lambda r: r["mean_util_pct"]),
        ("memory", f"Memory used (max per {granularity})", "GiB", _memory_gib),
        ("temp", f"Temperature ({mean})", "°C", lambda r: r["mean_temp_c"]),
    ]
    charts = {}
    for key, title, unit, value in specs:
        figure = _gpu_figure(title, unit, _per_gpu(usage, value), names, buckets=buckets, gap=_one_bucket(buckets))
        figure.update_layout(showlegend=True)  # a lone line still says which GPUs it draws ("8 x H100 ...")
        if key in ("util", "memory"):
            figure.update_yaxes(rangemode="tozero")
        charts[key] = figure_html(figure, div_id=f"chart-{key}")
    return charts


def _serving_charts(serving: list[dict[str, Any]], buckets: Buckets) -> list[str]:
    granularity = buckets.granularity
    throughput: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    latency: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    full: dict[str, str] = {}  # a series named by the model's short name: its whole name, for the hover
    shorts = short_labels([row["endpoint"] for row in serving])  # two models never share a line
    for row in sorted(serving, key=lambda row: (row["endpoint"], row["bucket"])):
        name, bucket, histogram = shorts[row["endpoint"]], row["bucket"], row["ttft"]
        full[name] = row["endpoint"]
        throughput[name].append((bucket, row["tokens"] / row["observed_s"] if row["observed_s"] else None))
        for q, label in ((0.5, "P50"), (0.99, "P99")):
            value = histogram_quantile(q, histogram) if histogram else None
            latency[f"{label} {name}"].append((bucket, value * 1000 if value is not None else None))
            full[f"{label} {name}"] = f"{label} {row['endpoint']}"
    gap = _one_bucket(buckets)
    return [
        figure_html(
            series_lines(
                f"Tokens per second (mean per {granularity})",
                "tokens/s",
                throughput,
                buckets=buckets,
                gap=gap,
                full_names=full,
            ),
            div_id="chart-tokens",
        ),
        figure_html(
            series_lines(
                f"Time to first token (per {granularity})", "ms", latency, buckets=buckets, gap=gap, full_names=full
            ),
            div_id="chart-ttft",
        ),
    ]


def recent_power_by_slot(*, gpus: list[Gpu], now: datetime) -> dict[str, list[tuple[datetime, float | None]]]:
    """Per GPU, its raw power over ``[now - RECENT_RAW, now)``, a mean per ``RECENT_SLOT_S`` (slot start, W).

    The same few points per GPU at any sample rate: an index range per GPU of the
    raw table (primary key node, gpu, ts; today's partition) averaged in SQL, so neither
    the rows sent nor the chart grow with the collectors' rate.
    """
    index = {gpu.pk: gpu.index for gpu in gpus}
    # Bounded on both sides: samples stamped ahead of the server's clock would add slots.
    recent = GpuSample.objects.filter(
        node_id__in={gpu.node_id for gpu in gpus}, gpu_id__in=list(index), ts__gte=now - RECENT_RAW, ts__lt=now
    )
    slots = (
        recent.annotate(slot=_EpochSlot("ts", seconds=RECENT_SLOT_S))
        .values("gpu_id", "slot")
        .annotate(power_w=Avg("power_w"))
        .order_by("gpu_id", "slot")
    )
    series: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    for row in slots:
        slot_start = datetime.fromtimestamp(row["slot"] * RECENT_SLOT_S, tz=UTC)
        series[f"GPU {index[row['gpu_id']]}"].append((slot_start, row["power_w"]))
    return dict(series)


def _sample_interval_s(node: Node) -> float:
    """The node's collector sample interval (what its last batch said); 1 s before any batch."""
    status = getattr(node, "collector_status", None)
    return float(status.sample_interval_s) if status is not None else 1.0


def recent_missing_spans(
    series: dict[str, list[tuple[datetime, float | None]]], *, start: datetime, end: datetime, gap: timedelta
) -> list[tuple[datetime, datetime]]:
    """Stretches of ``[start, end)`` longer than ``gap`` in which no GPU has a slot: the collector sent nothing."""
    slots = sorted({moment for points in series.values() for moment, _ in points})
    spans, previous = [], start - timedelta(seconds=RECENT_SLOT_S)
    for moment in [*slots, end]:
        if moment - previous > gap:
            spans.append((max(previous + timedelta(seconds=RECENT_SLOT_S), start), min(moment, end)))
        previous = moment
    return spans


def _recent_raw_chart(gpus: list[Gpu], now: datetime, *, interval_s: float, names: dict[str, str]) -> str:
    """Lines break where slots lie further apart than one slot plus the collector's interval; gaps are shaded."""
    minutes = int(RECENT_RAW.total_seconds() // 60)
    title = f"Power, last {minutes} minutes (raw samples, mean per {RECENT_SLOT_S} s)"
    series = recent_power_by_slot(gpus=gpus, now=now)
    gap = timedelta(seconds=RECENT_SLOT_S + interval_s)
    missing = recent_missing_spans(series, start=now - RECENT_RAW, end=now, gap=gap)
    figure = _gpu_figure(title, "W", series, names, gap=gap, missing_spans=missing)
    figure.update_xaxes(type="date", range=[now - RECENT_RAW, now], tickformat="%H:%M:%S", hoverformat="%H:%M:%S UTC")
    if not series:
        figure.add_annotation(
            text=f"no samples in the last {minutes} minutes", xref="paper", yref="paper", x=0.5, y=0.5,
            showarrow=False, font={"color": "#5b6575"},
        )  # fmt: skip
    return figure_html(figure, div_id="chart-recent")


class _EpochSlot(Func):
    """The number of the ``seconds``-long slot since the Unix epoch that a timestamp falls in."""

    template = "FLOOR(EXTRACT(EPOCH FROM %(expressions)s) / %(seconds)d)::bigint"  # PostgreSQL
    output_field = IntegerField()

    def __init__(self, expression: str, *, seconds: int) -> None:
        super().__init__(expression, seconds=int(seconds))

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        # SQLite keeps timestamps as UTC text; julianday() reads them (to ~50 µs, plenty for slots of seconds).
        template = "CAST((julianday(%(expressions)s) - 2440587.5) * 86400.0 / %(seconds)d AS INTEGER)"
        return self.as_sql(compiler, connection, template=template, **extra_context)


def _ledger_rows(node: Node, start: datetime, end: datetime) -> list[NodeHourLedger]:
    """The node's latest lines, each with the kind of its grid intensity (live, annual, simulated ...)."""
    lines = list(
        NodeHourLedger.objects.filter(node=node, hour_start__gte=start, hour_start__lt=end).order_by("-hour_start")[
            :LEDGER_ROWS
        ]
    )
    for line in lines:
        line.location_kind = grid_kind(vars(line))  # type: ignore[attr-defined]
    return lines
