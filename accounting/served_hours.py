"""The ledger's served site-hours: lines one endpoint served whole, summed per LLM model, written with the lines.

The load curves (``reports.curves``) sum every fleet-hour's node-hours per LLM model with their TTFT
histograms: read from the lines and the endpoint-hours, that is a join of two tables of one row per
node-hour (136k each for 90 days x 500 GPUs) and a text aggregate that PostgreSQL cannot run in parallel.
A node-hour with one endpoint-hour with output tokens (the endpoint ``NodeHourLedger.sole_endpoint`` names)
is all of that endpoint's LLM model's (its share is exactly 1), so such lines add up per site-hour, fleet,
GPU model, currency, LLM model, server kind and TTFT bucket layout with nothing shared: ``LedgerServedHour``
holds those sums (the lines' figures; the endpoint-hours' requests, output tokens and histograms), one row
per a few nodes. Which node-hours those are is read from the endpoint-hours themselves, as the curves
read them from the lines (``reports.curves._single_hours``).

Written where and when the site-hours are (``accounting.site_hours``, which calls this module under its
lock per site): in the transaction that stores the lines, when a node is deleted, when lines are deleted
in the admin, and by ``manage.py ledger_site_hours`` (which also checks them). Two things outside the
lines change what a row holds, and sum the node-hours they concern again (``accounting.apps``): an
endpoint saved anew (ingest saves the server kind a collector now reports) and a deleted endpoint. Rows
hold the lines as stored: between a rollup that rewrites an endpoint-hour and the ledger's recomputation
of its line, the curves show that node-hour as the line does, as it was.

Sums are exact: ``Decimal`` addition of the lines' ``numeric`` columns, integer token and bucket counts.
As the site-hours, the rows are neither written nor read on a Citus coordinator (``site_hours_in_use``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, QuerySet

from accounting.ledger.units import ZERO
from accounting.models import LedgerServedHour
from telemetry.histogram import bucket_counts_sum

__all__ = [
    "KEYS",
    "SUMMED",
    "served_rows",
    "served_rows_check",
    "served_rows_delete",
    "served_rows_store",
    "sum_same",
]

# What a row is keyed by: the line's (organization to currency), the endpoint's, the endpoint-hour's layout.
KEYS = ("organization_id", "site_id", "fleet_id", "hour_start", "gpu_model", "currency", "llm_model",
        "endpoint_kind", "ttft_bucket_bounds_s")  # fmt: skip
# The line's figures summed (``location_co2e_g`` over the lines with a known intensity).
SUMMED = ("gpu_h", "cost", "it_kwh", "facility_kwh", "location_co2e_g", "embodied_co2e_g_central",
          "embodied_unknown_gpu_h")  # fmt: skip
_FIGURES = ("lines", "unpriced_hours", "requests", "generation_tokens", *SUMMED, "unknown_intensity_kwh",
            "ttft_bucket_counts")  # fmt: skip

# What is read of a line (then ``SUMMED``) and of an endpoint-hour.
_LINE_COLUMNS = ("organization_id", "site_id", "fleet_id", "hour_start", "gpu_model", "currency", "node_id")
_USAGE_COLUMNS = ("node_id", "hour_start", "endpoint__model_name", "endpoint__kind", "requests", "generation_tokens",
                  "ttft_bucket_bounds_s", "ttft_bucket_counts")  # fmt: skip

# Up to this many hours are asked for one by one (``IN``), more as the range they span.
_HOURS_LISTED = 200


def _sums_start() -> dict[str, Decimal | None]:
    """Every sum at zero; ``location_co2e_g`` unknown until a line with a known intensity adds to it."""
    return {name: None if name == "location_co2e_g" else ZERO for name in SUMMED}


@dataclass(slots=True)
class _Row:
    """One row's sums as they are added up."""

    lines: int = 0
    unpriced_hours: int = 0
    requests: int = 0
    generation_tokens: int = 0
    sums: dict[str, Decimal | None] = field(default_factory=_sums_start)
    unknown_intensity_kwh: Decimal = ZERO
    counts: list[Any] = field(default_factory=list)


