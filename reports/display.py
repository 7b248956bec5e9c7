"""Report figures as shown: the one place they are rounded, into plain dicts for the serializers and CSV.

Money amounts (totals, per fleet, per line) are rounded once, here, with
``money_quantize(value, currency)``, from unrounded sums: a total is never the
sum of rounded parts. Unit figures (cost per 1M tokens, J per token, gCO2e per
1k or 1M tokens: quotients) keep 4 significant digits (``significant``): money
ones as decimal strings, the others as numbers. Other quantities are floats at
a fixed precision per unit (``PLACES``). A figure that is undefined
(no tokens, no intensity known, no price in force) stays ``None``, never 0.
Names carry units: ``_kwh``, ``_kgco2e``, ``_tco2e``, ``_h``, ``_ms``; money
fields have none because their unit is the row's ``currency``.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from accounting.ledger import money_quantize
from accounting.ledger.units import S_PER_H, TOKENS_PER_MILLION, significant
from fleets.models import Organization
from reports.bands import CurveBand
from reports.metrics import ComparisonRow, ComparisonStats, LedgerSums, ratio
from reports.selectors import FactorUse, GridHour, QualityHour, ReportRow, SustainabilityReport
from reports.selectors.load import LoadBand
from reports.selectors.trace import EmbodiedFactors
from reports.serving import ServingSums

# Decimal places shown, per unit.
PLACES = {
    "kwh": 6,
    "kg": 6,  # kgCO2e to the milligram
    "t": 9,  # tCO2e to the gram
    "h": 6,
    "share": 6,  # 0-1
    "ratio": 4,
    "ms": 3,
    "per_s": 3,
    "pct": 3,
    "pue": 4,
}
G_PER_KG = Decimal(1000)
G_PER_T = Decimal(1_000_000)
MS_PER_S = 1000.0


# The quantum of each unit's places (0.000001 for kWh), made once: the long hourly lists round thousands.
_QUANTUM = {unit: Decimal(1).scaleb(-places) for unit, places in PLACES.items()}


def rounded(value: Decimal | float | None, unit: str) -> float | None:
    """``value`` half-up to the places of ``unit``, as a float for JSON; ``None`` stays ``None``."""
    if value is None:
        return None
    exact = value if isinstance(value, Decimal) else Decimal(str(value) if isinstance(value, float) else value)
    return float(exact.quantize(_QUANTUM[unit], ROUND_HALF_UP))


def money(value: Decimal | None, currency: str | None) -> Decimal | None:
    """Money for display: ``money_quantize`` to the currency's minor unit (``None`` when unknown)."""
    if value is None or currency is None:
        return None
    return money_quantize(value, currency)


def per_unit(value: Decimal | float | None) -> float | None:
    """A unit figure that is not money (J per token, gCO2e per 1k tokens ...) to 4 significant digits."""
    if value is None:
        return None
    return float(significant(Decimal(str(value)) if isinstance(value, float) else value))


def money_per_unit(value: Decimal | None, currency: str | None) -> Decimal | None:
    """A unit figure in money (cost per 1M tokens ...) to 4 significant digits: 0.0982 stays 0.09820, never 0.10."""
    if value is None or currency is None:
        return None
    return significant(value)


def _kg(co2e_g: Decimal | None) -> float | None:
    return None if co2e_g is None else rounded(co2e_g / G_PER_KG, "kg")


def _t(co2e_g: Decimal | None) -> float | None:
    return None if co2e_g is None else rounded(co2e_g / G_PER_T, "t")


def trace_output(sums: LedgerSums) -> dict[str, Any]:
    """Where a row's figures came from: energy methods, the grid intensity used and its kinds, as shares of energy."""
    counter_share = sums.energy_counter_share
    return {
        "energy_counter_share": rounded(counter_share, "share"),
        "energy_integrated_share": None if counter_share is None else rounded(1 - counter_share, "share"),
        "node_meter_energy_share": rounded(sums.node_meter_share, "share"),
        "node_modelled_energy_share": rounded(sums.node_modelled_share, "share"),
        "location_gco2e_per_kwh": per_unit(sums.location_gco2e_per_kwh),
        **{f"grid_{kind}_energy_share": rounded(share, "share") for kind, share in sums.grid_kind_shares().items()},
    }


