"""The ledger's serving days: each endpoint's hourly serving usage summed per UTC day (``LedgerServingDay``).

The fleet comparison (``reports.selectors.comparison``) sums a period's endpoint-hours per endpoint, bucket
layout and GPU model on the node-hour's line: 136k endpoint-hours for 90 days x 500 GPUs, each with its
latency histograms read out of JSON. The same sums a day at a time are 24 times fewer rows; the comparison
reads the whole days of its period from them and the rest (the period's first and last part days, the day in
progress, node-days with an hour still to be (re)computed) from the hours.

Exact and never stale: ``serving_days_recompute`` sums a node's days again from its endpoint-hours and lines
as they stand, in the ledger's transaction for the node's hours of those days
(``accounting.node_hour_lines._lines_store``), and where lines are deleted in the admin, both through
``accounting.node_days.node_days_recompute``, which counts the node's lines of those days too. An endpoint-hour is
rewritten only by the rollup, which marks its node-hour (``telemetry.UsageChanged``) in the same transaction;
the mark keeps the node-day out of the rows (``reports.selectors.complete``: a marked node-hour is not final)
until the ledger has recomputed the hour, and with it the day. A deleted node or endpoint takes its rows along.
Integers (tokens, requests, bucket counts) add up exactly; the float sums (seconds, latency sums) are added
in another order than one query over the hours would add them, as PostgreSQL's parallel plans already do.

Rows written any other way (a bench seed's SQL, a restore of the usage alone) are summed again with
``serving_days_rebuild``, which ``accounting.site_hours.site_hours_rebuild`` (``manage.py ledger_site_hours``) runs
too (through ``accounting.node_days``), as its check checks them.

On a Citus coordinator the rows are distributed by node, in the group of the lines and endpoint-hours (accounting
migration 0035): a node's rows lie on its shard, and writing them keeps the ledger's transaction on that shard.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.models.functions import TruncDay

from accounting.models import LedgerServingDay, NodeHourLedger
from accounting.served_hours import sum_same
from common.periods import DAY, day_of
from telemetry.models import EndpointHourUsage

__all__ = [
    "KEYS",
    "serving_days_check",
    "serving_days_fill",
    "serving_days_in_use",
    "serving_days_rebuild",
    "serving_days_recompute",
]

# What a row is keyed by, beside its node and day: as the comparison groups the endpoint-hours.
KEYS = ("endpoint_id", "gpu_model", "ttft_bucket_bounds_s", "itl_bucket_bounds_s", "ttft_sum_known", "itl_sum_known")
# The latency histograms an endpoint-hour may hold: time to first token, inter-token latency.
_LATENCIES = ("ttft", "itl")
# The endpoint-hour columns a row is summed from.
_USAGE_COLUMNS = (
    "endpoint_id",
    "hour_start",
    "prompt_tokens",
    "generation_tokens",
    "requests",
    "cached_prompt_tokens",
    "observed_s",
    *(f"{p}_{c}" for p in _LATENCIES for c in ("bucket_bounds_s", "bucket_counts", "sum_s")),
)


def serving_days_in_use(using: Any = connection) -> bool:
    """Whether this database keeps (and the comparison reads) the serving days: every one, on Citus distributed
    by node like the lines (accounting 0035). The switch that tests and ``bench.ledger`` turn off to read the
    hours alone."""
    return True


def serving_days_recompute(node_hours: Iterable[tuple[int, datetime]]) -> int:
    """Sum again the days of each ``(node id, hour start)``; return how many rows were written.

    Call it in the transaction that changed the lines or the usage (it opens one when called outside)."""
    if not serving_days_in_use():
        return 0
    days: dict[int, set[datetime]] = defaultdict(set)
    for node_id, hour in node_hours:
        days[node_id].add(day_of(hour))
    written = 0
    with transaction.atomic():
        for node_id in sorted(days):
            written += _node_days_store(node_id, sorted(days[node_id]))
    return written


def serving_days_rebuild(*, organization_ids: Collection[int] | None = None) -> int:
    """Sum every row (of ``organization_ids``, or of all) again from the endpoint-hours and lines."""
    if not serving_days_in_use():
        return 0
    written = 0
    with transaction.atomic():
        _rows_of(organization_ids).delete()
        for node_id, days in _days_held(organization_ids).items():
            written += _node_days_store(node_id, days)
    return written


def serving_days_fill(usage_model: Any, line_model: Any, row_model: Any, using: Any = connection) -> int:
    """Sum every endpoint-hour of ``usage_model`` into ``row_model`` (empty): the migration that adds the rows
    runs it on its own (historical) models."""
    if not serving_days_in_use(using):
        return 0
    models = {"usage_model": usage_model, "line_model": line_model, "row_model": row_model}
    held = _days_held(None, usage_model)
    return sum(_node_days_store(node_id, days, **models) for node_id, days in held.items())


def serving_days_check(*, organization_ids: Collection[int] | None = None) -> list[str]:
    """How the rows differ from the endpoint-hours and lines, per node-day (nothing: they agree). Reads both."""
    if not serving_days_in_use():
        return []
    stored: dict[tuple[Any, ...], dict[str, Any]] = {}
    problems = []
    for row in _rows_of(organization_ids).values("node_id", "day_start", *KEYS, *_FIGURES):
        key = _key(row)
        if key in stored:
            problems.append(f"two serving-day rows for {_named(key)}")
        stored[key] = row
    expected: dict[tuple[Any, ...], dict[str, Any]] = {}
    for node_id, days in _days_held(organization_ids).items():
        for row in _node_days_summed(node_id, days):
            expected[_key(row)] = row
    for key in sorted(stored.keys() | expected.keys(), key=repr):
        have, want = stored.get(key), expected.get(key)
        if have is None or want is None:
            problems.append(f"{'missing' if have is None else 'extra'} serving-day row {_named(key)}")
            continue
        problems += [
            f"serving day {name} {have[name]} != hours' {want[name]} in {_named(key)}"
            for name in _FIGURES
            if not sum_same(have[name], want[name])
        ]
    return problems


# A row's figures (every column but its node, day and keys).
_FIGURES = tuple(
    f.attname for f in LedgerServingDay._meta.concrete_fields if f.attname not in {"id", "node_id", "day_start", *KEYS}
)


@dataclass
class _Sums:
    """What one row adds up while its endpoint-hours are read."""

    endpoint_hours: int = 0
    serving_s: float = 0.0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    requests: int = 0
    cached_prompt_tokens: int | None = None
    prompt_tokens_cache_known: int = 0
    histograms: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_LATENCIES, 0))
    sums_s: dict[str, float | None] = field(default_factory=lambda: dict.fromkeys(_LATENCIES))
    counts: dict[str, list[int] | None] = field(default_factory=lambda: dict.fromkeys(_LATENCIES))

    def add(self, hour: dict[str, Any]) -> None:
        self.endpoint_hours += 1
        self.prompt_tokens += hour["prompt_tokens"]
        self.generation_tokens += hour["generation_tokens"]
        if hour["prompt_tokens"] > 0 or hour["generation_tokens"] > 0:  # an hour that served a token
            self.serving_s += hour["observed_s"]
            self.requests += hour["requests"]
        if hour["cached_prompt_tokens"] is not None:
            self.cached_prompt_tokens = (self.cached_prompt_tokens or 0) + hour["cached_prompt_tokens"]
            self.prompt_tokens_cache_known += hour["prompt_tokens"]
        for prefix in _LATENCIES:
            counts = hour[f"{prefix}_bucket_counts"]
            if counts is None:
                continue
            self.histograms[prefix] += 1
            if (sum_s := hour[f"{prefix}_sum_s"]) is not None:
                self.sums_s[prefix] = (self.sums_s[prefix] or 0.0) + sum_s
            self.counts[prefix] = _counts_add(self.counts[prefix], counts)

    def row(self) -> dict[str, Any]:
        latencies: dict[str, Any] = {}
        for prefix in _LATENCIES:
            latencies |= {
                f"{prefix}_histograms": self.histograms[prefix],
                f"{prefix}_sum_s": self.sums_s[prefix],
                f"{prefix}_bucket_counts": self.counts[prefix],
            }
        return {
            "endpoint_hours": self.endpoint_hours,
            "serving_s": self.serving_s,
            "prompt_tokens": self.prompt_tokens,
            "generation_tokens": self.generation_tokens,
            "requests": self.requests,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "prompt_tokens_cache_known": self.prompt_tokens_cache_known,
            **latencies,
        }


def _counts_add(summed: list[int] | None, counts: Iterable[int | float]) -> list[int]:
    """Bucket counts added index by index, as the comparison's query adds each bucket of the hours it reads (a
    count stored as a float taken as an integer)."""
    added = list(summed or [])
    for index, count in enumerate(counts):
        if index < len(added):
            added[index] += int(count)
        else:
            added.append(int(count))
    return added


def _node_days_summed(
    node_id: int, days: list[datetime], *, usage_model: Any = EndpointHourUsage, line_model: Any = NodeHourLedger
) -> list[dict[str, Any]]:
    """The rows of the node's ``days``, summed from its endpoint-hours and the GPU model on their hours' lines.

    Every statement names the node."""
    wanted = set(days)
    low, high = days[0], days[-1] + DAY
    lines = line_model.objects.filter(node_id=node_id, hour_start__gte=low, hour_start__lt=high)
    gpu_model = dict(lines.values_list("hour_start", "gpu_model"))
    usage = usage_model.objects.filter(node_id=node_id, hour_start__gte=low, hour_start__lt=high)
    sums: dict[tuple[Any, ...], _Sums] = defaultdict(_Sums)
    for hour in usage.values(*_USAGE_COLUMNS).order_by("endpoint_id", "hour_start"):
        day = day_of(hour["hour_start"])
        if day not in wanted:
            continue
        key = (
            day,
            hour["endpoint_id"],
            gpu_model.get(hour["hour_start"]),
            tuple(hour["ttft_bucket_bounds_s"] or ()),  # a layout as a key (stored as the JSON list it was)
            tuple(hour["itl_bucket_bounds_s"] or ()),
            hour["ttft_sum_s"] is not None,
            hour["itl_sum_s"] is not None,
        )
        sums[key].add(hour)
    return [
        {"node_id": node_id, "day_start": key[0], **dict(zip(KEYS, key[1:], strict=True)), **summed.row()}
        for key, summed in sums.items()
    ]


def _node_days_store(node_id: int, days: list[datetime], *, row_model: Any = LedgerServingDay, **models: Any) -> int:
    """Replace the node's rows of ``days`` with their sums; return how many were written."""
    row_model.objects.filter(node_id=node_id, day_start__in=days).delete()
    rows = [row_model(**row) for row in _node_days_summed(node_id, days, **models)]
    row_model.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


def _days_held(
    organization_ids: Collection[int] | None, usage_model: Any = EndpointHourUsage
) -> dict[int, list[datetime]]:
    """Each node's days with endpoint-hours (of ``organization_ids``, or of all)."""
    usage = usage_model.objects.all()
    if organization_ids is not None:
        usage = usage.filter(node__fleet__organization_id__in=organization_ids)
    days: dict[int, list[datetime]] = defaultdict(list)
    held = usage.annotate(day=TruncDay("hour_start", tzinfo=UTC)).values_list("node_id", "day").distinct()
    for node_id, day in held.order_by("node_id", "day"):
        days[node_id].append(day)
    return dict(days)


def _rows_of(organization_ids: Collection[int] | None) -> Any:
    rows = LedgerServingDay.objects.all()
    return rows if organization_ids is None else rows.filter(node__fleet__organization_id__in=organization_ids)


def _hashable(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(tuple(part) if isinstance(part, list) else part for part in key)


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return _hashable((row["node_id"], row["day_start"], *(row[name] for name in KEYS)))


def _named(key: tuple[Any, ...]) -> str:
    return f"node {key[0]} {key[1]:%Y-%m-%d} " + ", ".join(f"{n}={v}" for n, v in zip(KEYS, key[2:], strict=True))
