"""The market-based figure a sustainability report leads with: the one to disclose.

Two market-based figures exist. The Scope 2 report's (``scope2_report``: contractual
instruments first, then the residual mix, the location factor where none is held,
labelled) is the GHG Protocol figure to disclose, so ``market_kgco2e`` /
``market_tco2e`` / ``market_unknown_facility_kwh`` are that one, with
``market_basis`` saying so. The ledger lines' site market factors stay beside it as
``market_site_factors_*``, for internal use (per-line and per-token figures use
them). The sustainability page and ``/api/v1/reports/sustainability/`` both take
their figures from ``sustainability_shown``: one rule, one place.
"""

from __future__ import annotations

from typing import Any

from fleets.models import Organization
from reports.display import MARKET_BASIS as SITE_FACTORS_BASIS
from reports.display import rounded, sustainability_output
from reports.sci import sci_block
from reports.selectors.sci import requests_answered
from reports.selectors.sustainability import SustainabilityReport
from scope2.allocation import ZERO
from scope2.basis import basis_of_located, combined, stored_basis
from scope2.exports import scope2_output
from scope2.inventory_output import inventory
from scope2.selectors import Scope2Report, scope2_report

MARKET_BASIS = "scope2_instruments"
MARKET_BASIS_NOTE = (
    "the GHG Protocol Scope 2 market-based figure to disclose: facility kWh allocated to contractual "
    "instruments first, then the residual mix (the location factor, labelled, where none is held), as "
    "/api/v1/reports/scope2/ reports it"
)


def sustainability_shown(
    *, report: SustainabilityReport, organization: Organization
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sustainability report as shown, led by the market-based figure to disclose; and the Scope 2 report
    of the same organization and period as shown (the figure's source, for the page's panel)."""
    shown = sustainability_output(report, organization)
    scope2_of = scope2_report(organization_id=organization.pk, start=report.start, end=report.end)
    scope2 = scope2_output(scope2_of, organization)
    inventory_shown = inventory(report=scope2_of)
    located = with_scope2_location(with_disclosed_market(shown, scope2), scope2_of, report)
    return with_sci(located, report, inventory_shown) | {"inventory": inventory_shown}, scope2


def with_sci(shown: dict[str, Any], report: SustainabilityReport, inventory_shown: dict[str, Any]) -> dict[str, Any]:
    """``shown`` with its SCI block (``reports.sci``: per request, 1k tokens, 1k output tokens; boundary and
    method), the amortization as the inventory states it; the top-level SCI figures are the block's (``None``,
    with the block's reason, where intensity or embodied coverage is incomplete)."""
    requests = requests_answered(organization_id=report.organization_id, start=report.start, end=report.end)
    block = sci_block(sums=report.sums, requests=requests, method=inventory_shown["embodied_amortized"]["method"])
    return shown | {
        "sci": block,
        "sci_gco2e_per_1k_tokens": block["gco2e_per_1k_tokens"],
        "sci_gco2e_per_1k_output_tokens": block["gco2e_per_1k_output_tokens"],
    }


def with_scope2_location(
    shown: dict[str, Any], scope2: Scope2Report, report: SustainabilityReport | None = None
) -> dict[str, Any]:
    """``shown`` with ``location_*`` the Scope 2 boundary's (``scope2.boundary``: rented capacity with power in
    the rent is Scope 3, not Scope 2), and the metered electricity of every node beside it as
    ``operational_location_*`` (what SCI and the per-token figures weigh); each with its factor basis
    (``scope2.basis``: Scope 2 direct where known, the others the grid source's own figure). The latter's basis
    from ``report``'s own sums where it carries them (``located_kwh``), else by a query of the lines."""
    allocations = [site.allocation for site in scope2.sites]
    location_g = sum((a.location_co2e_g for a in allocations), ZERO)
    unknown_kwh = sum((a.location_unknown_kwh for a in allocations), ZERO)
    known = shown["location_kgco2e"] is not None
    return shown | {
        "location_kgco2e": rounded(location_g / 1000, "kg") if known else None,
        "location_tco2e": rounded(location_g / 1_000_000, "t") if known else None,
        "location_unknown_facility_kwh": rounded(unknown_kwh, "kwh"),
        "location_basis": combined(scope2.bases.values()).basis,
        "operational_location_basis": _operational_basis(scope2, report),
        "operational_location_kgco2e": shown["location_kgco2e"],
        "operational_location_tco2e": shown["location_tco2e"],
        "operational_location_unknown_facility_kwh": shown["location_unknown_facility_kwh"],
    }


def _operational_basis(scope2: Scope2Report, report: SustainabilityReport | None) -> str | None:
    if report is not None and report.located_kwh is not None:
        return basis_of_located(*report.located_kwh)
    return stored_basis(organization_id=scope2.organization_id, start=scope2.start, end=scope2.end)


def with_disclosed_market(shown: dict[str, Any], scope2: dict[str, Any]) -> dict[str, Any]:
    """``shown`` (``sustainability_output``) with its site-factor market figures moved to
    ``market_site_factors_*`` and ``market_*`` taken from the Scope 2 report as shown."""
    market = scope2["market"]
    return shown | {
        "market_kgco2e": market["kgco2e"],
        "market_tco2e": market["tco2e"],
        "market_unknown_facility_kwh": market["unknown_kwh"],
        "market_basis": MARKET_BASIS,
        "market_site_factors_kgco2e": shown["market_kgco2e"],
        "market_site_factors_tco2e": shown["market_tco2e"],
        "market_site_factors_unknown_facility_kwh": shown["market_unknown_facility_kwh"],
        "market_site_factors_basis": SITE_FACTORS_BASIS,
    }
