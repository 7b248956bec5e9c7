"""Grid intensity in the database: fetched from a real local fake provider, stored, resolved."""

from __future__ import annotations

import logging
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from config.celery import ping_task
from grid import ConfiguredProvider, ElectricityMapsProvider, HourlyIntensity, annual_intensity
from grid.hours import hour_starts, iso_z, parse_timestamp
from grid.models import GridFetchState, GridIntensity
from grid.stored_intensity import (
    intensity_csv_import,
    intensity_fetch,
    intensity_fetch_all,
    intensity_for_hours,
    intensity_store,
)
from grid.tasks import grid_fetch_task
from tests.helpers.factories import SiteFactory
from tests.helpers.grid_provider import FakeProvider, Reply, Seen
from tests.helpers.processes import ROOT, subprocess_env

NOW = datetime(2024, 5, 2, 12, 30, tzinfo=UTC)
DAY = datetime(2024, 5, 1, tzinfo=UTC)
PAST_RANGE = "/v3/carbon-intensity/past-range"
EM_ERROR = {"status": "error", "message": "nope"}


def h(hour: int) -> datetime:
    """Hour ``hour`` of 2024-05-01 (UTC); 24 and more run into the next day."""
    return DAY + timedelta(hours=hour)


def em_serves(fake: FakeProvider, values: dict[datetime, int], estimated: frozenset[datetime] = frozenset()) -> None:
    """Answer past-range requests like Electricity Maps: the requested hours that have a value."""

    def respond(seen: Seen) -> Reply:
        start, end = parse_timestamp(seen.query["start"]), parse_timestamp(seen.query["end"])
        items = [
            {
                "zone": seen.query["zone"],
                "carbonIntensity": value,
                "datetime": iso_z(at),
                "isEstimated": at in estimated,
            }
            for at, value in sorted(values.items())
            if start <= at < end
        ]
        return Reply(body={"zone": seen.query["zone"], "data": items})

    fake.on_call(PAST_RANGE, respond)


def em(fake: FakeProvider, *zones: str, factor_type: str = "lifecycle") -> ConfiguredProvider:
    """One request per range (lifecycle only) unless ``factor_type`` says "both"."""
    zone_map = {zone: zone for zone in zones or ("DE",)}
    provider = ElectricityMapsProvider(
        api_token="em-token", base_url=fake.base_url, zone_map=zone_map, now=lambda: NOW,
        emission_factor_type=factor_type,
    )  # fmt: skip
    return ConfiguredProvider("electricitymaps", provider, zone_map)


def ranges_asked(fake: FakeProvider) -> list[tuple[str, str]]:
    return [(seen.query["start"], seen.query["end"]) for seen in fake.seen(PAST_RANGE)]


def fetch(fake: FakeProvider, *, now: datetime = NOW, start: int = 0, end: int = 6, fingerprint: str = "") -> int:
    return intensity_fetch(
        configured=em(fake), zone="DE", start=h(start), end=h(end), now=now, config_fingerprint=fingerprint
    )


def stored_rows() -> list[tuple[object, ...]]:
    return list(
        GridIntensity.objects.order_by("hour_start", "source").values_list(
            "zone", "hour_start", "kind", "source", "gco2e_per_kwh", "is_estimated", "is_forecast", "organization_id"
        )
    )


def state() -> GridFetchState:
    return GridFetchState.objects.get(provider="electricitymaps", zone="DE")


def hourly(hour: datetime, value: str, **extra: object) -> HourlyIntensity:
    fields: dict[str, object] = {"zone": "DE", "kind": "average", "source": "electricitymaps", **extra}
    return HourlyIntensity(hour_start=hour, gco2e_per_kwh=Decimal(value), **fields)


# --- fetching ------------------------------------------------------------------


@pytest.mark.django_db
def test_fetch_stores_each_hour_with_zone_kind_source_and_flags(fake: FakeProvider) -> None:
    # given: 00:00-05:00 with 03:00 estimated by the provider
    em_serves(fake, {h(i): 300 + i for i in range(6)}, estimated=frozenset({h(3)}))
    # when
    stored = fetch(fake)
    # then
    assert stored == 6
    assert stored_rows() == [
        ("DE", h(i), "average", "electricitymaps", Decimal(300 + i), i == 3, False, None) for i in range(6)
    ]
    assert set(GridIntensity.objects.values_list("fetched_at", flat=True)) == {NOW}
    assert (state().failures, state().last_success_at, state().next_attempt_at) == (0, NOW, None)
    assert ranges_asked(fake) == [("2024-05-01T00:00:00Z", "2024-05-01T06:00:00Z")]


