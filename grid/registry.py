"""Build providers from configuration: a name plus settings, or the process environment.

Environment (read by ``providers_from_env``; every failure is a ValueError naming the key):

- ``GRID_PROVIDERS``: which provider answers for which zones, in order of
  preference, providers separated by ";" and zones by ",". A zone may name the
  provider's own region after "=": ``electricitymaps:DE,US-CAL-CISO;
  watttime:US-CAL-CISO=CAISO_NORTH;carbonintensity.org.uk:GB,GB-LONDON=GB-REGION-13``.
- ``ELECTRICITYMAPS_API_TOKEN`` (required for electricitymaps), ``ELECTRICITYMAPS_BASE_URL``,
  ``ELECTRICITYMAPS_EMISSION_FACTOR_TYPE`` ("both" default: lifecycle with direct beside it; or
  "lifecycle" or "direct" alone).
- ``WATTTIME_USERNAME``, ``WATTTIME_PASSWORD`` (required for watttime), ``WATTTIME_BASE_URL``,
  ``WATTTIME_SIGNAL_TYPE`` ("co2_moer" default, or "co2_aoer").
- ``CARBONINTENSITY_UK_BASE_URL``.
- ``GRID_PROVIDER_TIMEOUT_S``: per-request timeout for all providers (default 10).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from grid.annual import AnnualProvider
from grid.carbonintensity_uk import CarbonIntensityUKProvider
from grid.electricitymaps import ElectricityMapsProvider
from grid.intensity import IntensityProvider
from grid.watttime import WattTimeProvider

_BUILDERS: dict[str, Callable[..., IntensityProvider]] = {
    "electricitymaps": ElectricityMapsProvider,
    "watttime": WattTimeProvider,
    "carbonintensity.org.uk": CarbonIntensityUKProvider,
    "annual": AnnualProvider,
}
_SETTINGS: dict[str, tuple[frozenset[str], frozenset[str]]] = {  # (required, optional)
    "electricitymaps": (
        frozenset({"api_token"}),
        frozenset({"base_url", "timeout_s", "emission_factor_type", "zone_map"}),
    ),
    "watttime": (frozenset({"username", "password"}), frozenset({"base_url", "timeout_s", "signal_type", "zone_map"})),
    "carbonintensity.org.uk": (frozenset(), frozenset({"base_url", "timeout_s", "zone_map"})),
    "annual": (frozenset(), frozenset()),
}
PROVIDER_NAMES = tuple(_BUILDERS)
ENV_KEYS: dict[str, dict[str, str]] = {
    "electricitymaps": {
        "api_token": "ELECTRICITYMAPS_API_TOKEN",
        "base_url": "ELECTRICITYMAPS_BASE_URL",
        "emission_factor_type": "ELECTRICITYMAPS_EMISSION_FACTOR_TYPE",
    },
    "watttime": {
        "username": "WATTTIME_USERNAME",
        "password": "WATTTIME_PASSWORD",
        "base_url": "WATTTIME_BASE_URL",
        "signal_type": "WATTTIME_SIGNAL_TYPE",
    },
    "carbonintensity.org.uk": {"base_url": "CARBONINTENSITY_UK_BASE_URL"},
    "annual": {},
}
TIMEOUT_ENV_KEY = "GRID_PROVIDER_TIMEOUT_S"


def provider_for(name: str, **config: Any) -> IntensityProvider:
    """A provider by name ("electricitymaps", "watttime", "carbonintensity.org.uk", "annual")."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown grid provider {name!r}; known: {', '.join(PROVIDER_NAMES)}")
    required, optional = _SETTINGS[name]
    missing = sorted(key for key in required if not config.get(key))
    unknown = sorted(set(config) - required - optional)
    if missing or unknown:
        raise ValueError(f"grid provider {name!r}: missing settings {missing}, unknown settings {unknown}")
    return _BUILDERS[name](**config)


class ConfiguredProvider(NamedTuple):
    """A provider and the zones it answers for (our zone → the provider's zone or region)."""

    name: str
    provider: IntensityProvider
    zone_map: Mapping[str, str]


def parse_grid_providers(spec: str) -> dict[str, dict[str, str]]:
    """``"electricitymaps:DE,SE;watttime:US-CAL-CISO=CAISO_NORTH"`` → name → {zone: provider zone}."""
    providers: dict[str, dict[str, str]] = {}
    for part in filter(None, (piece.strip() for piece in spec.split(";"))):
        name, sep, zones = part.partition(":")
        name = name.strip()
        if not sep or name not in _BUILDERS or name in providers:
            raise ValueError(f"GRID_PROVIDERS: {part!r} must be 'provider:ZONE[,ZONE...]' with a known provider once")
        providers[name] = _zone_map(name, zones)
    return providers


def _zone_map(name: str, zones: str) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for entry in (piece.strip() for piece in zones.split(",")):
        zone, _, provider_zone = (text.strip() for text in entry.partition("="))
        if not zone or ("=" in entry and not provider_zone) or zone in mapping:
            raise ValueError(f"GRID_PROVIDERS: bad or repeated zone {entry!r} for {name}")
        mapping[zone] = provider_zone or zone
    return mapping


def config_from_env(name: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings of provider ``name`` found in ``environ`` (blank values count as unset)."""
    if name not in ENV_KEYS:
        raise ValueError(f"unknown grid provider {name!r}; known: {', '.join(PROVIDER_NAMES)}")
    config: dict[str, Any] = {
        setting: environ[key].strip() for setting, key in ENV_KEYS[name].items() if environ.get(key, "").strip()
    }
    timeout = environ.get(TIMEOUT_ENV_KEY, "").strip()
    if timeout and name != "annual":
        try:
            config["timeout_s"] = float(timeout)
        except ValueError:
            raise ValueError(f"{TIMEOUT_ENV_KEY} must be a number of seconds, got {timeout!r}") from None
    return config


def providers_from_env(environ: Mapping[str, str]) -> list[ConfiguredProvider]:
    """The providers GRID_PROVIDERS names, built from their environment settings, in order."""
    configured = []
    for name, zone_map in parse_grid_providers(environ.get("GRID_PROVIDERS", "")).items():
        unset = [
            ENV_KEYS[name][setting]
            for setting in sorted(_SETTINGS[name][0])
            if not environ.get(ENV_KEYS[name][setting])
        ]
        if unset:
            raise ValueError(f"GRID_PROVIDERS uses {name}, which needs {', '.join(unset)}")
        extra = {"zone_map": zone_map} if name != "annual" else {}
        configured.append(
            ConfiguredProvider(name, provider_for(name, **config_from_env(name, environ), **extra), zone_map)
        )
    return configured


def providers_for_zone(configured: list[ConfiguredProvider], zone: str) -> list[IntensityProvider]:
    """The providers configured for ``zone``, most preferred first."""
    return [entry.provider for entry in configured if zone in entry.zone_map]
