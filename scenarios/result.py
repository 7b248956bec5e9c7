"""A replay's outcome as the stored result (JSON): actual and scenario side by side (pure).

Money is rounded once here (``money_quantize``), unit figures to 4 significant
digits (``significant``), both as text so that JSON keeps their digits. Per-token
figures divide by output (generation) tokens; J per output token is IT energy (the
ledger's ``it_kwh``: the node meter, else the GPU boards plus the host as modelled);
carbon is location-based; yearly totals are the period's x 8760 / its hours.

Carbon per token follows the reports' one rule (``accounting.ledger.totals.carbon_per_token_complete``):
withheld (``None``) while any of its facility kWh has no location intensity or, where embodied carbon is
part of it, any of its GPU-hours is of a model without an embodied figure, with the reason beside it
(``carbon_per_token_note``, as on the comparison's rows). Totals of gCO2e keep the known part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from accounting.ledger.totals import carbon_per_token_complete, carbon_per_token_gaps
from accounting.ledger.units import G_PER_KG, H_PER_YEAR, J_PER_KWH, ZERO, money_quantize, per_1m, significant
from scenarios.changes import Change, change_json
from scenarios.latency import TtftMix
from scenarios.replay import LifePoint, Outcome, Sums, sums_total
from telemetry.histogram import Histogram, histogram_merge, histogram_quantile

P99 = 0.99

FIGURES = (
    ("cost_per_1m_output_tokens", "Cost per 1M output tokens"),
    ("location_gco2e_per_1m_output_tokens", "Operational gCO2e per 1M output tokens (location-based)"),
    ("embodied_gco2e_per_1m_output_tokens", "Embodied gCO2e per 1M output tokens (central)"),
    ("embodied_gco2e_per_1m_output_tokens_range", "Embodied gCO2e per 1M output tokens (low to high)"),
    ("total_gco2e_per_1m_output_tokens", "Operational + embodied gCO2e per 1M output tokens"),
    ("j_per_output_token", "J per output token (IT energy)"),
    ("output_tokens", "Output tokens"),
    ("cost", "Cost"),
    ("facility_kwh", "Facility energy (kWh)"),
    ("location_co2e_kg", "Operational kgCO2e (location-based)"),
    ("embodied_co2e_kg", "Embodied kgCO2e (central)"),
    ("yearly_cost", "Cost per year (period scaled)"),
    ("yearly_facility_mwh", "Facility MWh per year (period scaled)"),
    ("yearly_co2e_t", "tCO2e per year, operational + embodied (period scaled)"),
    ("yearly_output_tokens", "Output tokens per year (period scaled)"),
)
"""The figures of each side, in the order the page shows them, with their labels."""


def _unit(value: Decimal | None) -> str | None:
    return None if value is None else str(significant(value))


def _per_1m(quantity: Decimal, sums: Sums) -> Decimal | None:
    return per_1m(quantity, sums.generation_tokens)


# Each carbon figure per token: whether operational and embodied carbon are part of it (what may withhold it).
CARBON_PER_TOKEN = {
    "location_gco2e_per_1m_output_tokens": (True, False),
    "embodied_gco2e_per_1m_output_tokens": (False, True),
    "embodied_gco2e_per_1m_output_tokens_range": (False, True),
    "total_gco2e_per_1m_output_tokens": (True, True),
}


@dataclass(frozen=True)
class CarbonBasis:
    """What carbon per output token rests on: the output tokens, the facility kWh, those without a location
    intensity, and the GPU-hours of models without an embodied figure."""

    generation_tokens: Decimal
    facility_kwh: Decimal
    unknown_intensity_kwh: Decimal
    embodied_unknown_gpu_h: Decimal

    @classmethod
    def of(cls, sums: Sums | LifePoint) -> CarbonBasis:
        unknown_kwh, gpu_h = sums.location_unknown_facility_kwh, sums.embodied_unknown_gpu_h
        return cls(sums.generation_tokens, sums.facility_kwh, unknown_kwh, gpu_h)

    def per_1m(self, co2e_g: Decimal, *, operational: bool, embodied: bool) -> Decimal | None:
        """gCO2e per 1M output tokens of a figure with operational and/or embodied carbon in it; withheld
        (``None``) while any of its part is unknown (``carbon_per_token_complete``)."""
        complete = carbon_per_token_complete(
            unknown_intensity_kwh=self.unknown_intensity_kwh if operational else ZERO,
            embodied_unknown_gpu_h=self.embodied_unknown_gpu_h if embodied else ZERO,
        )
        return per_1m(co2e_g, self.generation_tokens) if complete else None

    def note(self, *, operational: bool = True, embodied: bool = True) -> str | None:
        """Why such a figure is withheld, in the reports' words (``carbon_per_token_gaps``); ``None``: stated."""
        gaps = carbon_per_token_gaps(
            facility_kwh=self.facility_kwh,
            unknown_intensity_kwh=self.unknown_intensity_kwh if operational else ZERO,
            embodied_unknown_gpu_h=self.embodied_unknown_gpu_h if embodied else ZERO,
        )
        return "; ".join(gaps) or None

    def withheld(self, shown: Mapping[str, Any]) -> dict[str, str]:
        """Each carbon figure per token of ``shown`` that is withheld, with its own reason."""
        notes = {key: self.note(operational=o, embodied=e) for key, (o, e) in CARBON_PER_TOKEN.items() if key in shown}
        return {key: note for key, note in notes.items() if note is not None and shown[key] is None}


