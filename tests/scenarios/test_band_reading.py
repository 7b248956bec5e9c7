"""Scenarios and the advisor read a load on the same band: one reading rule (``reports.bands``).

One fleet (one H100 node, 1 GPU-hour an hour, 200 output tokens per request) measured in three hours:
0.3 requests/s per GPU (band 0.25-0.5, TTFT fast), 1.5 and 1.2 (band 1-2, TTFT slow). The advisor's
curve and the scenario's latency-by-load curve are built from the same hours.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from advice.advisor import AdvisorSettings, ClassSpec, advise
from reports.bands import CurveBand, EndpointHour, LoadCurve, NodeHour, curves_build, load_hours
from scenarios.latency import ModelUsage, ttft_at_load
from telemetry.histogram import Histogram

H0 = datetime(2026, 11, 2, tzinfo=UTC)
BOUNDS = [0.1, 1.0]
TOKENS_PER_REQUEST = 200
# hour offset, requests/s per GPU, TTFT counts on (0.1, 1 s]
MEASURED = ((0, 0.3, [100, 0, 0]), (1, 1.5, [0, 100, 0]), (2, 1.2, [0, 80, 20]))


def hour(offset: int) -> datetime:
    return H0 + timedelta(hours=offset)


def advisor_curve() -> LoadCurve:
    usage = [
        EndpointHour(1, hour(h), "llama-8b", round(rps * 3600), round(rps * 3600) * TOKENS_PER_REQUEST,
                     ttft=Histogram(tuple(BOUNDS), tuple(counts)))
        for h, rps, counts in MEASURED
    ]  # fmt: skip
    lines = [
        NodeHour(1, hour(h), 1, "h100-sxm", "USD", Decimal(1), Decimal(2), Decimal(1), Decimal("1.2"), Decimal(240),
                 Decimal(10))
        for h, _, _ in MEASURED
    ]  # fmt: skip
    (curve,) = curves_build(
        load_hours(usage, lines), fleet_names={1: "enterprise"}, gpu_classes={"h100-sxm": "enterprise"}
    )
    return curve


def scenario_usage() -> ModelUsage:
    usage = ModelUsage()
    for h, rps, counts in MEASURED:
        requests = round(rps * 3600)
        usage.add(hour(h), ("vllm", 0, requests * TOKENS_PER_REQUEST, requests, BOUNDS, counts, Decimal(1)))
    return usage


def advisor_reads(curve: LoadCurve, rps_per_gpu: float) -> tuple[float, bool]:
    """The band (its lower edge) the advisor prices a load on, and whether it is beyond the measured range."""
    tokens_per_day = round(rps_per_gpu * curve.gpu_count * TOKENS_PER_REQUEST * 86_400)
    spec = ClassSpec(
        1, "chat", "llama-8b", ttft_target_ms=500, ttft_percentile=99, output_tokens_per_day=tokens_per_day
    )
    advice = advise(spec, [curve], AdvisorSettings(min_hours=1, min_band_hours=1))
    assert advice.all_enterprise is not None
    (placement,) = advice.all_enterprise.placements
    return placement.band_rps_per_gpu[0], placement.beyond_measured_range


def band_at(curve: LoadCurve, low: float) -> CurveBand:
    return next(band for band in curve.bands if band.low_rps_per_gpu == low)


@pytest.mark.parametrize(
    ("rps_per_gpu", "low", "beyond"),
    [
        (0.2, 0.25, False),  # below the lightest band: read on it
        (0.3, 0.25, False),  # the lightest band's highest measured load
        (0.4, 1.0, False),  # inside 0.25-0.5 but above its highest measured load (0.3): the heavier band
        (0.8, 1.0, False),  # a band never measured, between two measured ones: the heavier
        (1.5, 1.0, False),  # the heaviest band's highest measured load
        (1.7, 1.0, True),  # inside 1-2, above every measured load: the heaviest band, beyond
        (9.0, 1.0, True),
    ],
)
def test_scenarios_and_the_advisor_read_a_load_on_the_same_band(rps_per_gpu, low, beyond):
    curve = advisor_curve()
    bands = scenario_usage().bands()

    assert [(b.low_rps_per_gpu, b.max_rps_per_gpu) for b in bands] == [
        (b.low_rps_per_gpu, b.max_rps_per_gpu) for b in curve.bands
    ]
    assert advisor_reads(curve, rps_per_gpu) == (low, beyond)
    assert ttft_at_load(bands, rps_per_gpu) == (band_at(curve, low).ttft, beyond)
