"""Grid intensity in the database: stored, fetched hourly from live providers, resolved for accounting.

Services write: ``intensity_store``, ``intensity_fetch``, ``intensity_fetch_all``,
``intensity_csv_import``. The selector ``intensity_for_hours`` reads only the
database (one query) and the shipped annual averages (in memory); it never
calls a provider, so accounting works the same with every provider down.

Configuration comes from the process environment, read when called (never at
import, and not through settings): ``GRID_PROVIDERS`` and each provider's keys,
as ``grid.registry`` documents them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from fleets.models import Organization, Site
from grid import (
    AVERAGE,
    AnnualIntensity,
    AuthError,
    ConfiguredProvider,
    HourlyIntensity,
    Kind,
    ProviderError,
    UnsupportedZone,
    annual_intensity,
    config_from_env,
    missing_hours,
    parse_grid_providers,
    parse_intensity_csv,
    providers_from_env,
    retry_delay_s,
)
from grid.annual import normalize_zone
from grid.hours import floor_hour, hour_starts
from grid.intensity import LIFECYCLE, Basis, is_utc_hour
from grid.models import GridFetchState, GridIntensity

logger = logging.getLogger(__name__)

UNKNOWN_SOURCE = "unknown"
# The annual data is already in memory: storing it per hour would only copy it.
ANNUAL_PROVIDER = "annual"
# A fetch holds its (provider, zone) this long. Longer than any one run (a few
# requests of at most 10 s each by default); a worker that died frees it then.
FETCH_CLAIM = timedelta(minutes=15)
# Rejected requests and unparseable answers need a person or a code change;
# asking again at the next hourly run costs one request and notices a fix.
NOT_RETRYABLE_DELAY_S = 3600.0
# Rows per INSERT/UPDATE: a year of one zone is 8760 rows, about 9 kB each batch.
STORE_BATCH_SIZE = 500
SOURCE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

_Key = tuple[str, datetime, str, str]  # zone, hour_start, kind, source


@dataclass(frozen=True)
class ResolvedIntensity:
    """The intensity accounting uses for one zone-hour, and where it came from.

    ``gco2e_per_kwh`` is None (never 0) when nothing is known of the zone: then
    ``source`` is "unknown". ``is_fallback`` marks an hour without a stored value
    (the annual average, or unknown); ``licence`` and ``attribution`` are set for
    annual data, whose licences require them beside the figures. ``basis`` says what
    ``gco2e_per_kwh`` counts; ``direct_gco2e_per_kwh`` is the hour's direct figure where
    known (None: Scope 2 of that hour stands on the lifecycle basis, flagged).
    """

    hour_start: datetime
    gco2e_per_kwh: Decimal | None
    source: str
    kind: Kind
    is_fallback: bool
    is_estimated: bool
    licence: str = ""
    attribution: str = ""
    basis: Basis = LIFECYCLE
    direct_gco2e_per_kwh: Decimal | None = None


# --- configuration -------------------------------------------------------------


def configured_providers(environ: Mapping[str, str] | None = None) -> list[ConfiguredProvider]:
    """The live providers ``GRID_PROVIDERS`` names, most preferred first (ValueError on bad config)."""
    return providers_from_env(os.environ if environ is None else environ)


def live_source_order(environ: Mapping[str, str] | None = None) -> list[str]:
    """Provider names in order of preference; needs no credentials (lookups must work without them)."""
    return list(parse_grid_providers((os.environ if environ is None else environ).get("GRID_PROVIDERS", "")))


def provider_config_fingerprint(name: str, environ: Mapping[str, str] | None = None) -> str:
    """A keyed digest of one provider's settings, so a changed credential is noticed without storing it."""
    config = config_from_env(name, os.environ if environ is None else environ)
    payload = json.dumps(config, sort_keys=True, default=str).encode()
    return hmac.new(settings.SECRET_KEY.encode(), payload, hashlib.sha256).hexdigest()


# --- storing -------------------------------------------------------------------


