"""The inventory as shown: Scope 1, Scope 2 (both methods), Scope 3 by category, totals, and the amortized view.

One shape for the sustainability report, the GHG table and the ESRS export (each imports ``inventory``).
Carbon in kgCO2e and tCO2e, energy in kWh; rounded here, once. Under the equity share approach every
emission figure is the organization's share (``boundary.share_applied``); energy stays whole.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from scope2.allocation import ZERO
from scope2.basis import (
    CATEGORY_3_METHOD,
    CATEGORY_3_NOT_KNOWN,
    LIFECYCLE_BASIS_NOTE,
    LOCATION_AS_STORED,
    SCOPE2_BASIS_RULE,
    BasisCoverage,
    combined,
)
from scope2.boundary import DEFAULT_RULE, RENTED_HARDWARE_NOTE, Boundary, ElectricityScope
from scope2.exports import G_PER_KG, G_PER_T, quantized
from scope2.inventory import (
    AmortizationInForce,
    CapitalGoods,
    ElectricityUse,
    amortization_in_force,
    amortized_embodied,
    capital_goods,
    electricity_use,
    organization_boundary,
    scope1_entries,
)
from scope2.models import NodeScope
from scope2.selectors import Scope2Report

KG_PER_T = Decimal(1000)
CATEGORY_2_BASIS = (
    "cradle-to-gate wanted (Scope 3 Standard, Category 2), but the catalog's figures are manufacturing to end of "
    "life excluding use: counted as stated, not split; whole in the period of acquisition (the asset's "
    "acquired_on, else the node's commissioning, else the card's first sample), never amortized"
)
CATEGORY_3_LABEL = "Fuel- and energy-related activities: upstream of the Scope 2 electricity's fuels and plants"
SCOPE1_NOT_APPLICABLE = "not applicable: no generator or refrigerant emissions entered for the period's sites"
AMORTIZED_USE = (
    "the ledger's embodied carbon of the hours held (SCI, for per-token figures and decisions), not an inventory "
    "figure: the inventory's is Category 2"
)
ELECTRICITY_LABELS = {
    ElectricityScope.CATEGORY_1: "Purchased goods and services: rented GPU capacity with power in the rent",
    ElectricityScope.CATEGORY_8: "Upstream leased assets: leased nodes operated outside the consolidation",
}
SCOPE3_ELECTRICITY_METHOD = (
    "asset-specific: the node's metered facility kWh x the grid's location-based intensity of its zone-hour "
    "(the provider's factors are not known)"
)


def _kg(co2e_kg: Decimal) -> float | None:
    return quantized(co2e_kg, 6)


def _t(co2e_kg: Decimal) -> float | None:
    return quantized(co2e_kg / KG_PER_T, 9)


def _scope1(entries: list[Any], share: Decimal) -> tuple[Decimal, dict[str, Any]]:
    kg = sum((entry.in_period_co2e_kg for entry in entries), ZERO) * share
    return kg, {
        "status": "reported" if entries else "not_applicable",
        "note": None if entries else SCOPE1_NOT_APPLICABLE,
        "kgco2e": _kg(kg),
        "tco2e": _t(kg),
        "entries": [
            {"id": e.id, "site": e.site, "activity": e.activity, "description": e.description,
             "entered_kgco2e": _kg(e.co2e_kg), "in_period_kgco2e": _kg(e.in_period_co2e_kg * share)}
            for e in entries
        ],
    }  # fmt: skip


def report_basis(report: Scope2Report) -> BasisCoverage:
    """The factor basis of the report's Scope 2 lines, all sites together."""
    return combined(report.bases.values())


def basis_output(coverage: BasisCoverage) -> dict[str, Any]:
    """How much of Scope 2 stands on which factor basis, and why part of it may be lifecycle."""
    return {
        "rule": SCOPE2_BASIS_RULE,
        "direct_kwh": quantized(coverage.direct_kwh, 6),
        "lifecycle_basis_kwh": quantized(coverage.lifecycle_basis_kwh, 6),
        "lifecycle_basis_note": LIFECYCLE_BASIS_NOTE if coverage.lifecycle_basis_kwh else None,
        "lifecycle_basis_sources": sorted(coverage.lifecycle_basis_sources),
    }


