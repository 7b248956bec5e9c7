"""Two fixed shapes of the Scope 2 report: the GHG Protocol table and the ESRS E1 datapoints.

- ``ghg_table``: GHG Protocol Scope 2 Guidance, ch. 7.1 (dual reporting): one
  row per site and a total, location- and market-based side by side, the
  energy each instrument type covered and what took the residual mix.
- ``esrs_datapoints``: keyed to ESRS E1 (Commission Delegated Regulation (EU)
  2023/2772) paragraphs: E1-5 para. 37 (energy consumption, MWh) and E1-6
  paras. 49(a) and 49(b), the two halves of 44(b) (gross Scope 2, location- and market-based,
  tCO2eq), with AR 45(d) (the share covered by contractual instruments). The
  boundary is the electricity Wattledger meters (the GPU fleets' facility
  energy), stated in every datapoint.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from scope2.allocation import ZERO, SiteAllocation
from scope2.basis import BasisCoverage, combined
from scope2.exports import G_PER_T, KWH_PER_MWH, quantized
from scope2.quality import RENEWABLE, Technology, market_of_zone
from scope2.selectors import Scope2Report

KINDS = ("ppa", "go", "rec", "supplier_rate")
BOUNDARY = (
    "electricity metered by Wattledger within the organizational boundary: the facility energy (IT energy x PUE) "
    "of the nodes whose electricity is the organization's Scope 2 (scope2.boundary)"
)
INVENTORY_BOUNDARY = "the inventory within the organizational boundary (scope2.boundary; see inventory.boundary)"

GHG_COLUMNS = [
    "site", "grid_zone", "market_boundary", "electricity_mwh", "location_based_tco2e",
    "location_based_gco2e_per_kwh", "market_based_tco2e", "market_based_gco2e_per_kwh", "market_based_matching",
    *(f"{kind}_mwh" for kind in KINDS), "residual_mix_mwh", "residual_mix_gco2e_per_kwh", "residual_mix_source",
    "residual_mix_year", "location_fallback_mwh", "unknown_factor_mwh", "note", "basis",
]  # fmt: skip


def _per_kwh(co2e_g: Decimal, kwh: Decimal) -> float | None:
    return quantized(co2e_g / kwh, 3) if kwh else None


def _ghg_row(
    name: str, zone: str, allocations: list[SiteAllocation], residual: Any, basis: BasisCoverage | None = None
) -> dict[str, Any]:
    def total(attribute: str) -> Decimal:
        return sum((getattr(allocation, attribute) for allocation in allocations), ZERO)

    consumed, market_g = total("consumption_kwh"), total("market_co2e_g")
    located_kwh = consumed - total("location_unknown_kwh")
    row: dict[str, Any] = {
        "site": name,
        "grid_zone": zone,
        "market_boundary": market_of_zone(zone) if zone else "",
        "electricity_mwh": quantized(consumed / KWH_PER_MWH, 6),
        "location_based_tco2e": quantized(total("location_co2e_g") / G_PER_T, 6),
        "location_based_gco2e_per_kwh": _per_kwh(total("location_co2e_g"), located_kwh),
        "market_based_tco2e": quantized(market_g / G_PER_T, 6),
        "market_based_gco2e_per_kwh": _per_kwh(market_g, consumed - total("unknown_kwh")),
        "residual_mix_mwh": quantized(total("residual_mix_kwh") / KWH_PER_MWH, 6),
        "residual_mix_gco2e_per_kwh": quantized(residual.gco2e_per_kwh, 3) if residual else None,
        "residual_mix_source": residual.source if residual else "",
        "residual_mix_year": residual.year if residual else None,
        "location_fallback_mwh": quantized(total("location_fallback_kwh") / KWH_PER_MWH, 6),
        "unknown_factor_mwh": quantized(total("unknown_kwh") / KWH_PER_MWH, 6),
        "note": "Scope 2" if name == "TOTAL" else "",
        "basis": basis.basis if basis is not None else None,  # of location_based_* (scope2.basis)
    }
    for kind in KINDS:
        kwh = sum((use.matched_kwh for a in allocations for use in a.uses if use.instrument.kind == kind), ZERO)
        row[f"{kind}_mwh"] = quantized(kwh / KWH_PER_MWH, 6)
    return row


def ghg_table(report: Scope2Report) -> list[dict[str, Any]]:
    """One row per site, then ``TOTAL`` (its factors are consumption-weighted; residual mix per site only); the
    market-based figure is the disclosed matching's (``market_based_matching``)."""
    rows = [
        _ghg_row(
            site.site.name, site.site.grid_zone, [site.allocation], site.residual_mix, report.bases.get(site.site.pk)
        )
        for site in report.sites
    ]
    rows.append(
        _ghg_row("TOTAL", "", [site.allocation for site in report.sites], None, combined(report.bases.values()))
    )
    return [row | {"market_based_matching": report.matching} for row in rows]