def carbon_per_token_gaps_output(sums: LedgerSums) -> dict[str, Any]:
    """What a row's carbon per token lacks, beside it: the kWh without a grid intensity, the GPU-hours without an
    embodied figure, and why its figures are withheld (null: stated)."""
    totals = sums.totals
    return {
        "location_unknown_facility_kwh": rounded(totals.location_unknown_facility_kwh, "kwh"),
        "embodied_unknown_gpu_h": rounded(totals.embodied_unknown_gpu_h, "h"),
        "carbon_per_token_note": sums.carbon_per_token_note,
    }


def usage_row_output(row: ReportRow) -> dict[str, Any]:
    """One usage-report row as shown (see ``UsageRowSerializer`` for each field's meaning)."""
    sums, totals = row.sums, row.sums.totals
    currency = totals.currency
    return {
        "period_start": row.period_start,
        "period_end": row.period_end,
        "group_key": row.group_key,
        "group_label": row.group_label,
        "currency": currency,
        "held_h": rounded(totals.held_h, "h"),
        "gpu_h": rounded(totals.gpu_h, "h"),
        "coverage": rounded(totals.coverage, "share"),
        "it_kwh": rounded(totals.it_kwh, "kwh"),
        "gpu_kwh": rounded(totals.gpu_kwh, "kwh"),
        "node_metered_kwh": rounded(sums.node_metered_kwh, "kwh"),
        "node_modelled_kwh": rounded(sums.node_modelled_kwh, "kwh"),
        "facility_kwh": rounded(totals.facility_kwh, "kwh"),
        "electricity_cost": money(sums.electricity_cost, currency),
        "hardware_cost": money(totals.hardware_cost, currency),
        "rent_cost": money(totals.rent_cost, currency),
        "depreciation_cost": money(totals.depreciation_cost, currency),
        "opex_cost": money(totals.opex_cost, currency),
        "cost": money(totals.cost, currency),
        "hardware_unpriced_h": rounded(sums.hardware_unpriced_h, "h"),
        "electricity_unpriced_h": rounded(sums.electricity_unpriced_h, "h"),
        "unpriced_hours": sums.unpriced_hours,
        "hardware_unconverted_h": rounded(sums.hardware_unconverted_h, "h"),
        "cost_per_gpu_h": money_per_unit(totals.cost_per_gpu_h, currency),
        "electricity_cost_per_kwh": money_per_unit(
            totals.electricity_cost_per_kwh if sums.electricity_known else None, currency
        ),
        "prompt_tokens": totals.prompt_tokens,
        "generation_tokens": totals.generation_tokens,
        "tokens": totals.tokens,
        "cached_prompt_tokens": sums.cached_prompt_tokens,
        "prefix_cache_hit_share": rounded(sums.prefix_cache_hit_share, "share"),
        "cost_per_1m_output_tokens": money_per_unit(totals.cost_per_1m_output_tokens, currency),
        "cost_per_1m_tokens": money_per_unit(totals.cost_per_1m_tokens, currency),
        "it_j_per_output_token": per_unit(totals.it_j_per_output_token),
        "it_j_per_token": per_unit(totals.it_j_per_token),
        "gpu_j_per_output_token": per_unit(totals.gpu_j_per_output_token),
        "gpu_j_per_token": per_unit(totals.gpu_j_per_token),
        "facility_j_per_output_token": per_unit(totals.facility_j_per_output_token),
        "facility_j_per_token": per_unit(totals.facility_j_per_token),
        "location_kgco2e": _kg(sums.location_co2e_g),
        "market_kgco2e": _kg(sums.market_co2e_g),
        "location_unknown_facility_kwh": rounded(totals.location_unknown_facility_kwh, "kwh"),
        "market_unknown_facility_kwh": rounded(totals.market_unknown_facility_kwh, "kwh"),
        "embodied_kgco2e_central": _kg(totals.embodied_co2e_g.central),
        "embodied_kgco2e_low": _kg(totals.embodied_co2e_g.low),
        "embodied_kgco2e_high": _kg(totals.embodied_co2e_g.high),
        "embodied_unknown_gpu_h": rounded(totals.embodied_unknown_gpu_h, "h"),
        "gco2e_per_1k_output_tokens": per_unit(sums.sci_g_per_1k_output_tokens),
        "gco2e_per_1k_tokens": per_unit(sums.sci_g_per_1k_tokens),
        "idle_gpu_h": rounded(totals.idle_gpu_h, "h"),
        "idle_cost": money(totals.idle_cost, currency),
        "idle_facility_kwh": rounded(totals.idle_facility_kwh, "kwh"),
        "idle_share": rounded(totals.idle_share, "share"),
        **trace_output(sums),
        "location_sources": row.location_sources,
        "embodied_sources": row.embodied_sources,
        **tax_output(sums),
    }


