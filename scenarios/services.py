"""Creating scenarios and running them: the Django side of ``scenarios.replay``.

``scenario_create`` validates and stores; ``scenario_run_claim`` marks a scenario
queued (a conditional update: two clicks queue it once); ``scenario_run`` (the Celery
task's body) claims it, holds a lease (``common.leases``) renewed with each progress
write (a run whose worker died is failed once it lapses, and may be queued again at
once), reads the period's stored ledger rows in one pass
(``values_list``, never model instances), replays them and stores the result,
updating the progress as it goes. The stored ledger is only read.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from accounting.ledger.line import NO_PRICE_ID
from accounting.ledger.tax import SiteTaxRates
from accounting.models import NodeHourLedger
from accounting.prices import tax_periods
from accounting.profiles import hardware_profiles
from accounting.tariff import Validity
from advice.models import WorkloadClass
from common.leases import lease_from, leases_lapse, queue_wait
from common.periods import HOUR
from fleets.models import Fleet, Gpu, Organization, Site
from grid.annual import annual_intensity
from grid.models import GridIntensity
from grid.stored_intensity import intensity_for_hours
from reports.aggregates import AMOUNT
from reports.selectors.allocation import joined_line, share_of
from scenarios.changes import (
    Change,
    ChangeInvalid,
    LifetimeChange,
    MoveChange,
    RoutingChange,
    change_fleets,
    change_json,
    changes_parse,
)
from scenarios.models import Scenario
from scenarios.replay import LEDGER_COLUMNS, LifeKey, Replay, ReplayError, ReplayInputs
from scenarios.result import ClassSpec, result_json
from telemetry.models import EndpointHourUsage

logger = logging.getLogger(__name__)

MAX_PERIOD = timedelta(days=366)
# Rows fetched per round trip: ~20 columns each, a few MB per chunk.
CHUNK_ROWS = 5000
# Progress written every so many rows: one small UPDATE per ~0.2 s of replay.
PROGRESS_EVERY_ROWS = 20_000


class ScenarioInvalid(ValueError):
    """A scenario refused as given; the message names the field."""


def scenario_create(
    *, organization: Organization, user: Any, name: str, period_start: datetime, period_end: datetime, changes: Any
) -> Scenario:
    """Validate and store a scenario (not run); ``ScenarioInvalid`` naming the first bad field."""
    _period_check(period_start, period_end, now=timezone.now())
    try:
        parsed = changes_parse(changes)
    except ChangeInvalid as error:
        raise ScenarioInvalid(str(error)) from error
    _fleets_check(organization, parsed)
    _sites_check(organization, parsed)
    _zones_check(organization, parsed, period_start)
    parsed = _classes_resolve(organization, parsed)
    return Scenario.objects.create(
        organization=organization,
        name=name,
        period_start=period_start,
        period_end=period_end,
        changes=[change_json(change) for change in parsed],
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def _period_check(start: datetime, end: datetime, *, now: datetime) -> None:
    for name, at in (("start", start), ("end", end)):
        if at.utcoffset() is None:
            raise ScenarioInvalid(f"{name}: an aware date-time is required")
        if (at.minute, at.second, at.microsecond) != (0, 0, 0):
            raise ScenarioInvalid(f"{name}: must be on a whole hour (UTC)")
    if end <= start:
        raise ScenarioInvalid("end: must be after start")
    if end - start > MAX_PERIOD:
        raise ScenarioInvalid("end: a period of at most 366 days")
    if start >= now:
        raise ScenarioInvalid("start: a scenario replays a past period")


def _fleets_check(organization: Organization, changes: tuple[Change, ...]) -> None:
    mine = set(Fleet.objects.filter(organization=organization).values_list("id", flat=True))
    for index, change in enumerate(changes):
        for fleet in change_fleets(change):
            if fleet not in mine:
                raise ScenarioInvalid(f"changes[{index}]: no fleet {fleet} in organization {organization.slug}")


def _sites_check(organization: Organization, changes: tuple[Change, ...]) -> None:
    mine = set(Site.objects.filter(organization=organization).values_list("id", flat=True))
    for index, change in enumerate(changes):
        if isinstance(change, MoveChange) and change.site is not None and change.site not in mine:
            raise ScenarioInvalid(f"changes[{index}].site: no site {change.site} in organization {organization.slug}")


def _zones_check(organization: Organization, changes: tuple[Change, ...], start: datetime) -> None:
    # Only the public values and the organization's own uploads: another's upload is neither used nor revealed.
    visible = GridIntensity.objects.filter(Q(organization__isnull=True) | Q(organization=organization))
    for index, change in enumerate(changes):
        zone = change.zone if isinstance(change, MoveChange) else None
        if zone and annual_intensity(zone, start.year) is None and not visible.filter(zone=zone).exists():
            raise ScenarioInvalid(f"changes[{index}].zone: no intensity known for zone {zone!r}")


def _classes_resolve(organization: Organization, changes: tuple[Change, ...]) -> tuple[Change, ...]:
    """Routings named by workload class get the class's LLM model (a class running on any model is refused)."""
    resolved: list[Change] = []
    for index, change in enumerate(changes):
        if isinstance(change, RoutingChange) and change.workload_class and not change.llm_model:
            row = WorkloadClass.objects.filter(organization=organization, name=change.workload_class).first()
            if row is None:
                raise ScenarioInvalid(f"changes[{index}].workload_class: no class {change.workload_class!r} in yours")
            if not row.llm_model:
                raise ScenarioInvalid(
                    f"changes[{index}].workload_class: {row.name!r} runs on any model: name its llm_model instead"
                )
            change = replace(change, llm_model=row.llm_model)
        resolved.append(change)
    return tuple(resolved)