def intensity_store(
    *, values: Iterable[HourlyIntensity], organization: Organization | None = None, now: datetime | None = None
) -> int:
    """Upsert hours; returns how many rows were inserted or replaced.

    A stored hour is replaced by a value at least as good (measured > estimated >
    forecast), so a re-fetch turns an estimate into a measurement and takes a
    provider's revision, but never downgrades a measurement; nothing is duplicated.
    """
    incoming = _best_by_key(values)
    if not incoming:
        return 0
    fetched_at = now or timezone.now()
    with transaction.atomic():
        stored = _stored_rows(incoming, organization)
        fresh = [_new_row(value, organization, fetched_at) for key, value in incoming.items() if key not in stored]
        replaced = [
            _replaced_row(stored[key], value, fetched_at)
            for key, value in incoming.items()
            if key in stored and _rank(value) >= _rank(stored[key])
        ]
        # A row a concurrent fetch inserted meanwhile is equivalent: ignore, don't fail.
        GridIntensity.objects.bulk_create(fresh, ignore_conflicts=True, batch_size=STORE_BATCH_SIZE)
        GridIntensity.objects.bulk_update(replaced, _VALUE_FIELDS, batch_size=STORE_BATCH_SIZE)
    return len(fresh) + len(replaced)


def _rank(value: HourlyIntensity | GridIntensity) -> int:
    return 0 if value.is_forecast else 1 if value.is_estimated else 2


def _key(value: HourlyIntensity) -> _Key:
    return (normalize_zone(value.zone), value.hour_start, value.kind, value.source)


def _best_by_key(values: Iterable[HourlyIntensity]) -> dict[_Key, HourlyIntensity]:
    best: dict[_Key, HourlyIntensity] = {}
    for value in values:
        key = _key(value)
        if key not in best or _rank(value) >= _rank(best[key]):
            best[key] = value
    return best


def _organization_q(organization: Organization | None) -> Q:
    return Q(organization=organization) if organization is not None else Q(organization__isnull=True)


def _stored_rows(incoming: dict[_Key, HourlyIntensity], organization: Organization | None) -> dict[_Key, GridIntensity]:
    # One range query rather than hour_start IN (...): a year of hours would pass
    # thousands of parameters. Rows of other hours in the range are filtered here.
    hours = [key[1] for key in incoming]
    rows = GridIntensity.objects.filter(
        _organization_q(organization),
        zone__in={key[0] for key in incoming},
        kind__in={key[2] for key in incoming},
        source__in={key[3] for key in incoming},
        hour_start__gte=min(hours),
        hour_start__lte=max(hours),
    )
    by_key = {(row.zone, row.hour_start, row.kind, row.source): row for row in rows}
    return {key: row for key, row in by_key.items() if key in incoming}


def _new_row(value: HourlyIntensity, organization: Organization | None, fetched_at: datetime) -> GridIntensity:
    """A row of the value's key, holding what a replacement writes (``_replaced_row``)."""
    row = GridIntensity(zone=normalize_zone(value.zone), hour_start=value.hour_start, kind=value.kind,
                        source=value.source, organization=organization)  # fmt: skip
    return _replaced_row(row, value, fetched_at)


# What a fetch writes into a row of its key; the rest is the key.
_VALUE_FIELDS = ["gco2e_per_kwh", "basis", "direct_gco2e_per_kwh", "is_estimated", "is_forecast", "fetched_at"]


def _replaced_row(row: GridIntensity, value: HourlyIntensity, fetched_at: datetime) -> GridIntensity:
    row.gco2e_per_kwh, row.fetched_at = value.gco2e_per_kwh, fetched_at
    row.basis, row.direct_gco2e_per_kwh = value.basis, value.direct_gco2e_per_kwh
    row.is_estimated, row.is_forecast = value.is_estimated, value.is_forecast
    return row


def intensity_csv_import(
    *, organization: Organization, text: str | bytes, source_name: str, now: datetime | None = None
) -> int:
    """Store an organization's uploaded CSV as source ``csv:<source_name>``: all of it, or nothing.

    Raises ``CsvError`` (line-numbered problems) before anything is written, and
    ValueError for a source name outside ``SOURCE_NAME_PATTERN``.
    """
    if not re.fullmatch(SOURCE_NAME_PATTERN, source_name):
        raise ValueError(f"source name {source_name!r}: 1-64 letters, digits, '.', '_' or '-', starting alphanumeric")
    values = parse_intensity_csv(text, source_name=source_name)
    return intensity_store(values=values, organization=organization, now=now)


# --- fetching ------------------------------------------------------------------