def tax_output(sums: LedgerSums) -> dict[str, Any]:
    """A row's taxes as shown: energy tax and VAT (recoverable, and the part in cost), each its own figure."""
    totals, currency = sums.totals, sums.totals.currency
    return {
        "energy_tax_cost": money(totals.energy_tax_cost, currency),
        "vat_amount": money(totals.vat_amount, currency),
        "vat_recoverable": money(totals.vat_recoverable, currency),
        "vat_cost": money(totals.vat_cost, currency),
        "vat_unknown_h": rounded(sums.vat_unknown_h, "h"),
    }


# Comparison metric (``COMPARED_METRICS``) → the output column of its ratio to the baseline.
RATIO_COLUMNS = {
    "generation_tokens_per_s": "generation_tokens_per_s_vs_baseline",
    "tokens_per_s": "tokens_per_s_vs_baseline",
    "ttft_mean_s": "ttft_mean_vs_baseline",
    "ttft_p50_s": "ttft_p50_vs_baseline",
    "ttft_p90_s": "ttft_p90_vs_baseline",
    "ttft_p99_s": "ttft_p99_vs_baseline",
    "cost_per_1m_output_tokens": "cost_per_1m_output_tokens_vs_baseline",
    "cost_per_1m_tokens": "cost_per_1m_tokens_vs_baseline",
    "it_j_per_output_token": "it_j_per_output_token_vs_baseline",
    "it_j_per_token": "it_j_per_token_vs_baseline",
    "g_per_1m_output_tokens": "gco2e_per_1m_output_tokens_vs_baseline",
    "location_g_per_1m_output_tokens": "location_gco2e_per_1m_output_tokens_vs_baseline",
    "embodied_central_g_per_1m_output_tokens": "embodied_gco2e_per_1m_output_tokens_vs_baseline",
    "g_per_1m_tokens": "gco2e_per_1m_tokens_vs_baseline",
    "mean_util_pct": "mean_util_vs_baseline",
    "idle_share": "idle_share_vs_baseline",
}
TTFT_QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else rounded(seconds * MS_PER_S, "ms")


def _quantiles(
    prefix: str,
    quantile_s: Callable[[float], float | None],
    bucket_s: Callable[[float], tuple[float, float | None] | None],
    quantiles: dict[str, float],
) -> dict[str, float | None]:
    """Each quantile of a latency histogram in ms, interpolated within its bucket, beside that bucket's bounds
    (``<prefix>_<name>_ms``, ``..._bucket_low_ms``, ``..._bucket_high_ms``)."""
    figures: dict[str, float | None] = {}
    for name, q in quantiles.items():
        bucket = bucket_s(q)
        figures[f"{prefix}_{name}_ms"] = _ms(quantile_s(q))
        figures[f"{prefix}_{name}_bucket_low_ms"] = None if bucket is None else _ms(bucket[0])
        figures[f"{prefix}_{name}_bucket_high_ms"] = None if bucket is None else _ms(bucket[1])
    return figures


