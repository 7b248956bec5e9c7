"""Report figures as shown: the one place they are rounded, into plain dicts for the serializers and CSV.

Money is rounded once, here, with ``money_quantize(value, currency)``, from
unrounded sums: a total is never the sum of rounded parts. Other quantities are
floats at a fixed precision per unit (``PLACES``). A figure that is undefined
(no tokens, no intensity known, no price in force) stays ``None``, never 0.
Names carry units: ``_kwh``, ``_kgco2e``, ``_tco2e``, ``_h``, ``_ms``; money
fields have none because their unit is the row's ``currency``.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from accounting.ledger import money_quantize
from accounting.ledger.units import S_PER_H
from accounting.reports.metrics import ComparisonRow
from accounting.reports.selectors import FactorUse, ReportRow, SustainabilityReport
from fleets.models import Organization

# Decimal places shown, per unit.
PLACES = {
    "kwh": 6,
    "kg": 6,  # kgCO2e to the milligram
    "t": 9,  # tCO2e to the gram
    "h": 6,
    "share": 6,  # 0-1
    "ratio": 4,
    "j_per_token": 6,
    "g_per_tokens": 6,
    "ms": 3,
    "per_s": 3,
    "pct": 3,
    "pue": 4,
}
G_PER_KG = Decimal(1000)
G_PER_T = Decimal(1_000_000)
MS_PER_S = 1000.0


def rounded(value: Decimal | float | None, unit: str) -> float | None:
    """``value`` half-up to the places of ``unit``, as a float for JSON; ``None`` stays ``None``."""
    if value is None:
        return None
    exponent = Decimal(1).scaleb(-PLACES[unit])
    return float(Decimal(str(value) if isinstance(value, float) else value).quantize(exponent, ROUND_HALF_UP))


def money(value: Decimal | None, currency: str | None) -> Decimal | None:
    """Money for display: ``money_quantize`` to the currency's minor unit (``None`` when unknown)."""
    if value is None or currency is None:
        return None
    return money_quantize(value, currency)


def _kg(co2e_g: Decimal | None) -> float | None:
    return None if co2e_g is None else rounded(co2e_g / G_PER_KG, "kg")


def _t(co2e_g: Decimal | None) -> float | None:
    return None if co2e_g is None else rounded(co2e_g / G_PER_T, "t")


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
        "cost": money(totals.cost, currency),
        "hardware_unpriced_h": rounded(sums.hardware_unpriced_h, "h"),
        "electricity_unpriced_h": rounded(sums.electricity_unpriced_h, "h"),
        "unpriced_hours": sums.unpriced_hours,
        "prompt_tokens": totals.prompt_tokens,
        "generation_tokens": totals.generation_tokens,
        "tokens": totals.tokens,
        "cost_per_1m_tokens": money(totals.cost_per_1m_tokens, currency),
        "it_j_per_token": rounded(totals.it_j_per_token, "j_per_token"),
        "gpu_j_per_token": rounded(totals.gpu_j_per_token, "j_per_token"),
        "facility_j_per_token": rounded(totals.facility_j_per_token, "j_per_token"),
        "location_kgco2e": _kg(sums.location_co2e_g),
        "market_kgco2e": _kg(sums.market_co2e_g),
        "location_unknown_facility_kwh": rounded(totals.location_unknown_facility_kwh, "kwh"),
        "market_unknown_facility_kwh": rounded(totals.market_unknown_facility_kwh, "kwh"),
        "embodied_kgco2e_central": _kg(totals.embodied_co2e_g.central),
        "embodied_kgco2e_low": _kg(totals.embodied_co2e_g.low),
        "embodied_kgco2e_high": _kg(totals.embodied_co2e_g.high),
        "embodied_unknown_gpu_h": rounded(totals.embodied_unknown_gpu_h, "h"),
        "gco2e_per_1k_tokens": rounded(sums.sci_g_per_1k_tokens, "g_per_tokens"),
        "idle_gpu_h": rounded(totals.idle_gpu_h, "h"),
        "idle_cost": money(totals.idle_cost, currency),
        "idle_share": rounded(totals.idle_share, "share"),
    }


