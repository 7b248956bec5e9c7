from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from grid import (
    AnnualProvider,
    CarbonIntensityUKProvider,
    ElectricityMapsProvider,
    IntensityProvider,
    WattTimeProvider,
    config_from_env,
    parse_grid_providers,
    provider_for,
    providers_for_zone,
    providers_from_env,
)
from tests.helpers.grid_provider import FakeProvider, Reply


def test_provider_for_builds_each_kind() -> None:
    assert isinstance(provider_for("electricitymaps", api_token="t"), ElectricityMapsProvider)
    assert isinstance(provider_for("watttime", username="u", password="p"), WattTimeProvider)
    assert isinstance(provider_for("carbonintensity.org.uk"), CarbonIntensityUKProvider)
    assert isinstance(provider_for("annual"), AnnualProvider)
    for name in ("electricitymaps", "watttime", "carbonintensity.org.uk", "annual"):
        assert isinstance(provider_for(name, **_minimal(name)), IntensityProvider)


def _minimal(name: str) -> dict[str, str]:
    return {"electricitymaps": {"api_token": "t"}, "watttime": {"username": "u", "password": "p"}}.get(name, {})


@pytest.mark.parametrize(
    ("name", "config", "message"),
    [
        ("nope", {}, "unknown grid provider 'nope'"),
        ("electricitymaps", {}, r"missing settings \['api_token'\]"),
        ("watttime", {"username": "u"}, r"missing settings \['password'\]"),
        ("carbonintensity.org.uk", {"api_token": "t"}, r"unknown settings \['api_token'\]"),
        ("electricitymaps", {"api_token": "t", "base_url": "ftp://x"}, "base URL"),
    ],
)
def test_provider_for_fails_loudly(name: str, config: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        provider_for(name, **config)


def test_parse_grid_providers() -> None:
    spec = (
        " electricitymaps:DE, US-CAL-CISO ; watttime:US-CAL-CISO=CAISO_NORTH;"
        "carbonintensity.org.uk:GB,LON=GB-REGION-13 ;"
    )
    assert parse_grid_providers(spec) == {
        "electricitymaps": {"DE": "DE", "US-CAL-CISO": "US-CAL-CISO"},
        "watttime": {"US-CAL-CISO": "CAISO_NORTH"},
        "carbonintensity.org.uk": {"GB": "GB", "LON": "GB-REGION-13"},
    }
    assert parse_grid_providers("") == {}


@pytest.mark.parametrize(
    "spec",
    [
        "electricitymaps",
        "bogus:DE",
        "electricitymaps:DE;electricitymaps:SE",
        "watttime:",
        "watttime:A=",
        "watttime:A,A",
    ],
)
def test_parse_grid_providers_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError, match="GRID_PROVIDERS"):
        parse_grid_providers(spec)


def test_config_from_env_reads_the_documented_keys() -> None:
    environ = {
        "WATTTIME_USERNAME": "alice",
        "WATTTIME_PASSWORD": "pw",
        "WATTTIME_BASE_URL": "http://127.0.0.1:9",
        "WATTTIME_SIGNAL_TYPE": "",
        "GRID_PROVIDER_TIMEOUT_S": "2.5",
    }
    assert config_from_env("watttime", environ) == {
        "username": "alice",
        "password": "pw",
        "base_url": "http://127.0.0.1:9",
        "timeout_s": 2.5,
    }
    with pytest.raises(ValueError, match="GRID_PROVIDER_TIMEOUT_S"):
        config_from_env("watttime", {"GRID_PROVIDER_TIMEOUT_S": "soon"})
    with pytest.raises(ValueError, match="timeout_s"):
        provider_for(
            "carbonintensity.org.uk", **config_from_env("carbonintensity.org.uk", {"GRID_PROVIDER_TIMEOUT_S": "0"})
        )
    with pytest.raises(ValueError, match="unknown grid provider"):
        config_from_env("csv", {})


def test_providers_from_env_wires_zones_and_credentials(fake: FakeProvider) -> None:
    # given: Electricity Maps for a site zone that is a differently named EM zone
    environ = {
        "GRID_PROVIDERS": "electricitymaps:site-de=DE;annual:site-de",
        "ELECTRICITYMAPS_API_TOKEN": "tok",
        "ELECTRICITYMAPS_BASE_URL": fake.base_url,
    }
    item = {"zone": "DE", "carbonIntensity": 302, "datetime": "2019-05-21T00:00:00.000Z", "isEstimated": False}
    fake.on("/v3/carbon-intensity/past-range", Reply(body={"zone": "DE", "data": [item]}))
    # when
    configured = providers_from_env(environ)
    (live, annual) = providers_for_zone(configured, "site-de")
    hours = live.fetch("site-de", datetime(2019, 5, 21, tzinfo=UTC), datetime(2019, 5, 21, 1, tzinfo=UTC))
    # then
    assert [entry.name for entry in configured] == ["electricitymaps", "annual"]
    assert [(h.zone, h.gco2e_per_kwh) for h in hours] == [("site-de", Decimal("302.000"))]
    assert fake.requests[0].query["zone"] == "DE" and fake.requests[0].headers["auth-token"] == "tok"
    assert isinstance(annual, AnnualProvider)
    assert providers_for_zone(configured, "elsewhere") == []


def test_providers_from_env_names_the_missing_variable() -> None:
    with pytest.raises(ValueError, match="WATTTIME_PASSWORD"):
        providers_from_env({"GRID_PROVIDERS": "watttime:CAISO_NORTH", "WATTTIME_USERNAME": "u"})