def _ttft_quantiles(histogram: ServingSums | CurveBand, quantiles: dict[str, float]) -> dict[str, float | None]:
    return _quantiles("ttft", histogram.ttft_quantile_s, histogram.ttft_quantile_bucket_s, quantiles)


def _ttft_output(serving: ServingSums) -> dict[str, Any]:
    """TTFT quantiles (interpolated within their bucket), each with its bucket's bounds, and their basis."""
    shown, basis = serving.ttft_shown, serving.ttft_basis
    figures: dict[str, Any] = {
        "ttft_basis": None if basis is None else basis.value,
        "ttft_requests": None if shown is None else shown.total,
        "ttft_lower_bound_requests_left_out": serving.ttft_lower_bound_requests_left_out,
    }
    return figures | _ttft_quantiles(serving, TTFT_QUANTILES)


ITL_QUANTILES = {"p50": 0.5, "p99": 0.99}
# Why a row has no inter-token latency figures.
ITL_NOT_EXPOSED = "not exposed: no endpoint of the row exports an inter-token latency histogram (TGI has none)"


def _itl_output(serving: ServingSums) -> dict[str, Any]:
    """Inter-token latency (time per output token): mean and quantiles with their buckets, or null and why."""
    shown = serving.itl_shown
    figures: dict[str, Any] = {
        "itl_tokens": None if shown is None else shown.total,
        "itl_note": ITL_NOT_EXPOSED if shown is None else None,
        "itl_mean_ms": _ms(serving.itl_sum.mean_s) if shown is not None else None,
    }
    return figures | _quantiles("itl", serving.itl_quantile_s, serving.itl_quantile_bucket_s, ITL_QUANTILES)


def _goodput_output(stats: ComparisonStats) -> dict[str, Any]:
    """The share of requests within the organization's TTFT target: interpolated, and its exact bounds."""
    target_s, within = stats.goodput_ttft_target_s, stats.goodput
    return {
        "goodput_ttft_target_ms": _ms(target_s),
        "goodput_share": None if within is None else rounded(within.estimate, "share"),
        "goodput_share_certain": None if within is None else rounded(within.certain, "share"),
        "goodput_share_possible": None if within is None else rounded(within.possible, "share"),
        "goodput_bucket_low_ms": None if within is None else _ms(within.bucket_low_s),
        "goodput_bucket_high_ms": None if within is None else _ms(within.bucket_high_s),
    }


def _per_1m(value: Decimal | None) -> Decimal | None:
    return None if value is None else value * TOKENS_PER_MILLION


