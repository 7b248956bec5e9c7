"""Compute and store ledger lines for node-hours, from hourly usage, prices and grid intensity.

``ledger_node_hours_compute`` recomputes and replaces whole lines (never
increments), so running it twice, or on two workers, gives the same table.
``ledger_pending_run`` consumes the node-hours whose inputs changed. A locked hour's
line is the exception: it is never rewritten, and what would change it is booked as
a correction in the first open period (``accounting.corrections``).

A line of the hour in progress is provisional: it charges the time held up to
``now`` (never the future minutes of the hour) and leaves the hour marked for
its end (``LedgerPending.marked_at`` = the hour's end), so that the line is
recomputed once the hour is over, with its last samples, whatever else happens.
Reports read an hour as final only once no mark is left (``reports.selectors.complete``).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import CharField
from django.utils import timezone

from accounting.assets import card_in_service_at, host_in_service_at, owned_price_of
from accounting.corrections import ledger_reopened_mark, ledger_rows_settle
from accounting.ledger import (
    AmortizationMethod,
    GpuHourInput,
    IntensityFactor,
    LedgerPolicy,
    NodeHourInput,
    NodeHourLine,
    Pricing,
    RatePer,
    RentedPricing,
    build_node_hour_line,
    hours_held,
)
from accounting.ledger.fx import FxRate, RateKind, RateTable, month_of
from accounting.ledger.line import NO_PRICE_ID, line_columns
from accounting.ledger.units import S_PER_H
from accounting.models import LedgerPending, LedgerSettings, NodeHourLedger
from accounting.node_days import node_days_recompute
from accounting.prices import (
    market_periods,
    pricing_at,
    pricing_periods,
    pue_periods,
    tariff_periods,
    tariff_price,
    tax_periods,
)
from accounting.profiles import (
    UNKNOWN_MODEL,
    gpu_embodied_asset,
    gpu_embodied_until,
    hardware_profiles,
    host_embodied_until,
    profile_for_gpu,
)
from accounting.rates import rate_table
from accounting.site_hours import site_hours_changed, site_hours_settle
from accounting.tariff import in_force
from common.periods import HOUR
from common.stages import NodeHourStage
from fleets.models import Gpu, GpuInstallation, Node
from grid.hours import floor_hour
from grid.models import GridIntensity
from grid.stored_intensity import intensity_for_hours
from telemetry.installations import installations_in_hour
from telemetry.models import (
    EndpointHourUsage,
    GpuHourUsage,
    NodeHourUsage,
    ServingEndpoint,
    UsageChanged,
)
from telemetry.parking import NodeHourQueue, columns_fit, queue_run, queued_nodes, rows_claim

logger = logging.getLogger(__name__)

UNPRICED = NO_PRICE_ID
# A node without a price in force is charged nothing for hardware and its lines say so.
_NO_PRICE = RentedPricing(Decimal(0), RatePer.NODE, False, UNPRICED)


@dataclass(frozen=True)
class _NodeContext:
    """What stays the same across the hours of one node: inventory, assets, prices, intensity."""

    node: Node
    gpus: list[Gpu]
    installations: dict[int, list[GpuInstallation]]  # per GPU; none: installed whenever the node is held
    gpu_embodied: dict[int, Any]
    gpu_embodied_until: dict[int, datetime | None]
    host_embodied: Any
    host_embodied_until: datetime | None
    host_power_w: Decimal | None  # modelled, from the profile; None without cited figures
    gpu_model: str
    tariffs: list[Any]
    market: list[Any]
    pue: list[Any]  # dated PUE rows of the site; the site's own PUE where none is in force
    taxes: list[Any]  # the site's taxes (VAT, energy tax); an hour none covers has none known
    pricing: tuple[list[Any], ...]
    intensity: dict[datetime, Any]
    policy: LedgerPolicy
    rates: RateTable  # the organization's average rates of the months computed (prices in another currency)


def ledger_policy(*, organization_id: int) -> LedgerPolicy:
    settings = LedgerSettings.objects.filter(organization_id=organization_id).first()
    if settings is None:
        return LedgerPolicy(model_host_power=django_settings.LEDGER_MODEL_HOST_POWER_DEFAULT)
    return LedgerPolicy(
        Decimal(settings.idle_util_threshold_pct), AmortizationMethod(settings.amortization), settings.model_host_power
    )


def ledger_node_hours_compute(*, node_id: int, hour_starts: Iterable[datetime], now: datetime | None = None) -> int:
    """(Re)compute the ledger lines of ``node_id`` for ``hour_starts``; return how many were written.

    ``now`` (the clock, ``timezone.now()`` unless given): an hour not over by then is held only up to
    ``now`` and stays marked for its end (see the module's docstring).
    """
    hours = sorted(set(hour_starts))
    if not hours:
        return 0
    now = now or timezone.now()
    context = _context(node_id, hours)
    usage = _gpu_usage(context.gpus, hours)
    metered = {row.hour_start: row for row in NodeHourUsage.objects.filter(node_id=node_id, hour_start__in=hours)}
    tokens = _tokens(context.node, hours)
    lines = [_line(context, hour, usage, tokens, metered.get(hour), now=now) for hour in hours]
    _lines_store(context, lines, usage, tokens, now=now)
    _open_hours_mark(node_id, [hour for hour in hours if hour + HOUR > now])
    return len(lines)


def _open_hours_mark(node_id: int, hours: list[datetime]) -> None:
    """Mark each hour still in progress for its end: the queue leaves a mark made for later alone until then."""
    marks = [LedgerPending(node_id=node_id, hour_start=hour, marked_at=hour + HOUR) for hour in hours]
    LedgerPending.objects.bulk_create(
        marks, update_conflicts=True, unique_fields=["node", "hour_start"], update_fields=["marked_at"]
    )


def _context(node_id: int, hours: list[datetime]) -> _NodeContext:
    node = Node.objects.select_related("site", "fleet").get(pk=node_id)
    gpus = list(Gpu.objects.filter(node=node).select_related("asset__node_price").order_by("index"))
    bought = owned_price_of(node)  # the asset record: its in-service date starts the cards' embodied life too
    node_rows = list(GpuInstallation.objects.filter(gpu__node=node))
    installations: dict[int, list[GpuInstallation]] = defaultdict(list)
    for row in node_rows:
        installations[row.gpu_id].append(row)
    current = [g for g in gpus if not installations[g.pk] or any(r.ended_at is None for r in installations[g.pk])]
    profiles = hardware_profiles(organization_id=node.fleet.organization_id)
    by_gpu = {gpu.pk: profile_for_gpu(gpu, profiles) for gpu in gpus}
    keys = {p.key if p else UNKNOWN_MODEL for p in by_gpu.values()}
    first_known = next((p for p in by_gpu.values() if p is not None), None)
    start, end = hours[0], hours[-1] + HOUR
    return _NodeContext(
        node=node,
        gpus=gpus,
        installations=dict(installations),
        gpu_embodied={gpu.pk: gpu_embodied_asset(gpu, by_gpu[gpu.pk]) for gpu in gpus},
        gpu_embodied_until={
            gpu.pk: gpu_embodied_until(gpu, by_gpu[gpu.pk], card_in_service_at(gpu, node, bought, node_rows))
            for gpu in gpus
        },
        host_embodied=first_known.host_asset(len(current)) if first_known and current else None,
        host_embodied_until=host_embodied_until(first_known, host_in_service_at(node, bought, node_rows)),
        host_power_w=first_known.host_power_w(len(current)) if first_known and current else None,
        gpu_model=keys.pop() if len(keys) == 1 else ("mixed" if keys else UNKNOWN_MODEL),
        tariffs=tariff_periods(site_id=node.site_id, start=start, end=end),
        market=market_periods(site_id=node.site_id, start=start, end=end),
        pue=pue_periods(site_id=node.site_id, start=start, end=end),
        taxes=tax_periods(site_id=node.site_id, start=start, end=end),
        pricing=pricing_periods(node=node, start=start, end=end),
        intensity=_intensity(node, hours),
        policy=ledger_policy(organization_id=node.fleet.organization_id),
        rates=rate_table(
            organization_id=node.fleet.organization_id, start=month_of(start), end=month_of(end), kind=RateKind.AVERAGE
        ),
    )


def _intensity(node: Node, hours: list[datetime]) -> dict[datetime, Any]:
    if not node.site.grid_zone:
        return {}
    return intensity_for_hours(zone=node.site.grid_zone, hours=hours, organization=node.site.organization)


def _gpu_usage(gpus: list[Gpu], hours: list[datetime]) -> dict[tuple[int, datetime], GpuHourUsage]:
    # The node named (its GPUs' rows lead with it; on Citus, the node's shard).
    rows = GpuHourUsage.objects.filter(
        node_id__in={gpu.node_id for gpu in gpus}, gpu__in=gpus, hour_start__gte=hours[0], hour_start__lte=hours[-1]
    )
    return {(row.gpu_id, row.hour_start): row for row in rows}


def _tokens(node: Node, hours: list[datetime]) -> dict[datetime, dict[str, Any]]:
    """Per hour: prompt, generation and prefix-cached prompt tokens of the node, requests answered, and tokens
    served per GPU id.

    ``cached`` stays ``None`` unless an endpoint-hour carried the prefix-cache counter (unknown, not zero)."""
    endpoint_gpus = defaultdict(list)
    for endpoint_id, gpu_id in ServingEndpoint.gpus.through.objects.filter(servingendpoint__node=node).values_list(
        "servingendpoint_id", "gpu_id"
    ):
        endpoint_gpus[endpoint_id].append(gpu_id)
    per_hour: dict[datetime, dict[str, Any]] = defaultdict(_nothing_served)
    rows = EndpointHourUsage.objects.filter(node=node, hour_start__gte=hours[0], hour_start__lte=hours[-1]).values_list(
        "endpoint_id", "hour_start", "prompt_tokens", "generation_tokens", "cached_prompt_tokens", "requests"
    )
    for endpoint_id, hour, prompt, generation, cached, requests in rows:
        entry = per_hour[hour]
        # The endpoint holding all of the line: the hour's only endpoint-hour, where it served output tokens.
        entry["sole_endpoint_id"] = endpoint_id if not entry["endpoint_hours"] and generation > 0 else None
        entry["endpoint_hours"] += 1
        entry["prompt"] += prompt
        entry["generation"] += generation
        entry["requests"] += requests
        if cached is not None:
            entry["cached"] = (entry["cached"] or 0) + cached
        for gpu_id in endpoint_gpus[endpoint_id]:
            entry["by_gpu"][gpu_id] = entry["by_gpu"].get(gpu_id, 0) + prompt + generation
    return per_hour


def _nothing_served() -> dict[str, Any]:
    """An hour's ``_tokens`` entry where no endpoint-hour is stored."""
    return {"prompt": 0, "generation": 0, "cached": None, "requests": 0, "by_gpu": {}, "endpoint_hours": 0,
            "sole_endpoint_id": None}  # fmt: skip


def _installed_h(context: _NodeContext, gpu: Gpu, hour: datetime, held: tuple[datetime, datetime]) -> Decimal | None:
    """Hours of the held part of ``hour`` that ``gpu`` was installed; ``None`` for a GPU with no recorded
    installation (installed whenever the node is held)."""
    rows = context.installations.get(gpu.pk)
    if not rows:
        return None
    return _span_h(installations_in_hour(rows, *held))


def _in_life_h(
    held: tuple[datetime, datetime], until: datetime | None, rows: list[GpuInstallation] | None = None
) -> Decimal | None:
    """Hours of the held span ``held`` (with ``rows``: that a card was installed) before ``until``, the end of
    an asset's embodied life: ``min(held_end, until) - held_start``. ``None`` where the life does not end
    before the span does: every held (installed) hour counts."""
    if until is None or until >= held[1]:
        return None
    before = (held[0], max(held[0], min(held[1], until)))
    return _span_h(installations_in_hour(rows, *before) if rows else before[1] - before[0])


def _span_h(span: timedelta) -> Decimal:
    """``span`` in hours, exact to the microsecond."""
    return Decimal(span // timedelta(microseconds=1)) / Decimal(3_600_000_000)


def _held_until(node: Node, now: datetime) -> datetime:
    """Until when the node is held, as far as is known at ``now``: its decommissioning, or now."""
    return min(node.decommissioned_at, now) if node.decommissioned_at else now


def _held_span(node: Node, hour: datetime, now: datetime) -> tuple[datetime, datetime]:
    start = max(hour, node.commissioned_at or hour)
    return start, max(start, min(hour + HOUR, _held_until(node, now)))


def _node_energy_j(metered: NodeHourUsage | None, rows: list[GpuHourUsage]) -> Decimal | None:
    """The node meter's energy (J) when it measured the whole node over at least the GPUs' time; else None.

    A meter that covered less of the hour than the GPUs did, or read below their
    sum (a meter on one of several supplies), does not stand for the node: the
    line keeps the GPU boundary rather than mix the two.
    """
    if metered is None or metered.boundary != "node":
        return None
    gpu_covered_s = max((row.energy_covered_s for row in rows), default=0.0)
    gpu_j = sum(row.energy_j for row in rows)
    if metered.energy_covered_s + 1.0 < gpu_covered_s or metered.energy_j < gpu_j:
        return None
    return Decimal(str(metered.energy_j))


def _host_modelled_j(context: _NodeContext, covered_s: Decimal, held_h: Decimal) -> Decimal | None:
    """The host's energy (J) beyond its GPUs, from the profile's idle and per-GPU power, over the time the
    GPUs' energy covers (measured or bridged, at most the held time): the two add up over the same seconds.
    ``None`` (the GPU boundary) when the organization's policy does not model hosts, without cited
    figures, or without any covered time."""
    power_w = context.host_power_w
    if power_w is None or covered_s <= 0 or not context.policy.model_host_power:
        return None
    return power_w * min(covered_s, held_h * S_PER_H)


def _line(
    context: _NodeContext,
    hour: datetime,
    usage: dict,
    tokens: dict,
    metered: NodeHourUsage | None = None,
    *,
    now: datetime,
) -> NodeHourLine:
    node, served = context.node, tokens.get(hour) or _nothing_served()
    held = _held_span(node, hour, now)
    installed = {gpu.pk: _installed_h(context, gpu, hour, held) for gpu in context.gpus}
    # A GPU counts in the hours it was installed (or measured: telemetry is never dropped).
    gpus = [g for g in context.gpus if installed[g.pk] is None or installed[g.pk] or (g.pk, hour) in usage]
    gpu_inputs = tuple(
        _gpu_input(context, gpu, usage.get((gpu.pk, hour)), served["by_gpu"], installed[gpu.pk], held) for gpu in gpus
    )
    rows = [usage[(g.pk, hour)] for g in context.gpus if (g.pk, hour) in usage]
    observed = max((row.observed_s for row in rows), default=0.0)
    covered = max((row.observed_s + row.bridged_s for row in rows), default=0.0)
    held_h = hours_held(hour, node.commissioned_at, _held_until(node, now))
    covered_s = Decimal(str(covered))
    # Not held (before commissioning, after decommissioning): no asset in force, unpriced.
    pricing = (pricing_at(context.pricing, hour) if held_h else None) or _NO_PRICE
    return build_node_hour_line(
        NodeHourInput(
            node_id=str(node.pk),
            hour_start=hour,
            currency=node.site.currency,
            gpus=gpu_inputs,
            node_energy_j=_node_energy_j(metered, rows),
            host_modelled_j=_host_modelled_j(context, covered_s, held_h),
            observed_s=Decimal(str(observed)),
            bridged_s=covered_s - Decimal(str(observed)),
            held_h=held_h,
            held_from=held[0] if held_h else None,
            prompt_tokens=served["prompt"],
            generation_tokens=served["generation"],
            cached_prompt_tokens=served["cached"],
            requests=served["requests"],
            pue=_pue(context, hour),
            tariff=tariff_price(context.tariffs, hour),
            pricing=pricing,
            price_fx=_price_fx(context, pricing, hour),
            location=_location(context.intensity.get(hour)),
            market=in_force(context.market, hour),
            host_embodied=context.host_embodied,
            host_embodied_h=_in_life_h(held, context.host_embodied_until),
            tax=in_force(context.taxes, hour),
        ),
        context.policy,
    )


def _price_fx(context: _NodeContext, pricing: Pricing, hour: datetime) -> FxRate | None:
    """The month's average rate from the price's currency into the site's; ``None`` when they agree or when
    the organization holds no such rate (the line then keeps the cost unconverted)."""
    site_currency = context.node.site.currency
    if pricing.currency is None or pricing.currency == site_currency:
        return None
    return context.rates.find(pricing.currency, site_currency, month_of(hour), RateKind.AVERAGE)


def _gpu_input(
    context: _NodeContext,
    gpu: Gpu,
    usage: GpuHourUsage | None,
    served: dict[int, int],
    installed_h: Decimal | None,
    held: tuple[datetime, datetime],
) -> GpuHourInput:
    # Past the end of its own life a card carries no more embodied carbon (known, not unknown): 0 hours in it.
    return GpuHourInput(
        gpu_id=str(gpu.pk),
        energy_j=Decimal(str(usage.energy_j)) if usage else Decimal(0),
        tokens_served=served.get(gpu.pk, 0),
        mean_util_pct=Decimal(str(usage.mean_util_pct)) if usage and usage.mean_util_pct is not None else None,
        embodied=context.gpu_embodied[gpu.pk],
        installed_h=installed_h,
        embodied_h=_in_life_h(held, context.gpu_embodied_until[gpu.pk], context.installations.get(gpu.pk)),
    )


def _pue(context: _NodeContext, hour: datetime) -> Decimal:
    """The PUE in force at ``hour``: a dated row of the site's, else the site's own figure."""
    dated = in_force(context.pue, hour)
    return Decimal(context.node.site.pue) if dated is None else dated


def _location(resolved: Any) -> IntensityFactor | None:
    if resolved is None or resolved.gco2e_per_kwh is None:
        return None
    direct = resolved.direct_gco2e_per_kwh
    return IntensityFactor(
        Decimal(resolved.gco2e_per_kwh), resolved.source, resolved.basis, None if direct is None else Decimal(direct)
    )


def _lines_store(context: _NodeContext, lines: list[NodeHourLine], usage: dict, tokens: dict, *, now: datetime) -> None:
    """Store the lines of open hours; a locked hour's line stays as closed, what changed booked as a correction."""
    rows = [_row(context, line, usage, tokens) for line in lines]
    columns_fit(rows)  # an amount past its column is refused naming it; the queue parks the hour
    node = context.node
    with transaction.atomic():  # the lines and their site-hours (or their marks: accounting.site_hours) commit together
        rows = ledger_rows_settle(node_id=node.pk, organization_id=node.fleet.organization_id, rows=rows, now=now)
        hours = [row.hour_start for row in rows]
        # The site-hours the lines leave (a node moved to another site) and those they join.
        stored = NodeHourLedger.objects.filter(node=node, hour_start__in=hours)
        touched = set(stored.values_list("organization_id", "site_id", "hour_start"))
        NodeHourLedger.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["node", "hour_start"],
            update_fields=[
                f.name for f in NodeHourLedger._meta.concrete_fields if f.name not in {"id", "node", "hour_start"}
            ],
        )
        joined = {(row.organization_id, row.site_id, row.hour_start) for row in rows}
        site_hours_changed(node_id=node.pk, site_hours=touched | joined)
        # The node's days of every hour computed (its lines counted; its serving days: a locked hour's
        # endpoint-hours may have changed too).
        node_days_recompute((node.pk, line.hour_start) for line in lines)


def _row(context: _NodeContext, line: NodeHourLine, usage: dict, tokens: dict) -> NodeHourLedger:
    """The stored line: the ledger line's own columns (``line_columns``), and what reports group and trace by."""
    node, hour = context.node, line.hour_start
    served = tokens.get(hour) or _nothing_served()
    gpu_usage = [usage[(g.pk, hour)] for g in context.gpus if (g.pk, hour) in usage]
    resolved = context.intensity.get(hour)
    util_pct_s, util_observed_s = _utilization_sums(gpu_usage)
    columns = {name: _stored(name, value) for name, value in line_columns(line).items() if name != "node_id"}
    return NodeHourLedger(
        node=node,
        organization_id=node.fleet.organization_id,
        fleet_id=node.fleet_id,
        site_id=node.site_id,
        gpu_model=context.gpu_model,
        pue=_pue(context, hour),
        energy_counter_j=sum(u.energy_counter_j + u.energy_bridged_j for u in gpu_usage),
        energy_integrated_j=sum(u.energy_integrated_j for u in gpu_usage),
        util_pct_s=util_pct_s,
        util_observed_s=util_observed_s,
        location_gco2e_per_kwh=resolved.gco2e_per_kwh if resolved else None,
        location_direct_gco2e_per_kwh=resolved.direct_gco2e_per_kwh if resolved else None,
        location_is_fallback=bool(resolved and resolved.is_fallback),
        sole_endpoint_id=served["sole_endpoint_id"],
        **columns,
    )


def _stored(name: str, value: Any) -> Any:
    """A line's value as its column holds it: an unknown trace text (no tariff, no source) is stored empty."""
    if value is None and isinstance(NodeHourLedger._meta.get_field(name), CharField):
        return ""
    return value


def _utilization_sums(gpu_usage: list[GpuHourUsage]) -> tuple[float, float]:
    """sum(mean_util_pct x observed_s) and sum(observed_s) over the GPU-hours whose utilization is known."""
    pct_s = sum(u.mean_util_pct * u.observed_s for u in gpu_usage if u.mean_util_pct is not None)
    return pct_s, sum(u.observed_s for u in gpu_usage if u.mean_util_pct is not None)


# --- what to recompute ---------------------------------------------------------


def ledger_mark(*, node_ids: Iterable[int], start: datetime, end: datetime, now: datetime) -> int:
    """Mark every hour of ``[start, end)`` of ``node_ids`` for recomputation (after a price change, say)."""
    hours = _hours(floor_hour(start), end)
    rows = [LedgerPending(node_id=n, hour_start=h, marked_at=now) for n in node_ids for h in hours]
    LedgerPending.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=["node", "hour_start"], update_fields=["marked_at"], batch_size=2000
    )
    return len(rows)


