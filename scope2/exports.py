"""The Scope 2 report as shown: JSON, CSV lines, a GHG-Protocol-shaped table and ESRS E1 datapoints.

Energy in kWh (MWh in the table and the ESRS export, as they are stated),
carbon in kgCO2e and tCO2e, shares 0-1. Figures are rounded here, once, for
display; the allocation keeps them exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from fleets.models import Organization
from scope2.allocation import ZERO, InstrumentUse, SiteAllocation
from scope2.basis import BasisCoverage, combined
from scope2.cfe import CfeScore
from scope2.quality import market_of_zone
from scope2.selectors import Scope2Report, SiteScope2

G_PER_KG = Decimal(1000)
G_PER_T = Decimal(1_000_000)
KWH_PER_MWH = Decimal(1000)


def quantized(value: Decimal | None, places: int) -> float | None:
    return None if value is None else float(value.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP))


def _share(part: Decimal, whole: Decimal) -> float | None:
    return quantized(part / whole, 6) if whole else None


def _sum(allocations: list[SiteAllocation], name: str) -> Decimal:
    return sum((getattr(allocation, name) for allocation in allocations), ZERO)


MATCHING = {
    "annual": "annual: each instrument's volume over its delivery in the year (GHG Protocol Scope 2 Guidance, 2015)",
    "hourly": "hourly where an instrument has an hourly profile, annual otherwise (the 2025 revision's proposal)",
}


def _method(allocations: list[SiteAllocation], matching: str) -> dict[str, Any]:
    """One market-based figure over sites: its matching, carbon, and where its energy's factor came from."""
    consumed, co2e_g = _sum(allocations, "consumption_kwh"), _sum(allocations, "market_co2e_g")
    parts = ("instruments_kwh", "residual_mix_kwh", "location_fallback_kwh", "unknown_kwh")
    shown: dict[str, Any] = {"matching": matching, "kgco2e": quantized(co2e_g / G_PER_KG, 6),
                             "tco2e": quantized(co2e_g / G_PER_T, 9)}  # fmt: skip
    for part in parts:
        shown[part] = quantized(_sum(allocations, part), 6)
        shown[part.replace("_kwh", "_share")] = _share(_sum(allocations, part), consumed)
    return shown


def _cfe(scores: list[CfeScore]) -> float | None:
    consumed = sum((score.consumption_kwh for score in scores), ZERO)
    carbon_free = sum((score.contracted_cfe_kwh + (score.grid_cfe_kwh or ZERO) for score in scores), ZERO)
    return _share(carbon_free, consumed)


def _biogenic_kg(use: InstrumentUse) -> float | None:
    memo = use.biogenic_co2_g
    return None if memo is None else quantized(memo / G_PER_KG, 6)


def _use_output(use: InstrumentUse, hourly: InstrumentUse, annual: InstrumentUse, site: SiteScope2) -> dict[str, Any]:
    instrument = use.instrument
    return {
        "id": instrument.id,
        "site_id": site.site.pk,
        "site": site.site.name,
        "kind": instrument.kind,
        "name": instrument.name,
        "technology": instrument.technology,
        "generation_zone": instrument.generation_zone,
        "vintage_year": instrument.vintage_year,
        "matching": use.matching,
        "used": use.matching in ("hourly", "annual", "share"),
        "gco2e_per_kwh": quantized(use.factor_g_per_kwh, 3),
        "delivered_kwh": quantized(use.available_kwh, 6),
        "matched_kwh": quantized(use.matched_kwh, 6),
        "unused_kwh": quantized(use.unused_kwh, 6),
        "matched_kwh_annual_matching": quantized(annual.matched_kwh, 6),
        "matched_kwh_hourly_matching": quantized(hourly.matched_kwh, 6),
        "kgco2e": quantized(use.co2e_g / G_PER_KG, 6),
        "biogenic_co2_kg_memo": _biogenic_kg(use),
        "criteria": [{"criterion": c.criterion, "met": c.met, "detail": c.detail} for c in use.criteria],
    }


def _site_output(site: SiteScope2, matching: str, basis: BasisCoverage | None = None) -> dict[str, Any]:
    allocation = site.allocation
    return {
        "site_id": site.site.pk,
        "site": site.site.name,
        "zone": site.site.grid_zone,
        "market_boundary": market_of_zone(site.site.grid_zone) if site.site.grid_zone else None,
        "facility_kwh": quantized(allocation.consumption_kwh, 6),
        "location_kgco2e": quantized(allocation.location_co2e_g / G_PER_KG, 6),
        "location_basis": basis.basis if basis is not None else None,  # scope2.basis: direct where known
        "location_unknown_kwh": quantized(allocation.location_unknown_kwh, 6),
        "market": _method([allocation], matching),
        "market_annual_matching": _method([site.annual], "annual"),
        "market_hourly_matching": _method([site.hourly], "hourly"),
        "residual_mix_gco2e_per_kwh": quantized(site.residual_mix.gco2e_per_kwh, 3) if site.residual_mix else None,
        "residual_mix_source": site.residual_mix.source if site.residual_mix else None,
        "residual_mix_year": site.residual_mix.year if site.residual_mix else None,
        "uncovered_factor": _uncovered_factor(site),
        "cfe_score_hourly": _cfe([site.cfe_hourly]),
        "cfe_score_annual_matching": _cfe([site.cfe_annual]),
        "grid_cfe_source": site.grid_cfe_source,
    }