def _carbon_figures(sums: Sums) -> dict[str, Any]:
    """One side's carbon per 1M output tokens (operational, embodied central and range, their total), each
    withheld while its part is unknown, and what is unknown beside them (the comparison's fields)."""
    basis = CarbonBasis.of(sums)
    low = basis.per_1m(sums.embodied_co2e_g_low, operational=False, embodied=True)
    high = basis.per_1m(sums.embodied_co2e_g_high, operational=False, embodied=True)
    total_g = sums.location_co2e_g + sums.embodied_co2e_g_central
    shown = {
        "location_gco2e_per_1m_output_tokens": _unit(
            basis.per_1m(sums.location_co2e_g, operational=True, embodied=False)
        ),
        "embodied_gco2e_per_1m_output_tokens": _unit(
            basis.per_1m(sums.embodied_co2e_g_central, operational=False, embodied=True)
        ),
        "embodied_gco2e_per_1m_output_tokens_range": None if low is None or low == high else [_unit(low), _unit(high)],
        "embodied_single_value": sums.embodied_co2e_g_low == sums.embodied_co2e_g_high,
        "total_gco2e_per_1m_output_tokens": _unit(basis.per_1m(total_g, operational=True, embodied=True)),
    }
    return shown | _unknown(basis, shown)


def _unknown(basis: CarbonBasis, shown: Mapping[str, Any]) -> dict[str, Any]:
    """What the carbon leaves out, beside the figures: the comparison's fields, and each withheld figure's reason."""
    return {
        "location_unknown_facility_kwh": _unit(basis.unknown_intensity_kwh),
        "embodied_unknown_gpu_h": _unit(basis.embodied_unknown_gpu_h),
        "carbon_per_token_note": basis.note(),
        "carbon_per_token_withheld": basis.withheld(shown),
    }