def comparison_row_output(row: ComparisonRow) -> dict[str, Any]:
    """One comparison row as shown (see ``ComparisonRowSerializer``): per output token first."""
    stats, totals = row.stats, row.stats.sums.totals
    currency = stats.currency
    serving = stats.serving
    shown = {
        "fleet_id": stats.fleet_id,
        "fleet_name": stats.fleet_name,
        "gpu_model": stats.gpu_model,
        "gpu_class": stats.gpu_class,
        "llm_model": stats.llm_model,
        "ledger_allocation": stats.allocation.value,
        "currency": currency,
        "baseline_basis": None if row.baseline_basis is None else row.baseline_basis.value,
        "cost_per_1m_output_tokens": money_per_unit(stats.cost_per_1m_output_tokens, currency),
        "it_j_per_output_token": per_unit(stats.it_j_per_output_token),
        "it_j_per_1m_output_tokens": per_unit(_per_1m(stats.it_j_per_output_token)),
        "gco2e_per_1m_output_tokens": per_unit(stats.g_per_1m_output_tokens),
        "location_gco2e_per_1m_output_tokens": per_unit(stats.location_g_per_1m_output_tokens),
        "embodied_gco2e_per_1m_output_tokens": per_unit(stats.embodied_g_per_1m_output_tokens("central")),
        "embodied_gco2e_per_1m_output_tokens_low": per_unit(stats.embodied_g_per_1m_output_tokens("low")),
        "embodied_gco2e_per_1m_output_tokens_high": per_unit(stats.embodied_g_per_1m_output_tokens("high")),
        **carbon_per_token_gaps_output(stats.sums),
        "gpu_h": rounded(totals.gpu_h, "h"),
        "prompt_tokens": totals.prompt_tokens,
        "generation_tokens": totals.generation_tokens,
        "tokens": totals.tokens,
        "requests": serving.requests,
        "serving_h": rounded(serving.serving_s / float(S_PER_H), "h"),
        "cached_prompt_tokens": serving.cached_prompt_tokens,
        "prefix_cache_hit_share": rounded(serving.prefix_cache_hit_share, "share"),
        "generation_tokens_per_s": per_unit(stats.generation_tokens_per_s),
        "generation_tokens_per_gpu_s": per_unit(serving.generation_tokens_per_gpu_s),
        "requests_per_s": per_unit(serving.requests_per_s),
        "requests_per_gpu_s": per_unit(serving.requests_per_gpu_s),
        "tokens_per_s": per_unit(stats.tokens_per_s),
        "ttft_mean_ms": _ms(stats.ttft_mean_s),
        **_ttft_output(serving),
        **_goodput_output(stats),
        **_itl_output(serving),
        "cost": money(totals.cost, currency),
        "cost_per_1m_tokens": money_per_unit(stats.cost_per_1m_tokens, currency),
        "it_kwh": rounded(totals.it_kwh, "kwh"),
        "it_j_per_token": per_unit(stats.it_j_per_token),
        "gpu_kwh": rounded(totals.gpu_kwh, "kwh"),
        "gpu_j_per_output_token": per_unit(totals.gpu_j_per_output_token),
        "gpu_j_per_token": per_unit(totals.gpu_j_per_token),
        "gco2e_per_1m_tokens": per_unit(stats.g_per_1m_tokens),
        "location_kgco2e": _kg(stats.sums.location_co2e_g),
        "embodied_kgco2e_central": _kg(totals.embodied_co2e_g.central),
        "mean_util_pct": rounded(stats.mean_util_pct, "pct"),
        "idle_gpu_h": rounded(totals.idle_gpu_h, "h"),
        "idle_cost": money(totals.idle_cost, currency),
        "idle_share": rounded(stats.idle_share, "share"),
        "unpriced_hours": stats.sums.unpriced_hours,
        **trace_output(stats.sums),
        "location_sources": stats.location_sources,
        "embodied_sources": stats.embodied_sources,
    }
    ratios = row.vs_baseline
    return shown | {column: rounded(ratios[metric], "ratio") for metric, column in RATIO_COLUMNS.items()}


# Load band figure → the output column of its ratio to the baseline fleet's band of the same range.
LOAD_BAND_RATIO_COLUMNS = {
    "output_tokens_per_s_per_gpu": "output_tokens_per_s_per_gpu_vs_baseline",
    "ttft_p99_s": "ttft_p99_vs_baseline",
    "cost_per_1m_output_tokens": "cost_per_1m_output_tokens_vs_baseline",
    "it_j_per_output_token": "it_j_per_output_token_vs_baseline",
    "gco2e_per_1m_output_tokens": "gco2e_per_1m_output_tokens_vs_baseline",
}
LOAD_BAND_QUANTILES = {"p50": 0.5, "p99": 0.99}


def _band_figure(band: CurveBand, name: str) -> Any:
    return band.ttft_quantile_s(0.99) if name == "ttft_p99_s" else getattr(band, name)


