"""Grid-intensity forecasts for a zone from the configured live providers (for deferrable classes)."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from advice.deferral import ForecastHour
from grid.errors import ProviderError, UnsupportedZone
from grid.registry import providers_for_zone
from grid.stored_intensity import configured_providers

logger = logging.getLogger(__name__)


def forecast_hours(*, zone: str, environ: Mapping[str, str] | None = None) -> list[ForecastHour]:
    """The first configured provider's forecast for ``zone`` that answers; [] when none does.

    Providers are asked in ``GRID_PROVIDERS`` order; one failing is logged and the next asked.
    """
    if not zone:
        return []
    try:
        providers = providers_for_zone(configured_providers(environ), zone)
    except ValueError as error:  # a broken GRID_PROVIDERS: the ledger's fetch reports it too
        logger.warning("no forecast for %s: %s", zone, error)
        return []
    for provider in providers:
        forecast = getattr(provider, "forecast", None)
        if forecast is None:
            continue
        try:
            hours = forecast(zone)
        except (ProviderError, UnsupportedZone) as error:
            logger.warning("forecast of %s from %s failed: %s", zone, provider.name, error)
            continue
        if hours:
            return [ForecastHour(h.hour_start, h.gco2e_per_kwh, h.kind, h.source) for h in hours]
    return []
