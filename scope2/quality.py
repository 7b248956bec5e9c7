"""The Scope 2 Quality Criteria an instrument is checked against (pure: no Django).

GHG Protocol Scope 2 Guidance, ch. 7.1. The criteria checked here are those a
register can decide:

- ``market_boundary`` (criterion 6): the generator is in the same market as the
  consumption. Markets, a stated simplification: the EU/EEA and Switzerland form
  one guarantee-of-origin market (GOs move between them under RED II art. 19 and
  the AIB hub); the United States and Canada one REC market; any other country
  is its own market. A zone's country is its first two letters (``US-CAL-CISO``
  is in US).
- ``vintage`` (criterion 4, "issued and redeemed as close as possible to the
  period of consumption"): the energy was generated in the reporting year or in
  the year before it, never after it.
- ``emission_rate`` (criterion 1, conveys the attributes): a stated factor, or a
  technology whose direct emissions are zero (renewables and nuclear).
- ``evidence`` (criteria 2-3, uniquely claimed, retired): a contract or
  cancellation reference, or an attached statement.

An instrument failing any criterion is listed with its reasons and not used:
its consumption falls to the residual mix.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from decimal import Decimal

# fmt: off
EU_EEA_CH = frozenset({
    "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IT",
    "LT", "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK", "IS", "LI", "NO", "CH",
})
# fmt: on
NORTH_AMERICA = frozenset({"US", "CA"})


class Technology(enum.StrEnum):
    """How an instrument's energy was generated (the register's ``technology``), as the criteria and the
    disclosures read it."""

    SOLAR = "solar"
    WIND = "wind"
    HYDRO = "hydro"
    GEOTHERMAL = "geothermal"
    BIOMASS = "biomass"
    NUCLEAR = "nuclear"
    FOSSIL = "fossil"
    MIXED = "mixed"  # a supplier's mix


RENEWABLE = frozenset({Technology.SOLAR, Technology.WIND, Technology.HYDRO, Technology.GEOTHERMAL, Technology.BIOMASS})
ZERO_DIRECT_EMISSIONS = RENEWABLE | {Technology.NUCLEAR}
CARBON_FREE = ZERO_DIRECT_EMISSIONS - {Technology.BIOMASS}
VINTAGE_YEARS_BEFORE = 1

CRITERIA = ("market_boundary", "vintage", "emission_rate", "evidence")


def country_of_zone(zone: str) -> str:
    return zone.strip().upper()[:2]


def market_of_zone(zone: str) -> str:
    """The market boundary a zone belongs to: ``EU-EEA-CH``, ``US-CA`` or the country code."""
    country = "GR" if country_of_zone(zone) == "EL" else country_of_zone(zone)
    if country in EU_EEA_CH:
        return "EU-EEA-CH"
    if country in NORTH_AMERICA:
        return "US-CA"
    return country


def effective_factor_g_per_kwh(*, technology: str, stated: Decimal | None) -> Decimal | None:
    """The stated factor; 0 for a zero-emission technology with none stated; ``None``: unknown."""
    if stated is not None:
        return stated
    return Decimal(0) if technology in ZERO_DIRECT_EMISSIONS else None


@dataclass(frozen=True)
class CriterionResult:
    criterion: str
    met: bool
    detail: str


def criteria_check(
    *,
    site_zone: str,
    generation_zone: str,
    vintage_year: int,
    reporting_year: int,
    technology: str,
    stated_factor: Decimal | None,
    has_evidence: bool,
) -> tuple[CriterionResult, ...]:
    """Each criterion, met or failed, with a sentence an auditor can read."""
    site_market, generation_market = market_of_zone(site_zone), market_of_zone(generation_zone)
    earliest = reporting_year - VINTAGE_YEARS_BEFORE
    factor = effective_factor_g_per_kwh(technology=technology, stated=stated_factor)
    return (
        CriterionResult(
            "market_boundary",
            site_market == generation_market,
            f"generated in {generation_zone} ({generation_market}), consumed in {site_zone} ({site_market})",
        ),
        CriterionResult(
            "vintage",
            earliest <= vintage_year <= reporting_year,
            f"vintage {vintage_year}; accepted for {reporting_year}: {earliest}-{reporting_year}",
        ),
        CriterionResult(
            "emission_rate",
            factor is not None,
            f"{factor} gCO2e/kWh" if factor is not None else f"no factor stated for {technology}",
        ),
        CriterionResult(
            "evidence", has_evidence, "reference or statement attached" if has_evidence else "no evidence attached"
        ),
    )