def load_band_output(load: LoadBand) -> dict[str, Any]:
    """One load band of a comparison row as shown (see ``LoadBandSerializer``), with its ratios to the
    baseline fleet's band of the same range (money only in the same currency)."""
    band, currency = load.band, load.currency
    figures: dict[str, Any] = {
        "band_low_rps_per_gpu": band.low_rps_per_gpu,
        "band_high_rps_per_gpu": band.high_rps_per_gpu,
        "hours": band.hours,
        "rps_per_gpu": per_unit(band.rps_per_gpu),
        "max_rps_per_gpu": per_unit(band.max_rps_per_gpu),
        "output_tokens_per_s_per_gpu": per_unit(band.output_tokens_per_s_per_gpu),
        "requests": band.requests,
        "generation_tokens": band.generation_tokens,
        "gpu_h": rounded(band.gpu_h, "h"),
        "ttft_basis": band.ttft_basis,
    }
    figures |= _ttft_quantiles(band, LOAD_BAND_QUANTILES)
    figures |= {
        "cost_per_1m_output_tokens": money_per_unit(band.cost_per_1m_output_tokens, currency),
        "it_j_per_output_token": per_unit(band.it_j_per_output_token),
        "gco2e_per_1m_output_tokens": per_unit(band.gco2e_per_1m_output_tokens),
        "location_gco2e_per_1m_output_tokens": per_unit(band.operational_gco2e_per_1m_output_tokens),
        "location_intensity_coverage": rounded(band.operational_coverage, "share"),
        "embodied_gco2e_per_1m_output_tokens": per_unit(band.embodied_gco2e_per_1m_output_tokens),
        "embodied_unknown_gpu_h": rounded(band.embodied_unknown_gpu_h, "h"),
        "carbon_per_token_note": "; ".join(band.carbon_per_token_gaps) or None,
    }
    base = load.baseline
    for name, column in LOAD_BAND_RATIO_COLUMNS.items():
        other_money = name == "cost_per_1m_output_tokens" and load.baseline_currency != currency
        # TGI's queue time (a lower bound) is never divided by a measured TTFT, nor the reverse
        other_basis = name == "ttft_p99_s" and base is not None and base.ttft_basis != band.ttft_basis
        value = (
            None
            if base is None or other_money or other_basis
            else ratio(_band_figure(band, name), _band_figure(base, name))
        )
        figures[column] = rounded(value, "ratio")
    return figures


# What the ledger's market-based figure is, said wherever it is shown beside the instruments' one.
MARKET_BASIS = "site_market_factors"
MARKET_BASIS_NOTE = (
    "site market factors: each ledger line's facility kWh x the market factor entered for its site and hour "
    "(/api/v1/site-market-factors/); the GHG Protocol Scope 2 market-based figure, allocating contractual "
    "instruments and the residual mix, is /api/v1/reports/scope2/"
)