@pytest.mark.django_db
def test_second_fetch_asks_only_for_hours_not_stored(fake: FakeProvider) -> None:
    # given: the provider has no value yet for 02:00 and 03:00
    em_serves(fake, {h(i): 300 for i in (0, 1, 4, 5)})
    assert fetch(fake) == 4
    # when: they have arrived an hour later
    em_serves(fake, {h(i): 300 for i in range(6)})
    stored = fetch(fake, now=NOW + timedelta(hours=1))
    # then: one request for the gap, nothing stored twice
    assert stored == 2
    assert ranges_asked(fake) == [
        ("2024-05-01T00:00:00Z", "2024-05-01T06:00:00Z"),
        ("2024-05-01T02:00:00Z", "2024-05-01T04:00:00Z"),
    ]
    assert GridIntensity.objects.count() == 6
    # and once everything is stored, nothing is asked at all
    assert fetch(fake, now=NOW + timedelta(hours=2)) == 0
    assert len(fake.requests) == 2


@pytest.mark.django_db
def test_estimated_hour_is_asked_again_and_replaced_by_the_measurement(fake: FakeProvider) -> None:
    em_serves(fake, {h(0): 300, h(1): 310}, estimated=frozenset({h(1)}))
    fetch(fake, end=2)
    em_serves(fake, {h(0): 300, h(1): 333})
    assert fetch(fake, end=2, now=NOW + timedelta(hours=1)) == 1
    assert ranges_asked(fake)[-1] == ("2024-05-01T01:00:00Z", "2024-05-01T02:00:00Z")
    assert stored_rows()[1] == ("DE", h(1), "average", "electricitymaps", Decimal(333), False, False, None)
    assert GridIntensity.objects.count() == 2


@pytest.mark.django_db
def test_rate_limit_waits_for_retry_after_before_asking_again(fake: FakeProvider) -> None:
    # given: 429 with Retry-After 600 s
    fake.on(PAST_RANGE, Reply(429, {"status": "error", "message": "Too many requests"}, {"Retry-After": "600"}))
    # when
    assert fetch(fake) == 0
    # then
    assert state().next_attempt_at == NOW + timedelta(seconds=600)
    assert state().failures == 1
    assert "429" in state().last_error
    # a call before that time makes no request; one after it does
    assert fetch(fake, now=NOW + timedelta(seconds=599)) == 0
    assert len(fake.requests) == 1
    em_serves(fake, {h(0): 300})
    assert fetch(fake, now=NOW + timedelta(seconds=600)) == 1
    assert len(fake.requests) == 2
    assert (state().failures, state().last_error, state().next_attempt_at) == (0, "", None)


@pytest.mark.django_db
def test_outage_backs_off_exponentially_from_thirty_seconds(fake: FakeProvider) -> None:
    fake.on(PAST_RANGE, Reply(503, EM_ERROR))
    fetch(fake)
    first = state().next_attempt_at
    assert first is not None and NOW <= first <= NOW + timedelta(seconds=30)
    fetch(fake, now=first)
    second = state().next_attempt_at
    assert second is not None and first <= second <= first + timedelta(seconds=60)
    assert state().failures == 2