def _scope2(report: Scope2Report, share: Decimal) -> tuple[Decimal, Decimal, dict[str, Any]]:
    allocations = [site.allocation for site in report.sites]
    location_kg = sum((a.location_co2e_g for a in allocations), ZERO) / G_PER_KG * share
    market_kg = sum((a.market_co2e_g for a in allocations), ZERO) / G_PER_KG * share
    coverage = report_basis(report)
    return location_kg, market_kg, {
        "boundary": "nodes whose electricity is the organization's Scope 2 (owned, or power billed to it)",
        "facility_kwh": quantized(sum((a.consumption_kwh for a in allocations), ZERO), 6),
        "location_kgco2e": _kg(location_kg), "location_tco2e": _t(location_kg), "location_basis": coverage.basis,
        "location_unknown_kwh": quantized(sum((a.location_unknown_kwh for a in allocations), ZERO), 6),
        "market_kgco2e": _kg(market_kg), "market_tco2e": _t(market_kg),
        "market_unknown_kwh": quantized(sum((a.unknown_kwh for a in allocations), ZERO), 6),
        "market_basis": "scope2_instruments", "matching": report.matching,
        "market_location_fallback_basis": coverage.basis, "basis_coverage": basis_output(coverage),
    }  # fmt: skip


def _category_3(coverage: BasisCoverage, share: Decimal) -> tuple[Decimal, dict[str, Any]]:
    """Scope 3 Category 3: the upstream part (lifecycle - direct) of the Scope 2 hours that have both factors."""
    kg = coverage.category_3_co2e_g / G_PER_KG * share
    known = bool(coverage.category_3_kwh)
    return kg, {
        "label": CATEGORY_3_LABEL, "status": "reported" if known else "excluded",
        "reason": None if known else CATEGORY_3_NOT_KNOWN,
        "kgco2e": _kg(kg) if known else None, "tco2e": _t(kg) if known else None,
        "basis": "lifecycle_minus_direct", "method": CATEGORY_3_METHOD,
        "facility_kwh": quantized(coverage.category_3_kwh, 6),
        "inside_scope2_kwh": quantized(coverage.lifecycle_basis_kwh, 6),
        "not_known_kwh": quantized(coverage.direct_only_kwh, 6),
        "not_covered": "transmission and distribution losses (Category 3 activity C)",
    }  # fmt: skip


def _electricity_category(scope: ElectricityScope, use: ElectricityUse, share: Decimal) -> dict[str, Any]:
    kg = use.location_co2e_g / G_PER_KG * share
    return {
        "label": ELECTRICITY_LABELS[scope], "facility_kwh": quantized(use.facility_kwh, 6), "nodes": use.nodes,
        "kgco2e": _kg(kg), "tco2e": _t(kg), "location_unknown_kwh": quantized(use.location_unknown_kwh, 6),
        "method": SCOPE3_ELECTRICITY_METHOD, "hardware": RENTED_HARDWARE_NOTE,
        "basis": use.location_basis, "basis_note": LOCATION_AS_STORED,
    }  # fmt: skip


def _category_2(goods: CapitalGoods, share: Decimal) -> dict[str, Any]:
    return {
        "label": "Capital goods: owned cards and host shares acquired in the period",
        "kgco2e_central": _kg(goods.central_kg * share), "kgco2e_low": _kg(goods.low_kg * share),
        "kgco2e_high": _kg(goods.high_kg * share), "tco2e_central": _t(goods.central_kg * share),
        "cards": goods.cards, "host_shares": goods.host_shares, "second_hand_cards": goods.second_hand_cards,
        "unknown_model_cards": goods.unknown_model_cards, "gpu_models": sorted(goods.models),
        "basis": CATEGORY_2_BASIS,
        "second_hand": "a second-hand card counts the share of its footprint its earlier owners' use left",
    }  # fmt: skip


