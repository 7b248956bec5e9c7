"""The SCI block of the sustainability export: SCI = ((E x I) + M) per R, with its boundary and method stated.

Software Carbon Intensity (Green Software Foundation, ISO/IEC 21031:2024): E the energy the software's
hardware used (kWh), I the location-based grid intensity it was used at (gCO2e/kWh), M the embodied
emissions of that hardware allocated to the time it was used (gCO2e), R the functional unit. The
figures are the ledger's, never recomputed here: E x I is the lines' ``location_co2e_g``, M their
central embodied carbon, and the numerator is ``LedgerTotals.sci_co2e_g``, divided by
``LedgerTotals.sci_g_per`` (the per-token figures of every report use the same two).

SCI is a rate of a whole: where some kWh have no grid intensity, E x I would drop their carbon and
keep their tokens and requests, so every SCI figure is ``None`` with the reason; likewise where some
GPU-hours are of a model without an embodied figure (M understated). That is the rule of every carbon
figure per token (``accounting.ledger.totals.carbon_per_token_complete``), and its reasons are the ones
every report gives (``LedgerTotals.sci_gaps``). Pure: no Django.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from accounting.ledger.units import TOKENS_PER_THOUSAND, significant
from grid.intensity import LIFECYCLE, Basis
from reports.metrics import LedgerSums

STANDARD = "Software Carbon Intensity, ISO/IEC 21031:2024 (Green Software Foundation SCI 1.1), with SCI for AI"
FORMULA = "SCI = ((E x I) + M) per R"
# The basis of the grid intensities I: the ledger lines' location-based carbon (what SCI weighs) is on the
# lifecycle factor, Scope 2's on the direct one (docs/scope2.md, "Factor basis"). One constant to switch.
INTENSITY_BASIS: Basis = LIFECYCLE
INTENSITY_METHOD = (
    "location-based: each node-hour's facility kWh x its grid zone-hour's average intensity (hourly where "
    "known, the zone's annual average standing in, labelled); market-based instruments never lower SCI"
)
FUNCTIONAL_UNITS = {
    "request": "one inference request answered by a serving endpoint (the endpoints' request counters)",
    "1k_tokens": "1,000 tokens, input + output (prompt + generation)",
    "1k_output_tokens": "1,000 output (generation) tokens",
}
BOUNDARY_INCLUDED = (
    "GPU boards, as NVML's energy counter measures them",
    "the host (CPUs, memory, fans, power supply) where the node is metered or its profile models it",
    "facility overhead (cooling, power distribution) as IT energy x PUE",
    "idle capacity held for serving (its energy and embodied carbon: time-based amortization)",
    "embodied carbon of the GPU cards and of each card's host share, amortized over the hours held",
    "every node the organization runs inference on, owned or rented (not the GHG inventory's boundary)",
)
BOUNDARY_EXCLUDED = (
    "training and fine-tuning of the models served (SCI for AI: the provider's training stage)",
    "networking and storage outside the nodes, and client devices",
    "embodied carbon of buildings, network gear and other data-centre equipment",
    "the host where a node has neither a meter nor a modelled host (those lines stay at the GPU boundary)",
    "market-based instruments, offsets and avoided emissions (SCI excludes them)",
)


def sci_block(*, sums: LedgerSums, requests: int, method: dict[str, Any]) -> dict[str, Any]:
    """The SCI of ``sums`` (an organization's period) per request, per 1k tokens and per 1k output tokens.

    ``requests``: the requests its serving endpoints answered in the period; ``method``: the amortization in
    force as the inventory states it (``scope2.inventory_output.method_output``).
    """
    totals = sums.totals
    reasons = incomplete_reasons(sums)
    r_units = {"request": requests, "1k_tokens": totals.tokens, "1k_output_tokens": totals.generation_tokens}
    scales = {"request": Decimal(1), "1k_tokens": TOKENS_PER_THOUSAND, "1k_output_tokens": TOKENS_PER_THOUSAND}
    units: dict[str, dict[str, Any]] = {
        unit: {
            "r": float(count / scales[unit]),  # R in its unit: requests, thousands of tokens
            "gco2e_per_unit": _sig(totals.sci_g_per(count, scales[unit])),  # None where reasons say why
            "definition": FUNCTIONAL_UNITS[unit],
        }
        for unit, count in r_units.items()
    }
    return {
        "standard": STANDARD,
        "formula": FORMULA,
        "status": "incomplete" if reasons else "complete",
        "reason": "; ".join(reasons) or None,
        "gco2e_per_request": units["request"]["gco2e_per_unit"],
        "gco2e_per_1k_tokens": units["1k_tokens"]["gco2e_per_unit"],
        "gco2e_per_1k_output_tokens": units["1k_output_tokens"]["gco2e_per_unit"],
        "functional_units": units,
        "terms": _terms(sums),
        "boundary": {
            "included": list(BOUNDARY_INCLUDED),
            "excluded": list(BOUNDARY_EXCLUDED),
            "energy_boundary_shares": energy_boundary_shares(sums),
        },
        "intensity_basis": INTENSITY_BASIS,
        "intensity_method": INTENSITY_METHOD,
        "amortization": {**method, "rule": _amortization_rule(method)},
    }


def incomplete_reasons(sums: LedgerSums) -> list[str]:
    """Why SCI cannot be stated for ``sums``: kWh without an intensity, GPU-hours without an embodied figure
    (``LedgerTotals.sci_gaps``, the reasons of every carbon figure per token)."""
    return list(sums.totals.sci_gaps)


def energy_boundary_shares(sums: LedgerSums) -> dict[str, float | None]:
    """Shares (0-1) of IT energy by the boundary it was measured at: node meter, modelled host, GPU boards only."""
    it_kwh = sums.totals.it_kwh
    if not it_kwh:
        return {"node_metered": None, "node_modelled": None, "gpu_boards_only": None}
    gpu_only = it_kwh - sums.node_metered_kwh - sums.node_modelled_kwh
    return {
        "node_metered": _share(sums.node_metered_kwh / it_kwh),
        "node_modelled": _share(sums.node_modelled_kwh / it_kwh),
        "gpu_boards_only": _share(gpu_only / it_kwh),
    }


def _terms(sums: LedgerSums) -> dict[str, float | None]:
    """E, I, E x I, M and their sum as the ledger holds them (kWh, g/kWh, gCO2e)."""
    totals, known = sums.totals, sums.location_known
    return {
        "e_facility_kwh": _places(totals.facility_kwh, 6),
        "e_unknown_intensity_facility_kwh": _places(totals.location_unknown_facility_kwh, 6),
        "i_gco2e_per_kwh": _sig(sums.location_gco2e_per_kwh),
        "operational_gco2e": _places(totals.location_co2e_g, 3) if known else None,
        "m_embodied_gco2e": _places(totals.embodied_co2e_g.central, 3),
        "m_embodied_gco2e_low": _places(totals.embodied_co2e_g.low, 3),
        "m_embodied_gco2e_high": _places(totals.embodied_co2e_g.high, 3),
        "sci_numerator_gco2e": _places(totals.sci_co2e_g, 3) if known else None,
    }


def _amortization_rule(method: dict[str, Any]) -> str:
    if method.get("amortization") == "utilization":
        return "utilization: embodied x hours held x utilization / life (workload comparisons only)"
    return "time: embodied x hours held / life (SCI's time share of the expected life), second-hand by remaining life"


def _sig(value: Decimal | None) -> float | None:
    return None if value is None else float(significant(value))


def _places(value: Decimal, places: int) -> float:
    """``value`` half-up to ``places`` decimals (kWh to the mWh, g to the mg), as a float for JSON."""
    return float(Decimal(value).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP))


def _share(value: Decimal) -> float:
    return _places(value, 6)
