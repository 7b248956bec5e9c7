"""SQL sums over ledger lines, and the ``LedgerSums`` they make.

Every report reads ``NodeHourLedger`` through these aggregates, so the same
column always means the same thing. Annotation names carry an ``s_`` prefix:
Django refuses an annotation named like a model field.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.db.models import Aggregate, Count, DecimalField, FloatField, Q, Sum

from accounting.ledger import ElectricityStatus, EmbodiedG, LedgerTotals
from accounting.ledger.units import ZERO
from accounting.ledger_store import UNPRICED
from accounting.reports.metrics import LedgerSums

# As the ledger's own columns: unrounded, 12 decimal places.
AMOUNT = DecimalField(max_digits=28, decimal_places=12)

LOCATION_KNOWN = Q(location_co2e_g__isnull=False)
LOCATION_HOURLY = Q(location_co2e_g__isnull=False, location_is_fallback=False)
LOCATION_ANNUAL = Q(location_co2e_g__isnull=False, location_is_fallback=True)
LOCATION_UNKNOWN = Q(location_co2e_g__isnull=True)
# A node-hour with telemetry and no price, asset or tariff in force: unpriced, never free.
UNPRICED_WITH_TELEMETRY = (Q(pricing_price_id=UNPRICED) | Q(electricity_status=ElectricityStatus.UNPRICED)) & (
    Q(observed_s__gt=0) | Q(it_kwh__gt=0) | Q(prompt_tokens__gt=0) | Q(generation_tokens__gt=0)
)


def amount_sum(expression: Any, *, where: Q | None = None) -> Sum:
    """SUM of an unrounded quantity (``None`` when no row matches)."""
    return Sum(expression, filter=where, output_field=AMOUNT)


def _carbon_energy_sums() -> dict[str, Aggregate]:
    return {
        "s_lines": Count("id"),
        "s_held_h": amount_sum("held_h"),
        "s_gpu_h": amount_sum("gpu_h"),
        "s_observed_s": amount_sum("observed_s"),
        "s_bridged_s": amount_sum("bridged_s"),
        "s_it_kwh": amount_sum("it_kwh"),
        "s_gpu_kwh": amount_sum("gpu_kwh"),
        "s_node_metered_kwh": amount_sum("it_kwh", where=Q(energy_method="node_meter")),
        "s_node_modelled_kwh": amount_sum("it_kwh", where=Q(energy_method="modelled")),
        "s_facility_kwh": amount_sum("facility_kwh"),
        "s_location_co2e_g": amount_sum("location_co2e_g"),
        "s_location_unknown_kwh": amount_sum("facility_kwh", where=LOCATION_UNKNOWN),
        "s_market_co2e_g": amount_sum("market_co2e_g"),
        "s_market_unknown_kwh": amount_sum("facility_kwh", where=Q(market_co2e_g__isnull=True)),
        "s_embodied_low": amount_sum("embodied_co2e_g_low"),
        "s_embodied_central": amount_sum("embodied_co2e_g_central"),
        "s_embodied_high": amount_sum("embodied_co2e_g_high"),
        "s_embodied_unknown_gpu_h": amount_sum("embodied_unknown_gpu_h"),
        "s_prompt_tokens": Sum("prompt_tokens"),
        "s_generation_tokens": Sum("generation_tokens"),
        "s_idle_gpu_h": amount_sum("idle_gpu_h"),
        "s_idle_facility_kwh": amount_sum("idle_facility_kwh"),
        "s_hardware_unpriced_h": amount_sum("held_h", where=Q(pricing_price_id=UNPRICED)),
        "s_electricity_unpriced_h": amount_sum("held_h", where=Q(electricity_status=ElectricityStatus.UNPRICED)),
        "s_unpriced_hours": Count("id", filter=UNPRICED_WITH_TELEMETRY),
        "s_energy_counter_j": Sum("energy_counter_j", output_field=FloatField()),
        "s_energy_integrated_j": Sum("energy_integrated_j", output_field=FloatField()),
    }


def _money_sums() -> dict[str, Aggregate]:
    return {
        "s_electricity_cost": amount_sum("electricity_cost"),
        "s_unpriced_kwh": amount_sum("facility_kwh", where=Q(electricity_status=ElectricityStatus.UNPRICED)),
        "s_hardware_cost": amount_sum("hardware_cost"),
        "s_cost": amount_sum("cost"),
        "s_idle_cost": amount_sum("idle_cost"),
    }


def ledger_sums(*, money: bool = True) -> dict[str, Aggregate]:
    """The aggregates ``ledger_sums_from`` reads. Money only makes sense grouped by currency."""
    return {**_carbon_energy_sums(), **(_money_sums() if money else {})}


_SUM_KEYS = tuple(ledger_sums())


def _decimal(value: Any) -> Decimal:
    return ZERO if value is None else Decimal(value)


def ledger_sums_from(values: Mapping[str, Any], *, currency: str | None) -> LedgerSums:
    """``LedgerSums`` from one row of ``ledger_sums`` (absent money sums count as zero)."""
    d = {key: _decimal(values.get(key)) for key in _SUM_KEYS}
    totals = LedgerTotals(
        currency=currency,
        lines=int(values.get("s_lines") or 0),
        held_h=d["s_held_h"],
        gpu_h=d["s_gpu_h"],
        observed_s=d["s_observed_s"],
        bridged_s=d["s_bridged_s"],
        it_kwh=d["s_it_kwh"],
        gpu_kwh=d["s_gpu_kwh"],
        facility_kwh=d["s_facility_kwh"],
        electricity_cost=d["s_electricity_cost"],
        unpriced_facility_kwh=d["s_unpriced_kwh"],
        hardware_cost=d["s_hardware_cost"],
        cost=d["s_cost"],
        location_co2e_g=d["s_location_co2e_g"],
        location_unknown_facility_kwh=d["s_location_unknown_kwh"],
        market_co2e_g=d["s_market_co2e_g"],
        market_unknown_facility_kwh=d["s_market_unknown_kwh"],
        embodied_co2e_g=EmbodiedG(d["s_embodied_low"], d["s_embodied_central"], d["s_embodied_high"]),
        embodied_unknown_gpu_h=d["s_embodied_unknown_gpu_h"],
        prompt_tokens=int(d["s_prompt_tokens"]),
        generation_tokens=int(d["s_generation_tokens"]),
        idle_gpu_h=d["s_idle_gpu_h"],
        idle_cost=d["s_idle_cost"],
        idle_facility_kwh=d["s_idle_facility_kwh"],
    )
    return LedgerSums(
        totals=totals,
        electricity_known=values.get("s_electricity_cost") is not None,
        location_known=values.get("s_location_co2e_g") is not None,
        market_known=values.get("s_market_co2e_g") is not None,
        hardware_unpriced_h=d["s_hardware_unpriced_h"],
        electricity_unpriced_h=d["s_electricity_unpriced_h"],
        unpriced_hours=int(d["s_unpriced_hours"]),
        node_metered_kwh=d["s_node_metered_kwh"],
        node_modelled_kwh=d["s_node_modelled_kwh"],
        energy_counter_j=float(values.get("s_energy_counter_j") or 0.0),
        energy_integrated_j=float(values.get("s_energy_integrated_j") or 0.0),
    )