def _matched_kwh(report: Scope2Report, technologies: frozenset[str]) -> Decimal:
    return sum(
        (use.matched_kwh for site in report.sites for use in site.allocation.uses
         if use.instrument.technology in technologies),
        ZERO,
    )  # fmt: skip


def _other_matching(report: Scope2Report, share: Decimal) -> dict[str, Any]:
    """The market-based figure under the matching not disclosed, beside the disclosed one (never instead)."""
    other = "hourly" if report.matching == "annual" else "annual"
    other_g = sum((getattr(site, other).market_co2e_g for site in report.sites), ZERO) * share
    return {"other_matching": {"matching": other, "value": quantized(other_g / G_PER_T, 6)}}


def esrs_datapoints(report: Scope2Report, share: Decimal = Decimal(1)) -> list[dict[str, Any]]:
    """E1-5 energy and E1-6 Scope 2; ``share``: the equity share applied to the emissions (1 under control)."""
    allocations = [site.allocation for site in report.sites]
    consumed = sum((a.consumption_kwh for a in allocations), ZERO)
    covered = sum((a.instruments_kwh for a in allocations), ZERO)
    location_g = sum((a.location_co2e_g for a in allocations), ZERO) * share
    market_g = sum((a.market_co2e_g for a in allocations), ZERO) * share
    basis = combined(report.bases.values()).basis
    kinds = sorted({use.instrument.kind for a in allocations for use in a.uses if use.matched_kwh})

    def point(key: str, label: str, value: float | None, unit: str, **extra: Any) -> dict[str, Any]:
        return {"datapoint": key, "label": label, "value": value, "unit": unit, "boundary": BOUNDARY, **extra}

    return [
        point(
            "E1-5.37", "Total energy consumption related to own operations", quantized(consumed / KWH_PER_MWH, 6), "MWh"
        ),
        point(
            "E1-5.37(b)",
            "Consumption from nuclear sources (contractual instruments)",
            quantized(_matched_kwh(report, frozenset({Technology.NUCLEAR})) / KWH_PER_MWH, 6),
            "MWh",
        ),
        point(
            "E1-5.37(c)(ii)",
            "Consumption of purchased or acquired electricity from renewable sources (contractual instruments)",
            quantized(_matched_kwh(report, RENEWABLE) / KWH_PER_MWH, 6),
            "MWh",
            note="renewable energy in the residual mix or the grid is not counted",
        ),
        point(
            "E1-6.49(a)",
            "Gross location-based Scope 2 GHG emissions",
            quantized(location_g / G_PER_T, 6),
            "tCO2eq",
            basis=basis,
        ),
        point(
            "E1-6.49(b)",
            "Gross market-based Scope 2 GHG emissions",
            quantized(market_g / G_PER_T, 6),
            "tCO2eq",
            basis=basis,
            note="instruments at their stated factors; the grid fallback on the location basis",
            matching=report.matching,
            **_other_matching(report, share),
        ),
        point(
            "E1-6.AR45(d)",
            "Share of consumption covered by contractual instruments",
            quantized(covered / consumed, 6) if consumed else None,
            "share (0-1)",
            instrument_types=kinds,
        ),
    ]


def _inventory_row(name: str, location_t: float | None, market_t: float | None, **extra: Any) -> dict[str, Any]:
    return {"site": name, "location_based_tco2e": location_t, "market_based_tco2e": market_t, **extra}


