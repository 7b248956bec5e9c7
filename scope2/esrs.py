"""The ESRS E1 export's datapoints: E1-5 energy consumption and mix, E1-6 gross Scopes 1-3 and totals.

Every datapoint carries its ``id`` and the ``standard_version`` it is keyed to. The ids are the paragraph
references of ESRS E1 (Commission Delegated Regulation (EU) 2023/2772) and its application requirements;
beside each, ``efrag_ig3_id`` is the number EFRAG's IG 3 datapoint list gives it (``E1-6_09``), as public
transcriptions of that list agree on it, not checked against EFRAG's own workbook (``ID_SCHEME``;
docs/scope2.md, "ESRS E1 datapoints"), or None where none is known.

E1-5 para. 37: the total energy consumption related to own operations (the Scope 2 nodes' facility
energy, as before) split into fossil (a), nuclear (b) and renewable (c) sources by ``scope2.energy_mix``
(instruments first, then the grid's yearly mix), with the shares of AR 34's table. E1-6: the
Scope 2 datapoints of ``disclosures.esrs_datapoints`` and Scope 1, 3 and the totals of the inventory
(``disclosures.esrs_inventory_datapoints``), each with its id and version.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from scope2.allocation import ZERO, SiteAllocation
from scope2.disclosures import BOUNDARY, esrs_datapoints, esrs_inventory_datapoints
from scope2.energy_mix import EnergyMix, energy_mix, grid_mix
from scope2.exports import KWH_PER_MWH, quantized
from scope2.quality import RENEWABLE, Technology
from scope2.selectors import Scope2Report

STANDARD_VERSION = "ESRS 2023 (Delegated Regulation (EU) 2023/2772)"
ID_SCHEME = (
    "id: ESRS E1 paragraph references (paragraph, point, application requirement); efrag_ig3_id: the EFRAG IG 3 "
    "List of ESRS Data Points id as public transcriptions of that list give it, not confirmed against EFRAG's "
    "own workbook"
)
# EFRAG IG 3 (List of ESRS Data Points, 2024) ids of the paragraphs exported, E1-5 and E1-6.
EFRAG_IG3_IDS = {
    "E1-5.37": "E1-5_01",  # Total energy consumption related to own operations
    "E1-5.37(a)": "E1-5_02",  # Total energy consumption from fossil sources
    "E1-5.37(b)": "E1-5_03",  # Total energy consumption from nuclear sources
    "E1-5.AR34.nuclear_share": "E1-5_04",  # Percentage of energy consumption from nuclear sources
    "E1-5.37(c)": "E1-5_05",  # Total energy consumption from renewable sources
    "E1-5.37(c)(i)": "E1-5_06",  # Fuel consumption for renewable sources
    "E1-5.37(c)(ii)": "E1-5_07",  # Purchased or acquired electricity, heat, steam and cooling from renewable sources
    "E1-5.37(c)(iii)": "E1-5_08",  # Self-generated non-fuel renewable energy
    "E1-5.AR34.renewable_share": "E1-5_09",  # Percentage of renewable sources in total energy consumption
    "E1-5.AR34.fossil_share": "E1-5_15",  # Percentage of fossil sources in total energy consumption
    "E1-6.48(a)": "E1-6_07",  # Gross Scope 1 GHG emissions
    "E1-6.49(a)": "E1-6_09",  # Gross location-based Scope 2 GHG emissions
    "E1-6.49(b)": "E1-6_10",  # Gross market-based Scope 2 GHG emissions
    "E1-6.51": "E1-6_11",  # Gross Scope 3 GHG emissions
    "E1-6.52(a)": "E1-6_12",  # Total GHG emissions location-based
    "E1-6.52(b)": "E1-6_13",  # Total GHG emissions market-based
    "E1-6.AR45(d)": "E1-6_18",  # Percentage of contractual instruments, Scope 2 GHG emissions
}
MIX_METHOD = (
    "energy covered by contractual instruments counts as their technology first (renewable, nuclear, fossil); "
    "the rest takes the grid's yearly mix of the site's zone (Electricity Maps yearly renewableEnergy and "
    "carbonFreeEnergy: nuclear = carbon-free - renewable, fossil = 100 % - carbon-free); no figure for the zone: "
    "unknown, stated"
)
NOT_METERED = "not applicable: Wattledger meters purchased electricity only (no fuels, no self-generation)"
# disclosures' E1-5 points: 37 stays as is here; 37(b) and 37(c)(ii) were instruments only, now the whole mix.
REPLACED = frozenset({"E1-5.37", "E1-5.37(b)", "E1-5.37(c)(ii)"})


def _matched(allocation: SiteAllocation, technologies: frozenset[str]) -> Decimal:
    return sum((use.matched_kwh for use in allocation.uses if use.instrument.technology in technologies), ZERO)


def report_energy_mix(report: Scope2Report) -> tuple[EnergyMix, list[str]]:
    """The Scope 2 nodes' electricity by source, summed over the sites, and the grid mixes' sources used."""
    mix, sources = EnergyMix(), set()
    for site in report.sites:
        grid = grid_mix(zone=site.site.grid_zone, year=report.start.year) if site.site.grid_zone else None
        if grid is not None:
            sources.add(grid.source)
        mix += energy_mix(
            consumption_kwh=site.allocation.consumption_kwh,
            renewable_instruments_kwh=_matched(site.allocation, RENEWABLE),
            nuclear_instruments_kwh=_matched(site.allocation, frozenset({Technology.NUCLEAR})),
            fossil_instruments_kwh=_matched(site.allocation, frozenset({Technology.FOSSIL})),
            grid=grid,
        )
    return mix, sorted(sources)


def _mwh(kwh: Decimal) -> float | None:
    return quantized(kwh / KWH_PER_MWH, 6)


def _pct(share: Decimal | None) -> float | None:
    return None if share is None else quantized(share * 100, 4)


def energy_mix_datapoints(report: Scope2Report) -> list[dict[str, Any]]:
    """E1-5 para. 37 (MWh) and its (a), (b), (c), (c)(i)-(iii), and AR 34's shares (%)."""
    mix, sources = report_energy_mix(report)

    def point(key: str, label: str, value: float | None, unit: str, **extra: Any) -> dict[str, Any]:
        return {"datapoint": key, "label": label, "value": value, "unit": unit, "boundary": BOUNDARY, **extra}

    basis = {"method": MIX_METHOD, "grid_mix_sources": sources}
    return [
        point("E1-5.37", "Total energy consumption related to own operations", _mwh(mix.total_kwh), "MWh",
              unknown_source_mwh=_mwh(mix.unknown_kwh)),
        point("E1-5.37(a)", "Total energy consumption from fossil sources", _mwh(mix.fossil_kwh), "MWh",
              from_instruments_mwh=_mwh(mix.fossil_instruments_kwh), **basis),
        point("E1-5.37(b)", "Total energy consumption from nuclear sources", _mwh(mix.nuclear_kwh), "MWh",
              from_instruments_mwh=_mwh(mix.nuclear_instruments_kwh), **basis),
        point("E1-5.37(c)", "Total energy consumption from renewable sources", _mwh(mix.renewable_kwh), "MWh",
              **basis),
        point("E1-5.37(c)(i)", "Fuel consumption for renewable sources, including biomass", None, "MWh",
              status="not_applicable", note=NOT_METERED),
        point("E1-5.37(c)(ii)",
              "Consumption of purchased or acquired electricity, heat, steam and cooling from renewable sources",
              _mwh(mix.renewable_kwh), "MWh", from_instruments_mwh=_mwh(mix.renewable_instruments_kwh), **basis),
        point("E1-5.37(c)(iii)", "Consumption of self-generated non-fuel renewable energy", None, "MWh",
              status="not_applicable", note=NOT_METERED),
        point("E1-5.AR34.fossil_share", "Share of fossil sources in total energy consumption",
              _pct(mix.share(mix.fossil_kwh)), "%"),
        point("E1-5.AR34.nuclear_share", "Share of consumption from nuclear sources in total energy consumption",
              _pct(mix.share(mix.nuclear_kwh)), "%"),
        point("E1-5.AR34.renewable_share", "Share of renewable sources in total energy consumption",
              _pct(mix.share(mix.renewable_kwh)), "%"),
    ]  # fmt: skip


def esrs_export_datapoints(report: Scope2Report, *, share: Decimal, inventory: dict[str, Any]) -> list[dict[str, Any]]:
    """Every datapoint of the ESRS export, E1-5 then E1-6, with ``id``, ``efrag_ig3_id`` and ``standard_version``."""
    scope2_points = [p for p in esrs_datapoints(report, share=share) if p["datapoint"] not in REPLACED]
    return [
        {
            "id": point["datapoint"],
            "efrag_ig3_id": EFRAG_IG3_IDS.get(point["datapoint"]),
            "standard_version": STANDARD_VERSION,
            **point,
        }
        for point in energy_mix_datapoints(report) + scope2_points + esrs_inventory_datapoints(inventory)
    ]