def _hours(start: datetime, end: datetime) -> list[datetime]:
    """Hour starts from ``start`` (on an hour) up to, not including, ``end``."""
    count = max(0, -(-(end - start) // HOUR))  # ceiling: a partial last hour counts
    return [start + HOUR * n for n in range(count)]


# Node-hours computed per transaction: a node's month of hours in a few seconds,
# short enough not to hold SQLite's write lock against ingest for long.
HOURS_PER_CLAIM = 500


def ledger_pending_run(*, now: datetime, limit: int = 20_000) -> int:
    """Recompute the node-hours whose usage or inputs changed; return how many lines were written.

    Work is claimed one node at a time, each in its own transaction; a mark made
    after ``now`` (new data during the run) survives for the next run. An hour whose
    line fails to compute is parked (``telemetry.parking``) and never holds back another node. A locked
    hour's line is never rewritten: what would change it is booked as a correction (``accounting.corrections``).
    """
    _usage_changes_take(now=now)
    ledger_reopened_mark(now=now)
    written = queue_run(_LEDGER_QUEUE, now=now, limit=limit)
    site_hours_settle()  # any site-hour a node marked and no settle summed (accounting.site_hours)
    return written


_LEDGER_QUEUE = NodeHourQueue(
    model=LedgerPending,
    stage=NodeHourStage.LEDGER,
    node_order=("node_id", "hour_start"),
    hour_order=("hour_start",),
    per_claim=HOURS_PER_CLAIM,
    compute=lambda node_id, hours: ledger_node_hours_compute(node_id=node_id, hour_starts=hours),
)


# Usage-changed marks moved into the ledger's queue per run: a few hundred nodes' worth.
USAGE_CHANGES_PER_TAKE = 10_000


def _usage_changes_take(*, now: datetime) -> None:
    """Move telemetry's "usage changed" marks into the ledger's own queue."""
    due = UsageChanged.objects.filter(changed_at__lte=now)
    with transaction.atomic():
        # Locked node by node, in node order (a statement per node: on Citus, one shard each).
        changes: list[UsageChanged] = []
        after = 0
        while len(changes) < USAGE_CHANGES_PER_TAKE and (nodes := queued_nodes(due.filter(node_id__gt=after))):
            for node_id in nodes:
                changes += rows_claim(due.filter(node_id=node_id), USAGE_CHANGES_PER_TAKE - len(changes))
                if len(changes) >= USAGE_CHANGES_PER_TAKE:
                    break
            after = nodes[-1]
        LedgerPending.objects.bulk_create(
            [LedgerPending(node_id=c.node_id, hour_start=c.hour_start, marked_at=now) for c in changes],
            update_conflicts=True,
            unique_fields=["node", "hour_start"],
            update_fields=["marked_at"],
        )
        UsageChanged.objects.filter(pk__in=[c.pk for c in changes], changed_at__lte=now).delete()


def ledger_mark_intensity_since(*, since: datetime, now: datetime) -> int:
    """Mark existing lines whose zone-hour got a new or better intensity value at or after ``since``.

    Public values touch every site in the zone; an organization's upload only its own sites.
    Hours with no line yet need nothing: they are computed when their usage arrives.
    """
    changed = GridIntensity.objects.filter(fetched_at__gte=since).values_list("zone", "hour_start", "organization_id")
    marks = []
    for zone, hour, organization_id in changed.distinct():
        lines = NodeHourLedger.objects.filter(site__grid_zone=zone, hour_start=hour)
        if organization_id is not None:
            lines = lines.filter(organization_id=organization_id)
        marks += [
            LedgerPending(node_id=n, hour_start=hour, marked_at=now) for n in lines.values_list("node_id", flat=True)
        ]
    LedgerPending.objects.bulk_create(
        marks, update_conflicts=True, unique_fields=["node", "hour_start"], update_fields=["marked_at"], batch_size=2000
    )
    return len(marks)
