"""Node pages for engineers: collector health, per-GPU telemetry, serving latency and the node's ledger.

Everything is read from hourly usage and the stored ledger, bounded by the
period; the one exception is the recent raw view (the last few minutes of 1 Hz
samples), bounded in time.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Avg, Max, Sum
from django.db.models.functions import TruncDay, TruncHour, TruncMonth
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting.charts import figure_html, series_lines
from accounting.grid.hours import floor_hour
from accounting.models import NodeHourLedger
from fleets.models import Node
from fleets.web import page_context
from telemetry.histogram import Histogram, histogram_quantile
from telemetry.models import GpuSample
from telemetry.selectors import endpoint_hour_usage_for_node, gpu_hour_usage_for_node, node_gaps
from telemetry.status_api import node_status_data, node_statuses

RECENT_RAW = timedelta(minutes=10)
LEDGER_ROWS = 168  # a week of hours: the table is for reading, the API for exporting
GIB = 1024**3
_TRUNC = {"hour": TruncHour, "day": TruncDay, "month": TruncMonth}


@login_required
def nodes_page(request: HttpRequest) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    organization, period = context["organization"], context["period"]
    nodes = node_statuses(user=request.user).filter(fleet__organization=organization)
    totals = _ledger_totals_by_node(organization, period.start, period.end)
    now = timezone.now()
    rows = [{**node_status_data(node, now=now), "totals": totals.get(node.pk, {})} for node in nodes]
    return render(request, "accounting/nodes.html", {**context, "section": "nodes", "rows": rows})


def _ledger_totals_by_node(organization: Any, start: datetime, end: datetime) -> dict[int, dict[str, Any]]:
    lines = NodeHourLedger.objects.filter(organization=organization, hour_start__gte=start, hour_start__lt=end)
    sums = lines.values("node_id", "currency").annotate(
        cost=Sum("cost"),
        facility_kwh=Sum("facility_kwh"),
        prompt=Sum("prompt_tokens"),
        generation=Sum("generation_tokens"),
    )
    return {row["node_id"]: dict(row) for row in sums}


@login_required
def node_page(request: HttpRequest, node_id: int) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    node = node_statuses(user=request.user).filter(pk=node_id).first()
    if node is None:
        raise Http404("no such node in your organizations")
    period, now = context["period"], timezone.now()
    usage = gpu_usage_by_bucket(node_id=node.pk, start=period.start, end=period.end, granularity=period.granularity)
    serving = list(endpoint_hour_usage_for_node(node_id=node.pk, start=period.start, end=period.end))
    return render(
        request,
        "accounting/node.html",
        {
            **context,
            "section": "nodes",
            "node": node,
            "status": node_status_data(node, now=now),
            "charts": _gpu_charts(usage, period.granularity)
            + _serving_charts(serving)
            + [_recent_raw_chart(node, now)],
            "has_usage": bool(usage),
            "gaps": node_gaps(node_id=node.pk, start=period.start, end=min(period.end, floor_hour(now))),
            "ledger": _ledger_rows(node, period.start, period.end),
        },
    )


def gpu_usage_by_bucket(*, node_id: int, start: datetime, end: datetime, granularity: str) -> list[dict[str, Any]]:
    """Per GPU and hour, day or month: the period's hourly usage summed or averaged in SQL.

    A quarter at daily granularity is 90 points per GPU and chart, not 2,160.
    """
    rows = gpu_hour_usage_for_node(node_id=node_id, start=start, end=end).order_by()
    buckets = (
        rows.annotate(bucket=_TRUNC[granularity]("hour_start", tzinfo=UTC))
        .values("gpu__index", "bucket")
        .annotate(
            energy_j=Sum("energy_j"),
            mean_power_w=Avg("mean_power_w"),
            mean_util_pct=Avg("mean_util_pct"),
            max_mem_used_bytes=Max("max_mem_used_bytes"),
            mean_temp_c=Avg("mean_temp_c"),
        )
        .order_by("gpu__index", "bucket")
    )
    return [dict(row) for row in buckets]


def _per_gpu(usage: list[dict[str, Any]], value: Any) -> dict[str, list[tuple[datetime, float | None]]]:
    series: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    for row in usage:
        series[f"GPU {row['gpu__index']}"].append((row["bucket"], value(row)))
    return dict(series)


def _memory_gib(row: dict[str, Any]) -> float | None:
    return row["max_mem_used_bytes"] / GIB if row["max_mem_used_bytes"] else None


def _gpu_charts(usage: list[dict[str, Any]], granularity: str) -> list[str]:
    mean = f"mean per {granularity}"
    specs = [
        ("power", f"Power per GPU ({mean})", "W", lambda r: r["mean_power_w"]),
        ("energy", "Energy per GPU", f"kWh per {granularity}", lambda r: r["energy_j"] / 3.6e6),
        ("util", f"GPU utilization ({mean})", "%", lambda r: r["mean_util_pct"]),
        ("memory", f"Memory used (max per {granularity})", "GiB", _memory_gib),
        ("temp", f"Temperature ({mean})", "°C", lambda r: r["mean_temp_c"]),
    ]
    return [
        figure_html(series_lines(title, unit, _per_gpu(usage, value)), div_id=f"chart-{key}")
        for key, title, unit, value in specs
    ]


def _serving_charts(serving: list[Any]) -> list[str]:
    throughput: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    latency: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    for row in serving:
        name = row.endpoint.url
        tokens = row.prompt_tokens + row.generation_tokens
        throughput[name].append((row.hour_start, tokens / row.observed_s if row.observed_s else None))
        histogram = _histogram(row)
        for q, label in ((0.5, "P50"), (0.99, "P99")):
            value = histogram_quantile(q, histogram) if histogram else None
            latency[f"{label} {name}"].append((row.hour_start, value * 1000 if value is not None else None))
    return [
        figure_html(series_lines("Tokens per second (hourly mean)", "tokens/s", throughput), div_id="chart-tokens"),
        figure_html(series_lines("Time to first token", "ms", latency), div_id="chart-ttft"),
    ]


def _histogram(row: Any) -> Histogram | None:
    if not row.ttft_bucket_counts:
        return None
    return Histogram(tuple(row.ttft_bucket_bounds_s), tuple(row.ttft_bucket_counts))


def _recent_raw_chart(node: Node, now: datetime) -> str:
    """The last minutes of raw 1 Hz power: bounded in time, so it stays cheap on any fleet size."""
    recent = GpuSample.objects.filter(gpu__node=node, ts__gte=now - RECENT_RAW).order_by("-ts")
    # At most a sample a second per GPU, whatever rate the collector runs at.
    limit = int(RECENT_RAW.total_seconds()) * max(1, node.gpus.count())
    rows = reversed(list(recent.values_list("gpu__index", "ts", "power_w")[:limit]))
    series: dict[str, list[tuple[datetime, float | None]]] = defaultdict(list)
    for index, ts, power_w in rows:
        series[f"GPU {index}"].append((ts, power_w))
    title = f"Power, last {int(RECENT_RAW.total_seconds() // 60)} minutes (raw samples)"
    return figure_html(series_lines(title, "W", dict(series)), div_id="chart-recent")


def _ledger_rows(node: Node, start: datetime, end: datetime) -> list[NodeHourLedger]:
    lines = NodeHourLedger.objects.filter(node=node, hour_start__gte=start, hour_start__lt=end)
    return list(lines.order_by("-hour_start")[:LEDGER_ROWS])
