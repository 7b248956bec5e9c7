"""The Scope 2 Quality Criteria an instrument is checked against (pure: no Django).

GHG Protocol Scope 2 Guidance (2015), table 7.1; each criterion a register can decide is checked here, and
reported met or failed with a sentence that names what is missing:

- ``emission_rate`` (criterion 1, conveys the direct emission rate attribute): a stated factor, or a
  technology whose direct emissions are zero (renewables and nuclear);
- ``evidence`` (criteria 2 and 3, the only instrument carrying the claim, tracked and retired or cancelled by
  or on behalf of the reporter): the fields an auditor checks against the registry, each named when missing.
  Certificates and PPAs: ``registry``, the certificate id range, the cancellation date, the beneficiary and
  the consumption period the cancellation states; a supplier rate: the supplier's disclosure
  (``evidence_reference``), the beneficiary and the consumption period. Free text alone is not evidence;
- ``vintage`` (criterion 4, "issued and redeemed as close as possible to the period of consumption"): the
  energy was generated in the reporting year or in the year before it, never after it; the cancellation
  falls no earlier than the consumption period's start;
- ``market_boundary`` (criterion 5): ``scope2.markets`` (the same market, and a deliverable bidding zone
  where the table knows both);
- ``supplier_rate`` (criterion 6, utility-specific emission factors "calculated based on delivered
  electricity, incorporating certificates sold and retired"): a supplier rate states it is so calculated
  (``supplier_rate_delivered_basis``); other instruments: not applicable;
- ``exclusive_claim`` (criterion 7, direct purchase or on-site generation: every instrument conveying the
  claim is transferred to the reporter only): a PPA, a direct line or on-site generation states it
  (``attributes_exclusive``); unbundled or bundled certificates: not applicable.

Criterion 8 (the residual mix) is the allocation's, not an instrument's (``scope2.allocation``).
An instrument failing any criterion is listed with its reasons and not used: its consumption falls to the
residual mix.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import NamedTuple

from scope2.markets import EU_EEA_CH, NORTH_AMERICA, country_of_zone, market_boundary_check, market_of_zone

__all__ = [
    "CARBON_FREE", "CRITERIA", "EU_EEA_CH", "NORTH_AMERICA", "RENEWABLE", "ZERO_DIRECT_EMISSIONS", "CriterionResult",
    "Evidence", "PurchaseType", "Technology", "country_of_zone", "criteria_check", "effective_factor_g_per_kwh",
    "market_of_zone",
]  # fmt: skip


class PurchaseType(enum.StrEnum):
    """How the instrument reached the organization (criterion 7 and the disclosure of instrument features)."""

    UNBUNDLED = "unbundled"  # certificates bought apart from the electricity
    BUNDLED = "bundled"  # certificates sold with the electricity supply
    DIRECT_LINE = "direct_line"  # a PPA or direct line from a generator
    ON_SITE = "on_site"  # generation on the organization's own site


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

CRITERIA = ("market_boundary", "vintage", "emission_rate", "evidence", "supplier_rate", "exclusive_claim")


def effective_factor_g_per_kwh(*, technology: str, stated: Decimal | None) -> Decimal | None:
    """The stated factor; 0 for a zero-emission technology with none stated; ``None``: unknown."""
    if stated is not None:
        return stated
    return Decimal(0) if technology in ZERO_DIRECT_EMISSIONS else None


class CriterionResult(NamedTuple):
    criterion: str
    met: bool
    detail: str


@dataclass(frozen=True)
class Evidence:
    """What an instrument states about its tracking, retirement and purchase (criteria 2, 3, 6 and 7)."""

    registry: str = ""
    certificate_id_from: str = ""
    certificate_id_to: str = ""
    cancellation_date: date | None = None
    beneficiary: str = ""
    consumption_start: date | None = None
    consumption_end: date | None = None
    reference: str = ""  # a contract or the supplier's disclosure
    file_attached: bool = False
    purchase_type: str = ""
    attributes_exclusive: bool | None = None
    supplier_rate_delivered_basis: bool | None = None


def _missing_evidence(kind: str, evidence: Evidence) -> list[str]:
    needed: dict[str, object] = {"beneficiary": evidence.beneficiary.strip(),
                                 "consumption_period_start": evidence.consumption_start,
                                 "consumption_period_end": evidence.consumption_end}  # fmt: skip
    if kind == "supplier_rate":
        needed["evidence_reference"] = evidence.reference.strip() or evidence.file_attached
    else:
        needed |= {"registry": evidence.registry.strip(), "certificate_id_from": evidence.certificate_id_from.strip(),
                   "certificate_id_to": evidence.certificate_id_to.strip(),
                   "cancellation_date": evidence.cancellation_date}  # fmt: skip
    return [name for name, value in needed.items() if not value]


def _evidence(kind: str, evidence: Evidence) -> CriterionResult:
    if missing := _missing_evidence(kind, evidence):
        return CriterionResult("evidence", False, f"missing: {', '.join(missing)} (criteria 2-3: tracked, retired)")
    if kind == "supplier_rate":
        period = f"{evidence.consumption_start} to {evidence.consumption_end}"
        return CriterionResult(
            "evidence", True, f"supplier disclosure for {evidence.beneficiary}, consumption {period}"
        )
    return CriterionResult(
        "evidence", True,
        f"{evidence.registry} {evidence.certificate_id_from} to {evidence.certificate_id_to}, cancelled "
        f"{evidence.cancellation_date} for {evidence.beneficiary}, consumption {evidence.consumption_start} to "
        f"{evidence.consumption_end}",
    )  # fmt: skip


def _vintage(vintage_year: int, reporting_year: int) -> CriterionResult:
    earliest = reporting_year - VINTAGE_YEARS_BEFORE
    detail = f"vintage {vintage_year}; accepted for {reporting_year}: {earliest}-{reporting_year}"
    return CriterionResult("vintage", earliest <= vintage_year <= reporting_year, detail)


def _stated(name: str, *, not_applicable: str | None, stated: bool, met: str, unmet: str) -> CriterionResult:
    """A criterion the organization meets by stating a fact (``stated``), unless ``not_applicable`` says why not."""
    if not_applicable is not None:
        return CriterionResult(name, True, f"not applicable: {not_applicable}")
    return CriterionResult(name, stated, met if stated else unmet)


def _supplier_rate(kind: str, evidence: Evidence) -> CriterionResult:
    return _stated(
        "supplier_rate",
        not_applicable=None if kind == "supplier_rate" else "not a utility-specific emission factor",
        stated=bool(evidence.supplier_rate_delivered_basis),
        met="calculated on delivered electricity, net of certificates sold and retired for the supplier's customers",
        unmet="criterion 6: the supplier does not state that its rate is calculated on delivered electricity, net "
        "of certificates sold and retired (supplier_rate_delivered_basis)",
    )


def _exclusive_claim(kind: str, evidence: Evidence) -> CriterionResult:
    direct = kind == "ppa" or evidence.purchase_type in (PurchaseType.DIRECT_LINE, PurchaseType.ON_SITE)
    how = evidence.purchase_type or "not stated"
    return _stated(
        "exclusive_claim",
        not_applicable=None if direct else f"not a direct purchase (purchase: {how})",
        stated=bool(evidence.attributes_exclusive),
        met="every instrument conveying the claim is transferred to the organization only",
        unmet="criterion 7: a direct purchase or on-site generation must state that every instrument conveying its "
        "claim is transferred to the organization only (attributes_exclusive)",
    )


def criteria_check(
    *,
    kind: str,
    site_zone: str,
    generation_zone: str,
    vintage_year: int,
    reporting_year: int,
    technology: str,
    stated_factor: Decimal | None,
    evidence: Evidence,
) -> tuple[CriterionResult, ...]:
    """Each criterion, met or failed, with a sentence an auditor can read."""
    factor = effective_factor_g_per_kwh(technology=technology, stated=stated_factor)
    boundary = market_boundary_check(site_zone=site_zone, generation_zone=generation_zone)
    return (
        CriterionResult("market_boundary", boundary.met, boundary.detail),
        _vintage(vintage_year, reporting_year),
        CriterionResult(
            "emission_rate",
            factor is not None,
            f"{factor} gCO2e/kWh" if factor is not None else f"no factor stated for {technology}",
        ),
        _evidence(kind, evidence),
        _supplier_rate(kind, evidence),
        _exclusive_claim(kind, evidence),
    )