RESIDUAL_MIX_NOTE = (
    "No residual mix is held for {sites}: Wattledger ships none (the AIB European Residual Mixes are licensed, "
    "see scope2/data/README.md), so consumption no instrument covers took each hour's "
    "location-based factor instead, labelled location_fallback ({kwh} kWh). Load the residual mixes you hold "
    "(zone,year,gco2e_per_kwh,source) with POST /api/v1/residual-mixes/upload/ or manage.py load_residual_mixes."
)


def _uncovered_factor(site: SiteScope2) -> str:
    """What consumption no instrument covers takes at this site: a residual mix, or the labelled fallback."""
    if site.residual_mix is not None:
        return "residual_mix"
    return "location_fallback" if site.site.grid_zone else "unknown"


def _residual_mix_note(report: Scope2Report) -> str | None:
    fallback = [site for site in report.sites if site.allocation.location_fallback_kwh > 0]
    if not fallback:
        return None
    names = ", ".join(f"{site.site.name} ({site.site.grid_zone} {report.start.year})" for site in fallback)
    kwh = quantized(sum((site.allocation.location_fallback_kwh for site in fallback), ZERO), 0)
    return RESIDUAL_MIX_NOTE.format(sites=names, kwh=f"{kwh:,.0f}")


BIOGENIC_NOTE = (
    "memo item, outside the scopes: CO2 from the combustion of biomass behind the biomass instruments used, as "
    "each states it (GHG Protocol Scope 2 Guidance 6.12; Corporate Standard: biogenic CO2 reported separately); "
    "not in Scope 2 nor in any total"
)


def biogenic_memo(report: Scope2Report) -> dict[str, Any]:
    """The biogenic CO2 of the disclosed allocation's biomass instruments: a memo, never added to a scope."""
    biomass = [use for site in report.sites for use in site.allocation.uses
               if use.instrument.technology == "biomass" and use.matched_kwh]  # fmt: skip
    co2_g = sum((use.biogenic_co2_g or ZERO for use in biomass), ZERO)
    unstated = [use.instrument.name for use in biomass if use.biogenic_co2_g is None]
    return {"kgco2": quantized(co2_g / G_PER_KG, 6), "tco2": quantized(co2_g / G_PER_T, 9),
            "biomass_kwh": quantized(sum((use.matched_kwh for use in biomass), ZERO), 6),
            "not_stated": ", ".join(unstated), "note": BIOGENIC_NOTE}  # fmt: skip


def scope2_output(report: Scope2Report, organization: Organization) -> dict[str, Any]:
    allocations = [site.allocation for site in report.sites]
    location_g = _sum(allocations, "location_co2e_g")
    return {
        "organization_id": organization.pk,
        "organization": organization.slug,
        "start": report.start,
        "end": report.end,
        "facility_kwh": quantized(_sum(allocations, "consumption_kwh"), 6),
        "location_kgco2e": quantized(location_g / G_PER_KG, 6),
        "location_tco2e": quantized(location_g / G_PER_T, 9),
        "location_basis": combined(report.bases.values()).basis,
        "location_unknown_kwh": quantized(_sum(allocations, "location_unknown_kwh"), 6),
        "market_matching": report.matching,
        "market_matching_rule": MATCHING[report.matching],
        "market": _method(allocations, report.matching),
        "market_annual_matching": _method([site.annual for site in report.sites], "annual"),
        "market_hourly_matching": _method([site.hourly for site in report.sites], "hourly"),
        "biogenic_co2_memo": biogenic_memo(report),
        "cfe_score_hourly": _cfe([site.cfe_hourly for site in report.sites]),
        "cfe_score_annual_matching": _cfe([site.cfe_annual for site in report.sites]),
        "sites": [_site_output(site, report.matching, report.bases.get(site.site.pk)) for site in report.sites],
        "instruments": [
            _use_output(use, hourly, annual, site)
            for site in report.sites
            for use, hourly, annual in zip(site.allocation.uses, site.hourly.uses, site.annual.uses, strict=True)
        ],
        "residual_mix_note": _residual_mix_note(report),
    }


def scope2_csv_rows(shown: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``level,site,instrument,metric,value`` lines: totals, then each site, then each instrument."""
    for name, value in shown.items():
        if isinstance(value, dict):
            for part, figure in value.items():
                yield {"level": "total", "metric": f"{name}.{part}", "value": figure}
        elif not isinstance(value, list):
            yield {"level": "total", "metric": name, "value": value}
    for site in shown["sites"]:
        for name, value in _flat(site):
            yield {"level": "site", "site": site["site"], "metric": name, "value": value}
    for instrument in shown["instruments"]:
        for name, value in _flat(instrument):
            yield {"level": "instrument", "site": instrument["site"], "instrument": instrument["name"],
                   "metric": name, "value": value}  # fmt: skip


def _flat(row: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for name, value in row.items():
        if isinstance(value, dict):
            yield from ((f"{name}.{part}", figure) for part, figure in value.items())
        elif isinstance(value, list):
            yield from ((f"{name}.{item['criterion']}", f"{'met' if item['met'] else 'failed'}: {item['detail']}")
                        for item in value)  # fmt: skip
        else:
            yield name, value
