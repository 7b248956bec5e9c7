"""Constructed load curves with known shapes (no database)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from reports.bands import MEASURED, CurveBand, CurveKey, LoadCurve
from telemetry.histogram import Histogram

BOUNDS = (0.05, 0.1, 0.2, 0.5, 1.0)
FAST = Histogram(BOUNDS, (0, 100, 0, 0, 0, 0))  # every TTFT in (50, 100] ms: P99 = 99.5 ms
SLOW = Histogram(BOUNDS, (0, 0, 0, 100, 0, 0))  # every TTFT in (200, 500] ms: P99 = 497 ms
TOKENS = 1_000_000_000  # output tokens per band: per-1M figures are cost / 1000
REQUESTS = TOKENS // 200  # 200 output tokens per request


def band(low, high, *, max_rps, ttft, cost, hours=24, operational_g="100000", embodied_g="20000", it_kwh="1000"):
    """A band of 1e9 output tokens: cost per 1M output tokens = cost / 1000."""
    return CurveBand(
        low_rps_per_gpu=low, high_rps_per_gpu=high, hours=hours, max_rps_per_gpu=max_rps, requests=REQUESTS,
        generation_tokens=TOKENS, gpu_h=Decimal(100), cost=Decimal(cost), it_kwh=Decimal(it_kwh),
        facility_kwh=Decimal(it_kwh) * Decimal("1.2"), operational_co2e_g=Decimal(operational_g),
        embodied_co2e_g=Decimal(embodied_g), ttft=ttft, ttft_basis=MEASURED,
    )  # fmt: skip


def curve(fleet_id, name, gpu_class, gpus, bands, *, llm="llama-8b", gpu_model=None):
    return LoadCurve(
        key=CurveKey(fleet_id, gpu_model or ("h100-sxm" if gpu_class == "enterprise" else "rtx-4090"), llm),
        fleet_name=name, gpu_class=gpu_class, currency="USD", gpu_count=gpus, bands=tuple(bands),
        first_hour=datetime(2026, 11, 1, tzinfo=UTC), last_hour=datetime(2026, 11, 3, tzinfo=UTC),
    )  # fmt: skip


def enterprise(**options):
    """8 H100s: 2.00 per 1M output tokens, P99 99.5 ms measured up to 10 req/s per GPU."""
    return curve(1, "enterprise", "enterprise", 8, [
        band(1, 2, max_rps=1.9, ttft=FAST, cost="2000", **options),
        band(8, 16, max_rps=10.0, ttft=FAST, cost="2000", **options),
    ])  # fmt: skip


def consumer(**options):
    """16 RTX 4090s: 1.00 per 1M output tokens, P99 99.5 ms up to 1.5 req/s per GPU, 497 ms in 2-4."""
    return curve(2, "consumer", "consumer", 16, [
        band(1, 2, max_rps=1.5, ttft=FAST, cost="1000", **options),
        band(2, 4, max_rps=3.5, ttft=SLOW, cost="800", **options),
    ])  # fmt: skip