def intensity_fetch(
    *,
    configured: ConfiguredProvider,
    zone: str,
    start: datetime,
    end: datetime,
    now: datetime,
    config_fingerprint: str = "",
) -> int:
    """Fetch from one provider the hours of ``[start, end)`` not yet stored for ``zone``; returns rows stored.

    Skips (no request) while the pair backs off after an error, while another
    worker holds it, and after an auth error until ``config_fingerprint`` changes.
    """
    state, _ = GridFetchState.objects.get_or_create(provider=configured.name, zone=normalize_zone(zone))
    if state.auth_failed_config is not None and state.auth_failed_config == config_fingerprint:
        logger.warning("grid fetch %s skipped: credentials refused; change the %s settings", state, state.provider)
        return 0
    if not _fetch_claim(state, now):
        return 0
    ranges = missing_hours(hour_starts(start, end), _final_hours(configured.name, zone, start, end))
    stored = 0
    try:
        for hour_range in ranges:
            values = configured.provider.fetch(zone, hour_range.start, hour_range.end)
            stored += intensity_store(values=values, now=now)
    except (ProviderError, UnsupportedZone) as error:
        _fetch_failed(state, error, now=now, config_fingerprint=config_fingerprint)
        return stored
    _fetch_succeeded(state, now=now, asked=bool(ranges))
    return stored


def _fetch_claim(state: GridFetchState, now: datetime) -> bool:
    """Take the pair if it is due, in one conditional UPDATE so two workers never both get it."""
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)
    claimed = GridFetchState.objects.filter(due, pk=state.pk).update(next_attempt_at=now + FETCH_CLAIM)
    return claimed == 1


def _final_hours(source: str, zone: str, start: datetime, end: datetime) -> list[datetime]:
    """Hours stored as measured. Estimated and forecast hours are asked for again while
    in the fetch window, so the provider's later measurement replaces them."""
    return list(
        GridIntensity.objects.filter(
            organization__isnull=True,
            zone=normalize_zone(zone),
            source=source,
            hour_start__gte=floor_hour(start),
            hour_start__lt=end,
            is_estimated=False,
            is_forecast=False,
        ).values_list("hour_start", flat=True)
    )


def _fetch_succeeded(state: GridFetchState, *, now: datetime, asked: bool) -> None:
    state.next_attempt_at, state.auth_failed_config = None, None
    if asked:  # nothing missing means nothing was asked: no news of the provider
        state.failures, state.last_error, state.last_success_at = 0, "", now
    state.save(update_fields=["next_attempt_at", "auth_failed_config", "failures", "last_error", "last_success_at"])


def _fetch_failed(
    state: GridFetchState, error: ProviderError | UnsupportedZone, *, now: datetime, config_fingerprint: str
) -> None:
    state.last_error = str(error)[:2000]
    if isinstance(error, AuthError):
        state.next_attempt_at, state.auth_failed_config = None, config_fingerprint
        logger.error(
            "grid fetch %s: credentials refused (%s); not retrying until the %s settings change",
            state,
            error,
            state.provider,
        )
    else:
        delay_s = _retry_delay_s(error, attempt=state.failures)
        state.next_attempt_at = now + timedelta(seconds=delay_s)
        logger.warning("grid fetch %s failed (%s); next attempt at %s", state, error, state.next_attempt_at)
    state.failures += 1
    state.save(update_fields=["last_error", "next_attempt_at", "auth_failed_config", "failures"])


def _retry_delay_s(error: ProviderError | UnsupportedZone, *, attempt: int) -> float:
    if isinstance(error, ProviderError):
        delay_s = retry_delay_s(error, attempt)
        if delay_s is not None:
            return delay_s
    return NOT_RETRYABLE_DELAY_S


def intensity_fetch_all(*, now: datetime, lookback_h: int = 48, zones: Iterable[str] = ()) -> dict[str, object]:
    """For each configured live provider, fetch the completed hours of the last ``lookback_h``
    not yet stored, for each zone it serves that some site uses (or that ``zones`` lists)."""
    end = floor_hour(now)
    start = end - timedelta(hours=lookback_h)
    wanted = _zones_in_use() | {normalize_zone(zone) for zone in zones}
    stored: dict[str, int] = {}
    for configured in configured_providers():
        if configured.name == ANNUAL_PROVIDER:
            continue
        fingerprint = provider_config_fingerprint(configured.name)
        for zone in (zone for zone in configured.zone_map if normalize_zone(zone) in wanted):
            stored[f"{configured.name}:{normalize_zone(zone)}"] = intensity_fetch(
                configured=configured, zone=zone, start=start, end=end, now=now, config_fingerprint=fingerprint
            )
    return {"start": start.isoformat(), "end": end.isoformat(), "stored": stored}