def figures(sums: Sums, *, period_h: Decimal, currency: str) -> dict[str, Any]:
    """One side's figures (see ``FIGURES``), plus what is unpriced or without intensity or embodied figure."""
    year = H_PER_YEAR / period_h
    co2e_g = sums.location_co2e_g + sums.embodied_co2e_g_central
    return {
        "cost_per_1m_output_tokens": _unit(_per_1m(sums.cost, sums)),
        **_carbon_figures(sums),
        "j_per_output_token": _unit(sums.it_kwh * J_PER_KWH / sums.generation_tokens)
        if sums.generation_tokens > 0
        else None,
        "output_tokens": str(round(sums.generation_tokens)),
        "cost": str(money_quantize(sums.cost, currency)),
        "facility_kwh": _unit(sums.facility_kwh),
        "location_co2e_kg": _unit(sums.location_co2e_g / G_PER_KG),
        "embodied_co2e_kg": _unit(sums.embodied_co2e_g_central / G_PER_KG),
        "yearly_cost": str(money_quantize(sums.cost * year, currency)),
        "yearly_facility_mwh": _unit(sums.facility_kwh * year / 1000),
        "yearly_co2e_t": _unit(co2e_g * year / 1_000_000),
        "yearly_output_tokens": str(round(sums.generation_tokens * year)),
        "unpriced_facility_kwh": _unit(sums.facility_kwh - sums.facility_kwh_priced - sums.facility_kwh_included),
    }


def _unpriced_kwh(sums: Sums) -> Decimal:
    return sums.facility_kwh - sums.facility_kwh_priced - sums.facility_kwh_included


def _quantile_s(histogram: Any) -> float | None:
    value = None if histogram is None else histogram_quantile(P99, histogram)
    return None if value is None else round(value, 4)


def _llm_models(outcome: Outcome, mixes: Mapping[str, TtftMix]) -> list[dict[str, Any]]:
    rows = []
    for model, mix in mixes.items():
        if mix.hours_beyond_measured_load:
            outcome.notes.append(
                f"{model}: {mix.hours_beyond_measured_load} hours of routed load beyond any load measured on the "
                "target fleet: its scenario P99 TTFT is a lower bound"
            )
        actual = sum(u.generation_tokens for (_, m), u in outcome.usage.items() if m == model)
        scenario = sum((t[0] for (_, m), t in outcome.models.items() if m == model), Decimal(0))
        lower = any(u.lower_bound_only for (_, m), u in outcome.usage.items() if m == model)
        rows.append({
            "llm_model": model,
            "actual_output_tokens": str(actual),
            "scenario_output_tokens": str(round(scenario)),
            "actual_p99_ttft_s": _quantile_s(mix.measured),
            "scenario_p99_ttft_s": _quantile_s(mix.scenario),
            "ttft_note": "TGI endpoints' TTFT (a lower bound) left out" if lower else "",
        })  # fmt: skip
    return rows


@dataclass(frozen=True)
class ClassSpec:
    """A workload class as a result reports it: its LLM model ("" for every model) and TTFT target."""

    name: str
    llm_model: str
    percentile: int  # 50, 90, 95 or 99
    ttft_target_ms: int


def _merged(histograms: list[Histogram | None]) -> Histogram | None:
    """The models' histograms together; ``None`` when one is unknown (a scenario TTFT not estimated)."""
    if not histograms or any(h is None for h in histograms):
        return None
    return histogram_merge([h for h in histograms if h is not None], coarsen=True)


def _ms(histogram: Histogram | None, percentile: int) -> float | None:
    value = None if histogram is None else histogram_quantile(percentile / 100, histogram)
    return None if value is None else round(value * 1000, 1)


def _classes(classes: Sequence[ClassSpec], mixes: Mapping[str, TtftMix]) -> list[dict[str, Any]]:
    """Each class's TTFT at its percentile, as measured and under the scenario, against its target."""
    rows = []
    for spec in classes:
        # The models the class runs on that have a measured TTFT (TGI-only ones have none).
        models = [m for m, mix in mixes.items() if (m == spec.llm_model or not spec.llm_model) and mix.measured]
        actual_ms = _ms(_merged([mixes[m].measured for m in models]), spec.percentile)
        scenario_ms = _ms(_merged([mixes[m].scenario for m in models]), spec.percentile)
        rows.append({
            "workload_class": spec.name,
            "llm_model": spec.llm_model or "every model",
            "percentile": f"P{spec.percentile}",
            "ttft_target_ms": spec.ttft_target_ms,
            "actual_ttft_ms": actual_ms,
            "scenario_ttft_ms": scenario_ms,
            "actual_meets_target": None if actual_ms is None else actual_ms <= spec.ttft_target_ms,
            "scenario_meets_target": None if scenario_ms is None else scenario_ms <= spec.ttft_target_ms,
        })  # fmt: skip
    return rows