def workload_classes(*, organization: Organization) -> list[ClassSpec]:
    """The organization's workload classes (placement advice's register) as the result reports them."""
    rows = WorkloadClass.objects.filter(organization=organization).order_by("name")
    return [ClassSpec(r.name, r.llm_model, int(r.ttft_percentile), int(r.ttft_target_ms)) for r in rows]


# --- running -------------------------------------------------------------------------------


def scenarios_lapse(*, scenarios: Any, now: datetime) -> int:
    """Fail the runs among ``scenarios`` whose lease lapsed (their worker died); return how many."""
    return leases_lapse(rows=scenarios, field="status", queued=Scenario.Status.QUEUED,
                        running=Scenario.Status.RUNNING, failed=Scenario.Status.FAILED, now=now,
                        finished_at=now)  # fmt: skip


def scenario_run_claim(*, scenario_id: int, now: datetime) -> bool:
    """Queue the scenario unless it is queued or running already (a run whose lease lapsed is failed first)."""
    scenarios_lapse(scenarios=Scenario.objects.filter(pk=scenario_id), now=now)
    idle = ~Q(status__in=[Scenario.Status.QUEUED, Scenario.Status.RUNNING])
    queued = {"status": Scenario.Status.QUEUED, "queued_at": now, "lease_until": now + queue_wait(), "error": ""}
    return bool(Scenario.objects.filter(idle, pk=scenario_id).update(**queued, progress_pct=0.0, node_hours_replayed=0))


def _progress(scenario_id: int, **values: Any) -> None:
    """A progress write; it renews the run's lease."""
    Scenario.objects.filter(pk=scenario_id, status=Scenario.Status.RUNNING).update(
        lease_until=lease_from(timezone.now()), **values
    )


def scenario_run(*, scenario_id: int, now: datetime) -> str:
    """Replay a queued scenario and store its result; return its final status. Idempotent: a scenario
    that is not queued (done, or taken by another worker) is left alone."""
    claimed = Scenario.objects.filter(pk=scenario_id, status=Scenario.Status.QUEUED).update(
        status=Scenario.Status.RUNNING, started_at=now, progress_pct=0.0, node_hours_replayed=0,
        lease_until=lease_from(now),
    )  # fmt: skip
    if not claimed:
        return "not queued"
    scenario = Scenario.objects.select_related("organization").get(pk=scenario_id)
    try:
        result = scenario_replay(scenario=scenario)
    except (ReplayError, ChangeInvalid) as error:
        _finish(scenario_id, status=Scenario.Status.FAILED, error=str(error))
        return Scenario.Status.FAILED
    except Exception:
        logger.exception("scenario %s failed", scenario_id)
        _finish(scenario_id, status=Scenario.Status.FAILED, error="the replay failed unexpectedly (see the logs)")
        raise
    _finish(scenario_id, status=Scenario.Status.DONE, result=result, progress_pct=100.0)
    return Scenario.Status.DONE


