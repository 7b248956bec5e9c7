"""Hand-worked inputs of the pure ledger: one node-hour of 8 GPUs and its prices and factors."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal as D

from accounting.ledger import (
    EmbodiedAsset,
    EmbodiedKg,
    GpuHourInput,
    IntensityFactor,
    NodeHourInput,
    RatePer,
    RentedPricing,
)
from accounting.tariff import TariffPrice

HOUR = datetime(2024, 6, 3, 14, tzinfo=UTC)
FOUR_YEARS_H = D(35040)
# 175.2 kg over 35,040 h = 5 g/h: round numbers for the hand-worked cases.
CARD = EmbodiedAsset(EmbodiedKg(D("70.08"), D("175.2"), D("280.32")), FOUR_YEARS_H)
PRICE = TariffPrice(D("0.30"), "tariff-1:peak")
GRID = IntensityFactor(D(200), "electricitymaps:live")
CONTRACT = IntensityFactor(D(50), "contract:ppa-7")
RENT_PER_NODE_WITH_POWER = RentedPricing(D("24.00"), RatePer.NODE, includes_power=True, price_id="rent-3")
RENT_PER_GPU = RentedPricing(D("2.50"), RatePer.GPU, includes_power=False, price_id="rent-4")


def gpu(
    index: int = 0, energy_j: D = D(2_520_000), tokens: int = 1000, util: D | None = D(60), **kw: object
) -> GpuHourInput:
    # 2,520,000 J in an hour = 700 W average = 0.7 kWh
    values: dict[str, object] = {
        "gpu_id": f"GPU-{index}",
        "energy_j": energy_j,
        "tokens_served": tokens,
        "mean_util_pct": util,
        "embodied": CARD,
    }
    values.update(kw)
    return GpuHourInput(**values)  # type: ignore[arg-type]


def node(**kw: object) -> NodeHourInput:
    values: dict[str, object] = {
        "node_id": "node-1",
        "hour_start": HOUR,
        "currency": "USD",
        "gpus": tuple(gpu(i) for i in range(8)),
        "node_energy_j": None,
        "observed_s": D(3600),
        "held_h": D(1),
        "prompt_tokens": 300_000,
        "generation_tokens": 100_000,
        "pue": D("1.25"),
        "tariff": PRICE,
        "pricing": RENT_PER_GPU,
        "location": GRID,
        "market": CONTRACT,
        "host_embodied": None,
    }
    values.update(kw)
    return NodeHourInput(**values)  # type: ignore[arg-type]