def sustainability_output(report: SustainabilityReport, organization: Organization) -> dict[str, Any]:
    """The sustainability report as shown (see ``SustainabilityReportView.OutputSerializer``)."""
    sums, totals, grid = report.sums, report.sums.totals, report.grid
    counter_share = sums.energy_counter_share
    observed_h, bridged_h = totals.observed_s / S_PER_H, totals.bridged_s / S_PER_H
    return {
        "organization_id": organization.pk,
        "organization": organization.slug,
        "start": report.start,
        "end": report.end,
        "location_kgco2e": _kg(sums.location_co2e_g),
        "location_tco2e": _t(sums.location_co2e_g),
        "market_kgco2e": _kg(sums.market_co2e_g),
        "market_tco2e": _t(sums.market_co2e_g),
        "market_basis": MARKET_BASIS,
        "location_unknown_facility_kwh": rounded(totals.location_unknown_facility_kwh, "kwh"),
        "market_unknown_facility_kwh": rounded(totals.market_unknown_facility_kwh, "kwh"),
        "embodied_kgco2e_central": _kg(totals.embodied_co2e_g.central),
        "embodied_kgco2e_low": _kg(totals.embodied_co2e_g.low),
        "embodied_kgco2e_high": _kg(totals.embodied_co2e_g.high),
        "embodied_tco2e_central": _t(totals.embodied_co2e_g.central),
        "unknown_model_gpu_h": rounded(totals.embodied_unknown_gpu_h, "h"),
        "it_kwh": rounded(totals.it_kwh, "kwh"),
        "gpu_kwh": rounded(totals.gpu_kwh, "kwh"),
        "node_metered_kwh": rounded(sums.node_metered_kwh, "kwh"),
        "node_modelled_kwh": rounded(sums.node_modelled_kwh, "kwh"),
        "facility_kwh": rounded(totals.facility_kwh, "kwh"),
        "pue": rounded(sums.pue, "pue"),
        "tokens": totals.tokens,
        "prompt_tokens": totals.prompt_tokens,
        "generation_tokens": totals.generation_tokens,
        "cached_prompt_tokens": sums.cached_prompt_tokens,
        "sci_gco2e_per_1k_output_tokens": per_unit(sums.sci_g_per_1k_output_tokens),
        "sci_gco2e_per_1k_tokens": per_unit(sums.sci_g_per_1k_tokens),
        "energy_counter_share": rounded(counter_share, "share"),
        "energy_integrated_share": None if counter_share is None else rounded(1 - counter_share, "share"),
        "grid_hourly_energy_share": rounded(grid.energy_share(grid.hourly_facility_kwh), "share"),
        "grid_annual_energy_share": rounded(grid.energy_share(grid.annual_facility_kwh), "share"),
        "grid_unknown_energy_share": rounded(grid.energy_share(grid.unknown_facility_kwh), "share"),
        "grid_hourly_h": rounded(grid.hourly_h, "h"),
        "grid_annual_h": rounded(grid.annual_h, "h"),
        "grid_unknown_h": rounded(grid.unknown_h, "h"),
        "idle_gpu_h": rounded(totals.idle_gpu_h, "h"),
        "idle_facility_kwh": rounded(totals.idle_facility_kwh, "kwh"),
        "held_h": rounded(totals.held_h, "h"),
        "observed_h": rounded(observed_h, "h"),
        "bridged_h": rounded(bridged_h, "h"),
        "missing_h": rounded(max(totals.held_h - observed_h - bridged_h, Decimal(0)), "h"),
        "coverage": rounded(totals.coverage, "share"),
        "hardware_unpriced_h": rounded(sums.hardware_unpriced_h, "h"),
        "electricity_unpriced_h": rounded(sums.electricity_unpriced_h, "h"),
        "unpriced_hours": sums.unpriced_hours,
        "factors": [_factor_output(use) for use in report.factors],
        "grid_hours": [_grid_hour_output(hour) for hour in report.grid_hours],
        "quality_hours": [quality_hour_output(hour) for hour in report.quality_hours],
    }


def embodied_factors_output(used: EmbodiedFactors) -> dict[str, Any]:
    """A GPU model's embodied carbon in the period and its factors' sources, as shown (``EmbodiedFactorSerializer``)."""
    return {
        "gpu_model": used.gpu_model,
        "display_name": used.display_name,
        "embodied_kgco2e_central": _kg(used.embodied_co2e_g),
        "sources": "; ".join(used.sources) or None,
    }


def quality_hour_output(hour: QualityHour) -> dict[str, Any]:
    """One hour's data quality as shown (``QualityHourSerializer``): node-hours rounded, unpriced node-hours."""
    return {
        "hour_start": hour.hour_start,
        "held_h": rounded(hour.held_h, "h"),
        "measured_h": rounded(hour.measured_h, "h"),
        "bridged_h": rounded(hour.bridged_h, "h"),
        "missing_h": rounded(hour.missing_h, "h"),
        "unpriced_hours": hour.unpriced_hours,
    }


def _grid_hour_output(hour: GridHour) -> dict[str, Any]:
    return {
        "zone": hour.zone,
        "hour_start": hour.hour_start,
        "gco2e_per_kwh": per_unit(hour.gco2e_per_kwh),
        "source": hour.source,
        "kind": hour.kind,
        "facility_kwh": rounded(hour.facility_kwh, "kwh"),
    }


def _factor_output(use: FactorUse) -> dict[str, Any]:
    return {
        "scope": use.scope,
        "source": use.source,
        "origin": use.origin.value,
        "licence": use.licence,
        "attribution": use.attribution,
        "facility_kwh": rounded(use.facility_kwh, "kwh"),
        "held_h": rounded(use.held_h, "h"),
    }