def ghg_inventory_rows(inventory: dict[str, Any]) -> list[dict[str, Any]]:
    """The GHG table's rows beyond Scope 2 (GHG Protocol Corporate Standard, ch. 9): Scope 1, Scope 3 by
    category and the total of Scopes 1-3, in the table's columns (a Scope 3 figure is the same under both
    methods; ``note`` says what each row is)."""
    scope1, scope3, totals = inventory["scope1"], inventory["scope3"], inventory["totals"]
    rows = [_inventory_row("SCOPE 1", scope1["tco2e"], scope1["tco2e"], note=scope1["note"] or scope1["status"],
                           basis="as_entered")]  # fmt: skip
    for key in ("category_1", "category_8"):
        category = scope3[key]
        rows.append(_inventory_row(
            f"SCOPE 3 {key.upper().replace('_', ' ')}", category["tco2e"], category["tco2e"],
            electricity_mwh=quantized(Decimal(str(category["facility_kwh"])) / KWH_PER_MWH, 6),
            note=f"{category['label']}; {category['method']}", basis=category["basis"],
        ))  # fmt: skip
    goods = scope3["category_2"]
    rows.append(_inventory_row("SCOPE 3 CATEGORY 2", goods["tco2e_central"], goods["tco2e_central"],
                               note=f"{goods['label']} (central); {goods['basis']}", basis="embodied"))  # fmt: skip
    fuel = scope3["category_3"]
    rows.append(_inventory_row(
        "SCOPE 3 CATEGORY 3", fuel["tco2e"], fuel["tco2e"], basis=fuel["basis"],
        electricity_mwh=quantized(Decimal(str(fuel["facility_kwh"])) / KWH_PER_MWH, 6),
        note=fuel["reason"] or f"{fuel['label']}; {fuel['method']}",
    ))  # fmt: skip
    rows.append(_inventory_row("TOTAL SCOPES 1-3", totals["location_tco2e"], totals["market_tco2e"],
                               note=totals["formula"], basis="per_row"))  # fmt: skip
    rows.append(_inventory_row("MEMO: EMBODIED AMORTIZED", None, None, note=_amortized_note(inventory),
                               basis="amortized"))  # fmt: skip
    return [{column: row.get(column) for column in GHG_COLUMNS} for row in rows]


def _amortized_note(inventory: dict[str, Any]) -> str:
    """The amortized view and the method in force, in words: a memo beside the inventory, never added to it."""
    amortized = inventory["embodied_amortized"]
    method = amortized["method"]
    lives = ", ".join(f"{key} {years:g} y" for key, years in method["lives_years"].items()) or "none"
    return (
        f"{amortized['tco2e_central']} tCO2e amortized (central), not in the totals; amortization "
        f"{method['amortization']} (lines: {', '.join(method['amortization_in_lines']) or 'none'}); lives: {lives}"
    )


def esrs_inventory_datapoints(inventory: dict[str, Any]) -> list[dict[str, Any]]:
    """E1-6 paras. 48(a) (gross Scope 1), 51 (gross Scope 3, by category: AR 46) and 52(a)/(b) (total GHG
    emissions, location- and market-based: AR 47), tCO2eq, from the inventory."""
    scope1, scope3, totals = inventory["scope1"], inventory["scope3"], inventory["totals"]

    def point(key: str, label: str, value: float | None, **extra: Any) -> dict[str, Any]:
        return {"datapoint": key, "label": label, "value": value, "unit": "tCO2eq", "boundary": INVENTORY_BOUNDARY,
                **extra}  # fmt: skip

    categories = [
        {"category": int(key.split("_")[1]), "label": scope3[key]["label"],
         "value": scope3[key].get("tco2e", scope3[key].get("tco2e_central")),
         **({"status": "excluded", "reason": scope3[key]["reason"]}
            if scope3[key].get("status") == "excluded" else {}),
         **({"basis": scope3[key]["basis"]} if "basis" in scope3[key] else {})}
        for key in scope3 if key.startswith("category_")
    ]  # fmt: skip
    return [
        point(
            "E1-6.48(a)", "Gross Scope 1 GHG emissions", scope1["tco2e"], status=scope1["status"], note=scope1["note"]
        ),
        point(
            "E1-6.51",
            "Gross Scope 3 GHG emissions",
            scope3["tco2e"],
            categories=categories,
            note="Category 2 at its central estimate",
        ),
        point("E1-6.52(a)", "Total GHG emissions (location-based)", totals["location_tco2e"], note=totals["formula"]),
        point("E1-6.52(b)", "Total GHG emissions (market-based)", totals["market_tco2e"], note=totals["formula"]),
    ]
