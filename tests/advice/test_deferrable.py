"""A deferrable class gets a window from the forecast of its main fleet's site (a provider on 127.0.0.1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from advice.forecasts import forecast_hours
from advice.models import Advice, AdviceSettings, WorkloadClass
from advice.services import advice_refresh
from tests.helpers.dashboard_data import two_fleets
from tests.helpers.grid_provider import FakeProvider, Reply, _fake_server, fake  # noqa: F401 (fixtures)

FORECAST = "/v3/carbon-intensity/forecast"


def forecast_body(first: datetime, clean_from_h: int, clean_to_h: int) -> dict:
    """24 hours of 300 gCO2e/kWh from ``first``, 50 between the two offsets."""
    return {"zone": "SE", "forecast": [
        {"carbonIntensity": 50 if clean_from_h <= n < clean_to_h else 300,
         "datetime": (first + timedelta(hours=n)).strftime("%Y-%m-%dT%H:%M:%S.000Z")}
        for n in range(24)
    ]}  # fmt: skip


@pytest.fixture
def providers(fake: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> FakeProvider:  # noqa: F811
    monkeypatch.setenv("GRID_PROVIDERS", "electricitymaps:SE")
    monkeypatch.setenv("ELECTRICITYMAPS_API_TOKEN", "em-token")
    monkeypatch.setenv("ELECTRICITYMAPS_BASE_URL", fake.base_url)
    return fake


def test_forecast_hours_ask_the_configured_provider(providers: FakeProvider) -> None:
    first = datetime(2026, 12, 1, tzinfo=UTC)
    providers.on(FORECAST, Reply(body=forecast_body(first, 3, 5)))
    hours = forecast_hours(zone="SE")
    assert len(hours) == 24
    assert (hours[3].gco2e_per_kwh, hours[3].kind, hours[3].source) == (50, "average", "electricitymaps")
    assert forecast_hours(zone="DE") == []  # no provider for it: no forecast, no request
    assert len(providers.requests) == 1


def test_a_failing_provider_gives_no_forecast_not_an_error(providers: FakeProvider) -> None:
    providers.on(FORECAST, Reply(503, {"status": "error", "message": "down"}))
    assert forecast_hours(zone="SE") == []


def test_the_refresh_advises_the_cleanest_window_before_the_deadline(org_a, providers: FakeProvider) -> None:
    # given: the batch class lands mostly on the consumer fleet (zone SE); SE is clean from +10 h to +17 h
    two_fleets(org_a)
    AdviceSettings.objects.create(organization=org_a, min_hours_of_data=3)
    batch = WorkloadClass.objects.create(
        organization=org_a, name="batch", ttft_target_ms=2000, ttft_percentile=50,
        expected_output_tokens_per_day=10**9, deadline_h=24, carbon_weight=1,
    )  # fmt: skip
    now = datetime.now(UTC)
    top = now.replace(minute=0, second=0, microsecond=0)
    providers.on(FORECAST, Reply(body=forecast_body(top, 10, 17)))
    # when
    advice_refresh(organization_id=org_a.pk, now=now)
    # then: the work takes 7 h at the fleets' capacity within the target (about 165M output tokens an hour)
    window = Advice.objects.get(workload_class=batch).result["window"]
    assert window["status"] == "ok" and window["signal"] == "average" and window["source"] == "electricitymaps"
    assert window["best"]["start"] == (top + timedelta(hours=10)).isoformat()
    assert window["best"]["end"] == (top + timedelta(hours=17)).isoformat()
    assert window["now"]["start"] == top.isoformat()
    assert window["saving_co2e_g"] > 0
    assert window["saving_cost"] == "0.00"  # a flat tariff: the same price at every hour (USD, rounded once)
    assert window["explanation"].startswith(f"Run {top + timedelta(hours=10):%Y-%m-%d %H:%M} to ")