def _zones_in_use() -> set[str]:
    zones = Site.objects.exclude(grid_zone="").values_list("grid_zone", flat=True).distinct()
    return {normalize_zone(zone) for zone in zones}


# --- resolving for accounting ----------------------------------------------------


def intensity_for_hours(
    *, zone: str, hours: list[datetime], organization: Organization | None = None
) -> dict[datetime, ResolvedIntensity]:
    """The average intensity accounting uses for each hour (aware UTC hour starts), by hour.

    Preference: the organization's CSV uploads (latest upload first), then live
    providers in ``GRID_PROVIDERS`` order (others after them, by name), then the
    annual average of the hour's year, flagged ``is_fallback``. Marginal values
    are never used: they are for advice, not inventories. One query.
    """
    key, wanted = normalize_zone(zone), _utc_hours(hours)
    if not wanted:
        return {}
    best = _best_rows(_average_rows(key, wanted, organization), live_source_order())
    annual: dict[int, AnnualIntensity | None] = {}
    resolved = {}
    for hour in wanted:
        row = best.get(hour)
        if row is None and hour.year not in annual:
            annual[hour.year] = annual_intensity(key, hour.year)
        resolved[hour] = _from_row(row) if row is not None else _from_annual(hour, annual[hour.year])
    return resolved


def _utc_hours(hours: list[datetime]) -> list[datetime]:
    bad = [hour for hour in hours if not is_utc_hour(hour)]
    if bad:
        raise ValueError(f"hours must be aware datetimes at UTC hour starts, got {bad[0]!r}")
    return sorted({hour.astimezone(UTC) for hour in hours})


def _average_rows(zone: str, hours: list[datetime], organization: Organization | None) -> list[GridIntensity]:
    visible = Q(organization__isnull=True)
    if organization is not None:
        visible |= Q(organization=organization)
    wanted = set(hours)
    rows = GridIntensity.objects.filter(
        visible, zone=zone, kind=AVERAGE, hour_start__gte=hours[0], hour_start__lte=hours[-1]
    )
    return [row for row in rows if row.hour_start in wanted]


def _best_rows(rows: list[GridIntensity], order: list[str]) -> dict[datetime, GridIntensity]:
    def preference(row: GridIntensity) -> tuple[int, int, float, str]:
        if row.organization_id is not None:
            return (0, 0, -row.fetched_at.timestamp(), row.source)
        position = order.index(row.source) if row.source in order else len(order)
        return (1, position, 0.0, row.source)

    best: dict[datetime, GridIntensity] = {}
    for row in sorted(rows, key=preference, reverse=True):
        best[row.hour_start] = row  # the most preferred comes last and wins
    return best


def _from_row(row: GridIntensity) -> ResolvedIntensity:
    return ResolvedIntensity(
        hour_start=row.hour_start,
        gco2e_per_kwh=Decimal(row.gco2e_per_kwh),
        source=row.source,
        kind=AVERAGE,
        is_fallback=False,
        is_estimated=row.is_estimated or row.is_forecast,
        basis=row.basis,  # type: ignore[arg-type]
        direct_gco2e_per_kwh=None if row.direct_gco2e_per_kwh is None else Decimal(row.direct_gco2e_per_kwh),
    )


def _from_annual(hour: datetime, annual: AnnualIntensity | None) -> ResolvedIntensity:
    if annual is None:
        return ResolvedIntensity(hour, None, UNKNOWN_SOURCE, AVERAGE, is_fallback=True, is_estimated=False)
    return ResolvedIntensity(
        hour_start=hour,
        gco2e_per_kwh=annual.gco2e_per_kwh,
        source=annual.source,
        kind=AVERAGE,
        is_fallback=True,
        is_estimated=True,  # a yearly mean stands in for the hour
        licence=annual.licence,
        attribution=annual.attribution,
        basis=annual.basis,  # lifecycle, with the direct figure of the country's mix where there is one
        direct_gco2e_per_kwh=annual.direct_gco2e_per_kwh,
    )
