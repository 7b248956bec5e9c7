"""Where each emission factor in a report came from, with the licence and attribution it needs. Pure.

Location-based sources are the ``location_source`` values of ledger lines: the
shipped annual averages (``electricitymaps-yearly-2024``, ``ember-2023``), live
providers (``electricitymaps``, ``watttime``, ``carbonintensity.org.uk``) and an
organization's uploads (``csv:<name>``). Market-based sources are what the site's
market factors were entered with (``contract:PPA-7``, a residual-mix name).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from grid.annual import (
    EM_ATTRIBUTION,
    EM_LICENCE,
    EMBER_ATTRIBUTION,
    EMBER_LICENCE,
    UNFCCC_ATTRIBUTION,
    UNFCCC_LICENCE,
    UNFCCC_SOURCE,
)


class FactorOrigin(enum.StrEnum):
    ANNUAL = "annual"  # the shipped yearly average standing in for missing hours
    LIVE = "live"  # an hourly value from a grid-intensity provider
    UPLOAD = "upload"  # hourly values the organization uploaded (its supplier's, say)
    MARKET = "market"  # a site's market factor (contracts, residual mix)
    SIMULATED = "simulated"  # made up for a demo (``simulated:...``): no data, no licence
    UNKNOWN = "unknown"


NOT_APPLICABLE_SIMULATED = "not applicable (simulated)"


@dataclass(frozen=True)
class FactorSource:
    origin: FactorOrigin
    licence: str
    attribution: str


# Live providers: the data comes under the terms of the organization's own account
# with the provider (Electricity Maps, WattTime) or its published licence.
_LIVE: dict[str, FactorSource] = {
    "electricitymaps": FactorSource(
        FactorOrigin.LIVE,
        "Electricity Maps API terms (the organization's account)",
        "Electricity Maps (electricitymaps.com)",
    ),
    "watttime": FactorSource(
        FactorOrigin.LIVE, "WattTime API terms (the organization's account)", "WattTime (watttime.org)"
    ),
    "carbonintensity.org.uk": FactorSource(
        FactorOrigin.LIVE, "CC-BY-4.0", "Carbon Intensity API (carbonintensity.org.uk), National Energy System Operator"
    ),
}


def location_factor_source(source: str) -> FactorSource:
    """Origin, licence and attribution of a location-based ``source`` as stored on ledger lines."""
    if source.startswith("electricitymaps-yearly-"):
        return FactorSource(FactorOrigin.ANNUAL, EM_LICENCE, EM_ATTRIBUTION)
    if source.startswith("ember-"):
        return FactorSource(FactorOrigin.ANNUAL, EMBER_LICENCE, EMBER_ATTRIBUTION)
    if source == UNFCCC_SOURCE:
        return FactorSource(FactorOrigin.ANNUAL, UNFCCC_LICENCE, UNFCCC_ATTRIBUTION)
    if source.startswith("csv:"):
        return FactorSource(
            FactorOrigin.UPLOAD, "as agreed with the supplier", f"uploaded by the organization ({source})"
        )
    if source in _LIVE:
        return _LIVE[source]
    if source.startswith("simulated:"):
        return FactorSource(
            FactorOrigin.SIMULATED, NOT_APPLICABLE_SIMULATED, "simulated from the zone's annual average (demo data)"
        )
    return FactorSource(FactorOrigin.UNKNOWN, "", "")


def market_factor_source(source: str) -> FactorSource:
    """A market factor's source is what was entered with it: the contract or residual mix it names."""
    return FactorSource(
        FactorOrigin.MARKET,
        "not applicable (the organization's own figure)",
        f"site market factor entered by the organization ({source})",
    )