def served_rows(lines: QuerySet[Any], *, usage_model: Any = None, row_model: Any = LedgerServedHour) -> Iterator[Any]:
    """The rows ``lines`` sum to (unsaved): those lines with output tokens whose node-hour has one endpoint-hour
    with output tokens, each with that endpoint-hour (``unpriced_hours``: as the site-hours count them).
    ``usage_model``, ``row_model``: the endpoint-hours' and the rows' models (a migration's
    historical ones).

    Two queries: the lines, then the endpoint-hours with output tokens (with their endpoint's LLM model and
    server kind) of the lines' nodes over the lines' hours."""
    from accounting.site_hours import unpriced_with_telemetry  # it calls this module: imported when called

    if usage_model is None:
        from telemetry.models import EndpointHourUsage as usage_model

    with_tokens = (
        lines.filter(generation_tokens__gt=0)
        .annotate(k_unpriced=ExpressionWrapper(unpriced_with_telemetry(), output_field=BooleanField()))
        .values_list(*_LINE_COLUMNS, *SUMMED, "k_unpriced")
        .order_by()
    )
    rows = list(with_tokens)
    if not rows:
        return
    hours = sorted({row[3] for row in rows})
    # A ledger store's few hours by the hour's index; a rebuild's many as a range.
    when = {"hour_start__in": hours} if len(hours) <= _HOURS_LISTED else {"hour_start__range": (hours[0], hours[-1])}
    usage = usage_model.objects.filter(node_id__in=sorted({row[6] for row in rows}), generation_tokens__gt=0, **when)
    served: dict[tuple[int, datetime], list[Any]] = defaultdict(list)
    for node_id, hour, *rest in usage.values_list(*_USAGE_COLUMNS).order_by():
        served[(node_id, hour)].append(rest)
    grouped: dict[tuple[Any, ...], _Row] = defaultdict(_Row)
    for organization_id, site_id, fleet_id, hour, gpu_model, currency, node_id, *rest in rows:
        *figures, is_unpriced = rest
        endpoint_hours = served.get((node_id, hour), ())
        if len(endpoint_hours) != 1:  # shared among several, or none left: not one model's whole
            continue
        ((model, kind, requests, tokens, bounds, counts),) = endpoint_hours
        layout = tuple(float(bound) for bound in bounds) if bounds else ()
        row = grouped[(organization_id, site_id, fleet_id, hour, gpu_model, currency, model, kind, layout)]
        row.lines += 1
        row.unpriced_hours += bool(is_unpriced)
        row.requests += requests
        row.generation_tokens += tokens
        values = dict(zip(SUMMED, figures, strict=True))
        for name, value in values.items():
            if value is not None:
                total = row.sums[name]
                row.sums[name] = value if total is None else total + value
        if values["location_co2e_g"] is None:
            row.unknown_intensity_kwh += values["facility_kwh"]
        row.counts.append(counts)
    # The sums the rows' table holds: a migration's own model may predate a column added since (0030's fill runs
    # before 0038 adds embodied_unknown_gpu_h, which 0039 then sums again).
    stored = {field.name for field in row_model._meta.concrete_fields}
    for (organization_id, site_id, fleet_id, hour, gpu_model, currency, model, kind, layout), row in grouped.items():
        counts = bucket_counts_sum(len(layout) + 1, row.counts) if layout else None
        yield row_model(
            organization_id=organization_id,
            site_id=site_id,
            fleet_id=fleet_id,
            hour_start=hour,
            gpu_model=gpu_model,
            currency=currency,
            llm_model=model,
            endpoint_kind=kind,
            ttft_bucket_bounds_s=list(layout) if layout else None,
            lines=row.lines,
            unpriced_hours=row.unpriced_hours,
            requests=row.requests,
            generation_tokens=row.generation_tokens,
            **{name: value for name, value in row.sums.items() if name in stored},
            unknown_intensity_kwh=row.unknown_intensity_kwh,
            ttft_bucket_counts=None if counts is None else list(counts),
        )


def served_rows_store(lines: QuerySet[Any], *, usage_model: Any = None,
                      row_model: Any = LedgerServedHour) -> int:  # fmt: skip
    """Insert the rows ``lines`` sum to (their old rows deleted by the caller); return how many."""
    rows = list(served_rows(lines, usage_model=usage_model, row_model=row_model))
    row_model.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


def served_rows_delete(*, site_id: int, hours: Collection[datetime]) -> None:
    """Delete the rows of the site's ``hours``."""
    LedgerServedHour.objects.filter(site_id=site_id, hour_start__in=list(hours)).delete()


def served_rows_check(stored: QuerySet[LedgerServedHour], lines: QuerySet[Any]) -> list[str]:
    """How the ``stored`` rows differ from the rows ``lines`` sum to (figures compared with ``sum_same``)."""
    have = _by_key(row for row in stored)
    want = _by_key(served_rows(lines))
    problems = [f"two served rows for {key}" for key in have.pop(None, [])]
    for key in sorted(have.keys() | want.keys(), key=repr):
        if key not in want or key not in have:
            problems.append(f"{'missing' if key not in have else 'extra'} served row {key}")
            continue
        for name in _FIGURES:
            a, b = getattr(have[key], name), getattr(want[key], name)
            if not sum_same(a, b):
                problems.append(f"served {name} {a} != lines' {b} in {key}")
    return problems


def _by_key(rows: Iterable[LedgerServedHour]) -> dict[Any, Any]:
    """Rows by their keys (``None``: the keys held twice)."""
    keyed: dict[Any, Any] = {}
    for row in rows:
        key = tuple(
            tuple(value) if isinstance(value, list) else value for value in (getattr(row, name) for name in KEYS)
        )
        if key in keyed:
            keyed.setdefault(None, []).append(key)
        keyed[key] = row
    return keyed


def sum_same(have: Any, want: Any) -> bool:
    """Equal: to the last digit for ``numeric`` sums on PostgreSQL; within a double's precision for floats (added
    in another order) and on SQLite (which sums decimals as doubles); anything but a number (a list of bucket
    counts) equal."""
    if have is None or want is None:
        return have is want
    if isinstance(want, bool) or not isinstance(want, int | float | Decimal):
        return bool(have == want)
    if isinstance(want, float) or connection.vendor != "postgresql":
        return abs(float(have) - float(want)) <= 1e-12 * max(abs(float(want)), 1.0)
    return bool(have == want)
