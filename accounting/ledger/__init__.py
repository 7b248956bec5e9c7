"""The ledger: pure functions turning measured node-hours into cost and carbon.

Nothing here imports Django or touches the database. Models, services and tasks
build the input dataclasses and store or show what comes back.

- ``build_node_hour_line(NodeHourInput) -> NodeHourLine``: one node, one UTC hour.
- ``LedgerTotals.sum(lines)``: roll-ups with per-token metrics.
- ``money_quantize(value, currency)``: the single place money is rounded (display).
- ``accounting.ledger.embodied``: the remaining-life amortization rule.
- ``accounting.ledger.depreciation``: depreciation of owned nodes by the book (IAS 16).
"""

from accounting.ledger.depreciation import DepreciationMethod, LifeChange, OwnedAsset, book_value
from accounting.ledger.embodied import EmbodiedG, embodied_co2e_g, embodied_rate_g_per_h
from accounting.ledger.inputs import (
    DEFAULT_POLICY,
    AmortizationMethod,
    EmbodiedAsset,
    EmbodiedKg,
    GpuHourInput,
    IntensityFactor,
    LedgerInputError,
    LedgerPolicy,
    NodeHourInput,
    OwnedPricing,
    Pricing,
    RatePer,
    RentedPricing,
    hours_held,
)
from accounting.ledger.line import (
    ElectricityStatus,
    EnergyMethod,
    HardwareCost,
    NodeHourLine,
    build_node_hour_line,
    electricity_cost,
    facility_kwh,
    hardware_cost,
    hardware_costs,
    line_cost,
    operational_co2e_g,
    tariff_electricity_cost,
)
from accounting.ledger.totals import CurrencyMismatchError, LedgerTotals
from accounting.ledger.units import H_PER_YEAR, J_PER_KWH, h_from_years, kwh_from_j, money_quantize

__all__ = [
    "DEFAULT_POLICY",
    "H_PER_YEAR",
    "J_PER_KWH",
    "AmortizationMethod",
    "CurrencyMismatchError",
    "DepreciationMethod",
    "ElectricityStatus",
    "EmbodiedAsset",
    "EmbodiedG",
    "EmbodiedKg",
    "EnergyMethod",
    "GpuHourInput",
    "HardwareCost",
    "IntensityFactor",
    "LedgerInputError",
    "LedgerPolicy",
    "LedgerTotals",
    "LifeChange",
    "NodeHourInput",
    "NodeHourLine",
    "OwnedAsset",
    "OwnedPricing",
    "Pricing",
    "RatePer",
    "RentedPricing",
    "book_value",
    "build_node_hour_line",
    "electricity_cost",
    "embodied_co2e_g",
    "embodied_rate_g_per_h",
    "facility_kwh",
    "h_from_years",
    "hardware_cost",
    "hardware_costs",
    "hours_held",
    "kwh_from_j",
    "line_cost",
    "money_quantize",
    "operational_co2e_g",
    "tariff_electricity_cost",
]