def _amortized(organization_id: int, report: Scope2Report, method: AmortizationInForce) -> dict[str, Any]:
    embodied = amortized_embodied(organization_id=organization_id, start=report.start, end=report.end)
    return {
        "basis": "amortized", "use": AMORTIZED_USE,
        "kgco2e_central": quantized(embodied.central_g / G_PER_KG, 6),
        "kgco2e_low": quantized(embodied.low_g / G_PER_KG, 6),
        "kgco2e_high": quantized(embodied.high_g / G_PER_KG, 6),
        "tco2e_central": quantized(embodied.central_g / G_PER_T, 9),
        "method": method_output(method),
    }  # fmt: skip


def method_output(method: AmortizationInForce) -> dict[str, Any]:
    """The amortization in force: as the period's lines were computed, the setting now, each model's life."""
    return {
        "amortization": method.setting,
        "amortization_in_lines": list(method.methods),
        "lives_years": {key: float(years) for key, years in method.lives_years.items()},
        "ends": "at the asset's own life, cards and host share alike (docs/accounting.md)",
        "utilization_note": "utilization amortization leaves unused time unattributed: for workload comparisons only"
        if "utilization" in (method.setting, *method.methods)
        else None,
    }


def _boundary(organization_id: int, boundary: Boundary) -> dict[str, Any]:
    choices = (
        NodeScope.objects.filter(organization_id=organization_id).exclude(electricity="auto").select_related("node")
    )
    return {
        "consolidation_approach": boundary.approach.value,
        "equity_share_pct": None if boundary.equity_share_pct is None else float(boundary.equity_share_pct),
        "share_applied": float(boundary.share),
        "rule": DEFAULT_RULE,
        "node_choices": [
            {"node_id": c.node_id, "hostname": c.node.hostname,
             "electricity": c.electricity, "reason": c.reason}
            for c in choices
        ],
    }  # fmt: skip


def inventory(*, report: Scope2Report) -> dict[str, Any]:
    """Scopes 1-3 and totals of ``report``'s organization and period (ESRS E1 AR 47's formulas for the totals)."""
    org, start, end = report.organization_id, report.start, report.end
    boundary = organization_boundary(organization_id=org)
    share = boundary.share
    scope1_kg, scope1 = _scope1(scope1_entries(organization_id=org, start=start, end=end), share)
    location_kg, market_kg, scope2 = _scope2(report, share)
    categories: dict[str, Any] = {}
    scope3_kg = ZERO
    for scope in (ElectricityScope.CATEGORY_1, ElectricityScope.CATEGORY_8):
        use = electricity_use(organization_id=org, start=start, end=end, where=report.line_filters[scope])
        categories[scope.value] = _electricity_category(scope, use, share)
        scope3_kg += use.location_co2e_g / G_PER_KG * share
    goods = capital_goods(organization_id=org, start=start, end=end)
    categories["category_2"] = _category_2(goods, share)
    category_3_kg, categories["category_3"] = _category_3(report_basis(report), share)
    scope3_kg += goods.central_kg * share + category_3_kg
    total_location, total_market = scope1_kg + location_kg + scope3_kg, scope1_kg + market_kg + scope3_kg
    method = amortization_in_force(organization_id=org, start=start, end=end)
    return {
        "boundary": _boundary(org, boundary),
        "scope1": scope1,
        "scope2": scope2,
        "scope3": {"kgco2e": _kg(scope3_kg), "tco2e": _t(scope3_kg), "capital_goods_estimate": "central",
                   **{key: categories[key] for key in sorted(categories, key=lambda k: int(k.split("_")[1]))}},
        "totals": {
            "location_kgco2e": _kg(total_location), "location_tco2e": _t(total_location),
            "market_kgco2e": _kg(total_market), "market_tco2e": _t(total_market),
            "formula": "Scope 1 + Scope 2 (location- or market-based) + Scope 3 (ESRS E1 AR 47; Category 2 central)",
            "basis": "Scope 2 on direct factors where known (scope2.basis_coverage), Category 3 lifecycle minus "
            "direct, Categories 1 and 8 the grid source's own figure",
        },
        "embodied_amortized": _amortized(org, report, method),
    }  # fmt: skip