def _life_points(points: list[LifePoint]) -> list[dict[str, Any]]:
    """Embodied falling with a longer life, beside the operational figure that life does not change (each
    withheld while its part is unknown, as on the sides)."""
    return [_life_point(p) for p in points]


def _life_point(point: LifePoint) -> dict[str, Any]:
    basis = CarbonBasis.of(point)
    shown = {
        "extra_years": str(point.extra_years),
        "embodied_gco2e_per_1m_output_tokens": _unit(
            basis.per_1m(point.embodied_co2e_g, operational=False, embodied=True)
        ),
        "location_gco2e_per_1m_output_tokens": _unit(
            basis.per_1m(point.location_co2e_g, operational=True, embodied=False)
        ),
    }
    return shown | _unknown(basis, shown)


def result_json(
    outcome: Outcome,
    *,
    changes: tuple[Change, ...],
    period_h: Decimal,
    currency: str,
    fleet_names: Mapping[int, str],
    classes: Sequence[ClassSpec] = (),
) -> dict[str, Any]:
    """The stored result of a run: totals, per fleet, per LLM model, side by side, with what they mean."""
    actual, scenario = sums_total(outcome.actual.values()), sums_total(outcome.scenario.values())
    side = {"period_h": period_h, "currency": currency}
    single = actual.embodied_co2e_g_low == actual.embodied_co2e_g_high
    mixes = {model: outcome.ttft(model) for model in sorted({m for _, m in outcome.usage})}
    llm_models = _llm_models(outcome, mixes)  # notes loads beyond those measured
    notes = list(outcome.notes)
    if _unpriced_kwh(scenario) > _unpriced_kwh(actual):
        notes.append(
            f"{_unit(_unpriced_kwh(scenario))} facility kWh of the scenario have no electricity price (power that "
            "was in the rent, or hours with no tariff): add a tariff with a move change to price them"
        )
    return {
        "currency": currency,
        "node_hours_replayed": outcome.rows,
        "period_hours": str(period_h),
        "total": {"actual": figures(actual, **side), "scenario": figures(scenario, **side)},  # type: ignore[arg-type]
        "fleets": [
            {
                "fleet_id": fleet,
                "fleet": fleet_names.get(fleet, str(fleet)),
                "actual": figures(outcome.actual[fleet], **side),  # type: ignore[arg-type]
                "scenario": figures(outcome.scenario[fleet], **side),  # type: ignore[arg-type]
            }
            for fleet in sorted(outcome.actual, key=lambda f: fleet_names.get(f, str(f)))
        ],
        "llm_models": llm_models,
        "workload_classes": _classes(classes, mixes),
        "lifetime": [
            {"fleet_id": fleet, "fleet": fleet_names.get(fleet, str(fleet)), "points": _life_points(points)}
            for fleet, points in outcome.lifetime_curves.items()
        ],
        "changes": [change_json(change) for change in changes],
        "embodied_range": "single value (low = high: no range known)" if single else "range (catalog low to high)",
        "basis": {
            "cost": "the ledger's: hardware + electricity + energy tax + non-recoverable VAT; a fleet whose energy, "
            "money or site a change alters has its taxes computed again at its site's taxes in force each hour",
            "per_token": "per 1M output (generation) tokens",
            "energy": "J per output token: IT energy (node meter, else GPU boards plus the host as modelled)",
            "carbon": "operational: location-based, from the grid store hour by hour where known; carbon per token "
            "withheld while any of its kWh has no intensity or, where embodied carbon is in it, any GPU-hour no "
            "embodied figure (the reason beside it); totals keep the known part",
            "yearly": f"the period's totals x 8760 / {period_h} hours",
            "ttft": "P99 from the measured histograms; on a fleet receiving routed requests, each hour's "
            "requests take the fleet's measured TTFT at the hour's new load (its latency-by-load curve)",
        },
        "notes": notes,
    }
