"""Market boundaries: may an instrument generated in one zone serve consumption in another (pure: no Django)?

Scope 2 Quality Criterion 5 (GHG Protocol Scope 2 Guidance, 2015, table 7.1): contractual instruments shall
"be sourced from the same market in which the reporting entity's electricity-consuming operations are located
and to which the instrument is applied". Two checks, both must hold:

1. **the same market** (the 2015 reading): the EU/EEA and Switzerland form one market for guarantees of origin
   (Directive (EU) 2018/2001 art. 19; EECS transfers through the AIB hub); the United States and Canada one
   REC market; any other country is its own market. A zone's country is its first two letters.
2. **deliverable** (the reading the revision consultation of October 2025 proposes, and CDP's technical note
   already asks, e.g. no Icelandic GO for mainland consumption): in Europe, the generator's bidding zone is the
   site's bidding zone or one with an interconnector to it, from the table ``data/bidding-zones.json``.
   A country with several bidding zones (NO, SE, DK) given by its country code alone does not say which zone
   generated, so it fails with the zones to choose from. Where either zone is outside the table (outside
   Europe, Italy, the Western Balkans), only check 1 applies and the detail says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

# fmt: off
EU_EEA_CH = frozenset({
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IT",
    "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK", "IS", "LI", "NO", "CH",
})
# fmt: on
NORTH_AMERICA = frozenset({"US", "CA"})


@cache
def _table() -> dict[str, Any]:
    text = resources.files("scope2").joinpath("data", "bidding-zones.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def bidding_zones_source() -> str:
    return str(_table()["source"])


def country_of_zone(zone: str) -> str:
    country = zone.strip().upper()[:2]
    return "GR" if country == "EL" else country


def market_of_zone(zone: str) -> str:
    """The market a zone belongs to: ``EU-EEA-CH``, ``US-CA`` or the country code."""
    country = country_of_zone(zone)
    if country in EU_EEA_CH:
        return "EU-EEA-CH"
    if country in NORTH_AMERICA:
        return "US-CA"
    return country


def _zones_of_country(country: str) -> list[str]:
    return sorted(zone for zone, row in _table()["zones"].items() if row["country"] == country)


def _bidding_zone(zone: str) -> tuple[str | None, str | None]:
    """(the tabled bidding zone, None) or (None, why not: an ambiguous country code, or no table)."""
    name, zones = zone.strip().upper(), _table()["zones"]
    if name in zones:
        return name, None
    country = country_of_zone(name)
    choices = _zones_of_country(country)
    if len(choices) > 1:
        return None, f"{name} has {len(choices)} bidding zones ({', '.join(choices)}): state which one"
    if len(choices) == 1 and name == country:
        return choices[0], None
    return None, f"no bidding-zone table for {name}: deliverability not checked, market checked by country only"


@dataclass(frozen=True)
class BoundaryCheck:
    met: bool
    detail: str


def market_boundary_check(*, site_zone: str, generation_zone: str) -> BoundaryCheck:
    """Criterion 5: the same market and, where the table knows both zones, a deliverable bidding zone."""
    site_market, generation_market = market_of_zone(site_zone), market_of_zone(generation_zone)
    said = f"generated in {generation_zone} ({generation_market}), consumed in {site_zone} ({site_market})"
    if site_market != generation_market:
        return BoundaryCheck(False, f"{said}: not the same market")
    site_bz, site_why = _bidding_zone(site_zone)
    gen_bz, gen_why = _bidding_zone(generation_zone)
    if site_bz is None or gen_bz is None:
        ambiguous = [why for why in (gen_why, site_why) if why and "state which" in why]
        if ambiguous:
            return BoundaryCheck(False, f"{said}; {'; '.join(ambiguous)}")
        return BoundaryCheck(True, f"{said}; {gen_why or site_why}")
    if gen_bz == site_bz:
        return BoundaryCheck(True, f"{said}; the same bidding zone {site_bz}")
    if gen_bz in _table()["zones"][site_bz]["neighbours"]:
        return BoundaryCheck(True, f"{said}; bidding zone {gen_bz} is interconnected with {site_bz}")
    neighbours = ", ".join(_table()["zones"][site_bz]["neighbours"]) or "none"
    return BoundaryCheck(
        False,
        f"{said}; bidding zone {gen_bz} is not {site_bz} nor interconnected with it (its neighbours: {neighbours}): "
        "not deliverable",
    )