@pytest.mark.django_db
def test_refused_credentials_are_not_retried_until_the_configuration_changes(
    fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    # given
    fake.on(PAST_RANGE, Reply(401, {"status": "error", "message": "Invalid auth-token"}))
    # when
    with caplog.at_level(logging.ERROR, logger="grid.stored_intensity"):
        fetch(fake, fingerprint="config-1")
    # then: recorded and logged
    assert "Invalid auth-token" in state().last_error
    assert state().auth_failed_config == "config-1"
    assert "credentials refused" in caplog.text and "not retrying" in caplog.text
    # hours later, the same configuration asks nothing
    fetch(fake, now=NOW + timedelta(hours=5), fingerprint="config-1")
    assert len(fake.requests) == 1
    # a new token is tried at once
    em_serves(fake, {h(0): 300})
    assert fetch(fake, now=NOW + timedelta(hours=5), fingerprint="config-2") == 1
    assert state().auth_failed_config is None


@pytest.mark.django_db
def test_a_pair_being_fetched_is_not_fetched_twice(fake: FakeProvider) -> None:
    em_serves(fake, {h(0): 300})
    fetch(fake)  # creates the state row
    GridFetchState.objects.update(next_attempt_at=NOW + timedelta(minutes=10))  # another worker's claim
    GridIntensity.objects.all().delete()
    assert fetch(fake, now=NOW + timedelta(minutes=1)) == 0
    assert len(fake.requests) == 1


# --- the hourly run ------------------------------------------------------------


@pytest.fixture
def em_env(fake: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRID_PROVIDERS", "electricitymaps:DE,FR;annual:DE")
    monkeypatch.setenv("ELECTRICITYMAPS_API_TOKEN", "em-token")
    monkeypatch.setenv("ELECTRICITYMAPS_BASE_URL", fake.base_url)


@pytest.mark.django_db
def test_fetch_all_fetches_the_last_hours_of_zones_that_sites_use(fake: FakeProvider, em_env: None) -> None:
    # given: a site in DE, none in FR
    SiteFactory(grid_zone="DE")
    em_serves(fake, {hour: 250 for hour in hour_starts(NOW - timedelta(days=3), NOW)})
    # when
    result = intensity_fetch_all(now=NOW, lookback_h=48)
    # then: the 48 completed hours before 12:00 for DE only; the annual "provider" is not stored
    assert result["stored"] == {"electricitymaps:DE": 48}
    # the default asks both bases of each range
    assert [(seen.query["zone"], seen.query["emissionFactorType"]) for seen in fake.requests] == [
        ("DE", "lifecycle"), ("DE", "direct")
    ]  # fmt: skip
    assert ranges_asked(fake) == [("2024-04-30T12:00:00Z", "2024-05-02T12:00:00Z")] * 2
    assert set(GridIntensity.objects.values_list("zone", "source")) == {("DE", "electricitymaps")}
    # an explicitly listed zone is fetched too; what is stored is not asked again
    intensity_fetch_all(now=NOW + timedelta(minutes=5), zones=["fr"])
    assert [seen.query["zone"] for seen in fake.requests] == ["DE", "DE", "FR", "FR"]


@pytest.mark.django_db
def test_fetch_all_skips_a_pair_backing_off(fake: FakeProvider, em_env: None) -> None:
    SiteFactory(grid_zone="DE")
    fake.on(PAST_RANGE, Reply(429, EM_ERROR, {"Retry-After": "3600"}))
    intensity_fetch_all(now=NOW)
    intensity_fetch_all(now=NOW + timedelta(minutes=30))
    assert len(fake.requests) == 1


@pytest.mark.django_db
def test_grid_fetch_task_with_no_provider_configured_asks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRID_PROVIDERS", raising=False)
    SiteFactory(grid_zone="DE")
    assert grid_fetch_task()["stored"] == {}
    assert not GridIntensity.objects.exists()


@pytest.fixture
def grid_worker(transactional_db: None, fake: FakeProvider) -> Iterator[str]:
    """A worker of its own, on a queue of its own, whose environment names the fake provider.

    The session's ``celery_worker_process`` started before any test could set its
    environment, and provider configuration is read from the environment (as in
    production), so this test starts a worker with it; its private queue keeps the
    session worker from taking the task.
    """
    queue = f"grid-test-{uuid.uuid4().hex[:8]}"
    env = {
        **subprocess_env(),
        "GRID_PROVIDERS": "electricitymaps:DE",
        "ELECTRICITYMAPS_API_TOKEN": "em-token",
        "ELECTRICITYMAPS_BASE_URL": fake.base_url,
    }
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo", "-Q", queue]
    worker = subprocess.Popen([*command, "-n", f"{queue}@%h", "--loglevel", "WARNING"], env=env, cwd=ROOT)
    try:
        assert ping_task.apply_async(queue=queue).get(timeout=60) == "pong", "the Celery worker did not start"
        yield queue
    finally:
        worker.terminate()
        worker.wait(timeout=30)


@pytest.mark.celery_worker
def test_a_real_worker_runs_the_hourly_fetch_against_the_provider(fake: FakeProvider, grid_worker: str) -> None:
    # given: a site in DE, committed for the worker to see, and a provider with every recent hour
    SiteFactory(grid_zone="DE")
    now = datetime.now(UTC)
    em_serves(fake, {hour: 280 for hour in hour_starts(now - timedelta(days=3), now + timedelta(hours=2))})
    # when
    result = grid_fetch_task.apply_async(queue=grid_worker).get(timeout=60)
    # then
    assert result["stored"] == {"electricitymaps:DE": 48}
    assert GridIntensity.objects.filter(zone="DE", source="electricitymaps", gco2e_per_kwh=280).count() == 48
    assert {seen.headers["auth-token"] for seen in fake.requests} == {"em-token"}


# --- storing -------------------------------------------------------------------


@pytest.mark.django_db
def test_store_upgrades_estimates_but_never_downgrades_a_measurement() -> None:
    intensity_store(values=[hourly(h(0), "300", is_estimated=True), hourly(h(1), "310")])
    written = intensity_store(
        values=[hourly(h(0), "305"), hourly(h(1), "999", is_estimated=True), hourly(h(1), "888", is_forecast=True)]
    )
    assert written == 1
    assert [(row[1], row[4], row[5]) for row in stored_rows()] == [
        (h(0), Decimal("305.000"), False),
        (h(1), Decimal("310.000"), False),
    ]


@pytest.mark.django_db
def test_public_and_organization_rows_of_the_same_hour_coexist_but_never_duplicate(org_a: object) -> None:
    intensity_store(values=[hourly(h(0), "300", source="csv:acme")])
    intensity_store(values=[hourly(h(0), "200", source="csv:acme")], organization=org_a)
    assert GridIntensity.objects.count() == 2
    for organization in (None, org_a):
        with pytest.raises(IntegrityError), transaction.atomic():
            GridIntensity.objects.create(
                zone="DE",
                hour_start=h(0),
                kind="average",
                source="csv:acme",
                gco2e_per_kwh=1,
                fetched_at=NOW,
                organization=organization,
            )


# --- resolving for accounting ----------------------------------------------------


@pytest.fixture
def four_hours(org_a: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """00:00 has a CSV, two providers and a marginal value; 01:00 two providers; 02:00 marginal only; 03:00 none."""
    monkeypatch.setenv("GRID_PROVIDERS", "electricitymaps:DE;watttime:DE")
    intensity_store(values=[hourly(h(0), "200"), hourly(h(1), "210", is_estimated=True)])
    intensity_store(values=[hourly(h(0), "300", source="watttime"), hourly(h(1), "310", source="watttime")])
    intensity_store(values=[hourly(h(i), "900", source="watttime", kind="marginal") for i in (0, 2)])
    intensity_csv_import(
        organization=org_a, text="zone,hour_start,gco2e_per_kwh\nDE,2024-05-01T00:00:00Z,100\n", source_name="acme"
    )


@pytest.mark.django_db
def test_lookup_prefers_csv_then_live_providers_in_order_then_the_annual_average(
    four_hours: None, org_a: object, django_assert_num_queries: object
) -> None:
    with django_assert_num_queries(1):
        resolved = intensity_for_hours(zone="de", hours=[h(i) for i in range(4)], organization=org_a)
    summary = [(r.gco2e_per_kwh, r.source, r.is_fallback, r.is_estimated) for r in resolved.values()]
    de_2024 = annual_intensity("DE", 2024)
    assert de_2024 is not None and de_2024.source == "electricitymaps-yearly-2024"
    assert summary == [
        (Decimal("100.000"), "csv:acme", False, False),
        (Decimal("210.000"), "electricitymaps", False, True),
        (de_2024.gco2e_per_kwh, de_2024.source, True, True),
        (de_2024.gco2e_per_kwh, de_2024.source, True, True),
    ]
    assert list(resolved) == [h(i) for i in range(4)]
    assert resolved[h(3)].licence == "ODbL-1.0" and "Electricity Maps" in resolved[h(3)].attribution


@pytest.mark.django_db
def test_another_organizations_csv_is_not_used_and_provider_order_follows_configuration(
    four_hours: None, org_b: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRID_PROVIDERS", "watttime:DE;electricitymaps:DE")
    resolved = intensity_for_hours(zone="DE", hours=[h(0), h(1)], organization=org_b)
    assert [(r.gco2e_per_kwh, r.source) for r in resolved.values()] == [
        (Decimal("300.000"), "watttime"),
        (Decimal("310.000"), "watttime"),
    ]


@pytest.mark.django_db
def test_marginal_values_are_never_used_for_inventory_lookups(four_hours: None) -> None:
    resolved = intensity_for_hours(zone="DE", hours=[h(0), h(2)])
    assert {r.kind for r in resolved.values()} == {"average"}
    assert Decimal("900.000") not in {r.gco2e_per_kwh for r in resolved.values()}
    assert resolved[h(2)].is_fallback


@pytest.mark.django_db
def test_unknown_zone_without_data_is_none_never_zero() -> None:
    resolved = intensity_for_hours(zone="ZZ-NOWHERE", hours=[h(0)])
    assert (resolved[h(0)].gco2e_per_kwh, resolved[h(0)].source) == (None, "unknown")


@pytest.mark.django_db
def test_lookup_refuses_hours_that_are_not_utc_hour_starts() -> None:
    with pytest.raises(ValueError, match="UTC hour"):
        intensity_for_hours(zone="DE", hours=[h(0) + timedelta(minutes=30)])