def _finish(scenario_id: int, **values: Any) -> None:
    # Only the run that holds it: one failed meanwhile (its lease lapsed) and queued again is another's.
    Scenario.objects.filter(pk=scenario_id, status=Scenario.Status.RUNNING).update(
        finished_at=timezone.now(), lease_until=None, **values
    )


def _node_lives(organization: Organization) -> dict[int, LifeKey]:
    """Per node with a GPU asset, the lives the ledger amortised its cards over (``replay.LifeKey``): per card,
    its asset's prior use and own expected years; a card without an asset: new, over its model's life."""
    cards: dict[int, list[tuple[Decimal, Decimal | None]]] = {}
    gpus = Gpu.objects.filter(node__fleet__organization=organization).values_list(
        "node_id", "asset__prior_use_years", "asset__expected_own_years"
    )
    for node_id, prior, own in gpus.order_by():
        cards.setdefault(node_id, []).append((prior or Decimal(0), own))
    # Sorted, so that nodes with the same cards share buckets; nodes whose every card is new over its
    # model's life keep the default (empty) key.
    return {
        node: tuple(sorted(lives, key=lambda card: (card[0], card[1] is not None, card[1] or 0)))
        for node, lives in cards.items()
        if any(prior or own for prior, own in lives)
    }


def scenario_replay(*, scenario: Scenario) -> dict[str, Any]:
    """The result of replaying ``scenario`` on its organization's stored ledger (which it only reads)."""
    changes = changes_parse(scenario.changes)
    organization = scenario.organization
    rows = NodeHourLedger.objects.filter(
        organization=organization, hour_start__gte=scenario.period_start, hour_start__lt=scenario.period_end
    )
    currencies = list(rows.order_by().values_list("currency", flat=True).distinct()[:2])
    if len(currencies) > 1:
        raise ReplayError("the period's sites use several currencies: a scenario needs one")
    total = rows.count()
    _progress(scenario.pk, node_hours_total=total)
    lifetime = any(isinstance(change, LifetimeChange) for change in changes)
    replay = Replay(node_lives=_node_lives(organization) if lifetime else None)
    for done, row in enumerate(rows.values_list(*LEDGER_COLUMNS).iterator(chunk_size=CHUNK_ROWS), 1):
        replay.add(row)
        if done % PROGRESS_EVERY_ROWS == 0:
            _progress(scenario.pk, node_hours_replayed=done, progress_pct=round(100.0 * done / max(total, 1), 1))
    if not replay.rows:
        raise ReplayError("no measured node-hours in the period: nothing to replay")
    _progress(scenario.pk)  # each step after the rows renews the lease too
    _usage_add(replay, scenario)
    _progress(scenario.pk)
    period_h = Decimal((scenario.period_end - scenario.period_start) // HOUR)
    hours = [scenario.period_start + HOUR * n for n in range(int(period_h))]
    notes: list[str] = []
    inputs = ReplayInputs(
        changes=changes,
        lifetime_years={p.key: p.lifetime_years for p in hardware_profiles(organization_id=organization.pk)},
        zone_intensity=_zone_intensity(changes, hours, organization, notes),
        site_taxes=_site_taxes(changes, replay.site_ids, scenario, currencies[0], notes),
    )
    _progress(scenario.pk)
    outcome = replay.run(inputs)
    outcome.notes[:0] = notes
    names = dict(Fleet.objects.filter(organization=organization).values_list("id", "name"))
    unpriced = _hardware_unpriced(rows, names, outcome.notes)
    _progress(scenario.pk, node_hours_replayed=replay.rows)
    result = result_json(
        outcome,
        changes=changes,
        period_h=period_h,
        currency=currencies[0],
        fleet_names=names,
        classes=workload_classes(organization=organization),
    )
    return result | {"hardware_unpriced_node_hours": str(unpriced)}


def _hardware_unpriced(rows: Any, names: dict[int, str], notes: list[str]) -> int:
    """The node-hours with no hardware price in force (their hardware cost is missing from the ledger, not
    zero), noted per fleet; a scenario pricing them (tenure) is then no like-for-like cost comparison."""
    per_fleet = dict(
        rows.filter(pricing_price_id=NO_PRICE_ID).order_by().values_list("fleet_id").annotate(n=Count("id"))
    )
    total = sum(per_fleet.values())
    if total:
        fleets = ", ".join(f"{names.get(fleet, fleet)} {n}" for fleet, n in sorted(per_fleet.items()))
        notes.append(
            f"{total} node-hours had no hardware price in force ({fleets}): the actual side's cost leaves their "
            "hardware out (missing, not zero), so a change that prices them does not raise the cost by that much"
        )
    return total


def _usage_add(replay: Replay, scenario: Scenario) -> None:
    """The period's endpoint-hours of the organization: output tokens and TTFT per fleet and LLM model, and each
    one's share of its node-hour's GPU-hours (``reports.sharing``'s rule, the load curves')."""
    usage = EndpointHourUsage.objects.filter(
        node__fleet__organization=scenario.organization,
        hour_start__gte=scenario.period_start,
        hour_start__lt=scenario.period_end,
    )
    usage = (
        joined_line(usage)
        .annotate(k_gpu_h=share_of("gpu_h", AMOUNT))
        .values_list(
            "node__fleet_id",
            "hour_start",
            "endpoint__model_name",
            "endpoint__kind",
            "prompt_tokens",
            "generation_tokens",
            "requests",
            "ttft_bucket_bounds_s",
            "ttft_bucket_counts",
            "k_gpu_h",
        )
    )
    for row in usage.iterator(chunk_size=CHUNK_ROWS):
        replay.add_usage(row)


def _site_taxes(
    changes: tuple[Change, ...], measured: set[int], scenario: Scenario, currency: str, notes: list[str]
) -> dict[int, list[Validity[SiteTaxRates]]]:
    """Each site's taxes over the period: the measured sites' and those moves name (a query a site: a few)."""
    moved = _moved_sites(changes, scenario.organization, currency, notes)
    bounds = {"start": scenario.period_start, "end": scenario.period_end}
    return {site: tax_periods(site_id=site, **bounds) for site in measured | moved}


def _moved_sites(changes: tuple[Change, ...], organization: Organization, currency: str, notes: list[str]) -> set[int]:
    """The sites moves name, each noted; one gone, or in another currency (its taxes are in it), is refused."""
    moves = [change for change in changes if isinstance(change, MoveChange) and change.site is not None]
    sites = Site.objects.filter(organization=organization).in_bulk([move.site for move in moves])
    for move in moves:
        site = sites.get(move.site)
        if site is None:
            raise ReplayError(f"fleet {move.fleet}: no site {move.site} in the organization")
        if site.currency != currency:
            raise ReplayError(f"fleet {move.fleet}: site {site.name} is in {site.currency}, the ledger in {currency}")
        notes.append(f"fleet {move.fleet}: VAT and energy tax of site {site.name}, as in force each hour")
    return set(sites)


def _zone_intensity(
    changes: tuple[Change, ...], hours: list[datetime], organization: Organization, notes: list[str]
) -> dict[int, dict[datetime, Decimal | None]]:
    """Per moved fleet: its new zone's location intensity of each hour (the grid store: stored hourly
    values where there are, else the annual average)."""
    found: dict[int, dict[datetime, Decimal | None]] = {}
    for change in changes:
        if not isinstance(change, MoveChange) or change.zone is None:
            continue
        resolved = intensity_for_hours(zone=change.zone, hours=hours, organization=organization)
        if all(value.gco2e_per_kwh is None for value in resolved.values()):
            raise ReplayError(f"no intensity known for zone {change.zone!r} in the period")
        found[change.fleet] = {hour: value.gco2e_per_kwh for hour, value in resolved.items()}
        hourly = sum(1 for value in resolved.values() if not value.is_fallback)
        sources = sorted({value.source for value in resolved.values()})
        notes.append(
            f"zone {change.zone}: {hourly} of {len(hours)} hours from stored hourly values, "
            f"the rest the annual average (sources: {', '.join(sources)})"
        )
    return found