# Comparison metric (``COMPARED_METRICS``) → the output column of its ratio to the baseline.
RATIO_COLUMNS = {
    "tokens_per_s": "tokens_per_s_vs_baseline",
    "generation_tokens_per_s": "generation_tokens_per_s_vs_baseline",
    "ttft_p50_s": "ttft_p50_vs_baseline",
    "ttft_p99_s": "ttft_p99_vs_baseline",
    "cost_per_1m_tokens": "cost_per_1m_tokens_vs_baseline",
    "it_j_per_token": "it_j_per_token_vs_baseline",
    "g_per_1m_tokens": "gco2e_per_1m_tokens_vs_baseline",
    "mean_util_pct": "mean_util_vs_baseline",
    "idle_share": "idle_share_vs_baseline",
}


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else rounded(seconds * MS_PER_S, "ms")


def comparison_row_output(row: ComparisonRow) -> dict[str, Any]:
    """One comparison row as shown (see ``ComparisonRowSerializer``)."""
    stats, totals = row.stats, row.stats.sums.totals
    ttft = stats.serving.ttft
    shown = {
        "fleet_id": stats.fleet_id,
        "fleet_name": stats.fleet_name,
        "gpu_model": stats.gpu_model,
        "gpu_class": stats.gpu_class,
        "currency": stats.currency,
        "gpu_h": rounded(totals.gpu_h, "h"),
        "tokens": totals.tokens,
        "serving_h": rounded(stats.serving.serving_s / float(S_PER_H), "h"),
        "tokens_per_s": rounded(stats.tokens_per_s, "per_s"),
        "generation_tokens_per_s": rounded(stats.generation_tokens_per_s, "per_s"),
        "ttft_requests": None if ttft is None else ttft.total,
        "ttft_p50_ms": _ms(stats.ttft_p50_s),
        "ttft_p99_ms": _ms(stats.ttft_p99_s),
        "cost": money(totals.cost, stats.currency),
        "cost_per_1m_tokens": money(stats.cost_per_1m_tokens, stats.currency),
        "it_kwh": rounded(totals.it_kwh, "kwh"),
        "it_j_per_token": rounded(stats.it_j_per_token, "j_per_token"),
        "gco2e_per_1m_tokens": rounded(stats.g_per_1m_tokens, "g_per_tokens"),
        "mean_util_pct": rounded(stats.mean_util_pct, "pct"),
        "idle_share": rounded(stats.idle_share, "share"),
        "unpriced_hours": stats.sums.unpriced_hours,
    }
    ratios = row.vs_baseline
    return shown | {column: rounded(ratios[metric], "ratio") for metric, column in RATIO_COLUMNS.items()}


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
        "sci_gco2e_per_1k_tokens": rounded(sums.sci_g_per_1k_tokens, "g_per_tokens"),
        "energy_counter_share": rounded(counter_share, "share"),
        "energy_integrated_share": None if counter_share is None else rounded(1 - counter_share, "share"),
        "grid_hourly_energy_share": rounded(grid.energy_share(grid.hourly_facility_kwh), "share"),
        "grid_annual_energy_share": rounded(grid.energy_share(grid.annual_facility_kwh), "share"),
        "grid_unknown_energy_share": rounded(grid.energy_share(grid.unknown_facility_kwh), "share"),
        "grid_hourly_h": rounded(grid.hourly_h, "h"),
        "grid_annual_h": rounded(grid.annual_h, "h"),
        "grid_unknown_h": rounded(grid.unknown_h, "h"),
        "held_h": rounded(totals.held_h, "h"),
        "observed_h": rounded(observed_h, "h"),
        "bridged_h": rounded(bridged_h, "h"),
        "missing_h": rounded(max(totals.held_h - observed_h - bridged_h, Decimal(0)), "h"),
        "coverage": rounded(totals.coverage, "share"),
        "hardware_unpriced_h": rounded(sums.hardware_unpriced_h, "h"),
        "electricity_unpriced_h": rounded(sums.electricity_unpriced_h, "h"),
        "unpriced_hours": sums.unpriced_hours,
        "factors": [_factor_output(use) for use in report.factors],
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
