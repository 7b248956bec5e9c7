"""The simulated vLLM endpoint: tokens and TTFT follow the simulated GPUs' load."""

from __future__ import annotations

import itertools
import math

import pytest

from telemetry.collector.simserving import VLLM_TTFT_BUCKETS_S, SimulatedVllmEndpoint
from telemetry.collector.simulated import MODELS, SimulatedBackend, parse_simulate_spec

START = 1_764_374_400.0  # 2025-11-29T00:00:00Z


def endpoint(spec: str, **kwargs: object) -> SimulatedVllmEndpoint:
    backend = SimulatedBackend(parse_simulate_spec(spec), hostname="node-1", **kwargs)  # type: ignore[arg-type]
    return SimulatedVllmEndpoint(backend, hostname="node-1", started_at=START)


def p99_s(bounds: tuple[float, ...], before: tuple[int, ...], after: tuple[int, ...]) -> float:
    """The upper bound of the bucket holding the 99th percentile of the requests in between."""
    deltas = [b - a for a, b in zip(before, after, strict=True)]
    return next(bound for bound, count in zip(bounds, deltas, strict=False) if count >= 0.99 * deltas[-1])


@pytest.mark.parametrize(("spec", "per_gpu"), [("h100-sxm:8", 6000), ("h100-pcie:4", 5400), ("rtx-4090:4", 3300)])
def test_generation_throughput_follows_the_model_and_the_load(spec: str, per_gpu: float) -> None:
    ep = endpoint(spec)
    ts = START + 16 * 3600  # the daily peak
    tokens_per_s = (ep.generated_tokens(ts + 60) - ep.generated_tokens(ts)) / 60
    load = sum(ep.backend.load_integral(g, math.floor(ts), ts + 60) for g in ep.backend.gpus) / 60

    assert tokens_per_s == pytest.approx(per_gpu * load, rel=1e-9)
    assert 0.5 * per_gpu * len(ep.backend.gpus) < tokens_per_s < per_gpu * len(ep.backend.gpus)


def test_counters_are_cumulative_integers_and_the_histogram_is_consistent() -> None:
    ep = endpoint("h100-sxm:2")
    readings = [ep.read(START + 5 * i) for i in range(1, 200)]

    for earlier, later in itertools.pairwise(readings):
        assert later.generation_tokens >= earlier.generation_tokens  # type: ignore[operator]
        assert later.requests >= earlier.requests  # type: ignore[operator]
        assert all(b >= a for a, b in zip(earlier.ttft_bucket_counts, later.ttft_bucket_counts, strict=True))  # type: ignore[arg-type]
    last = readings[-1]
    counts = last.ttft_bucket_counts or ()
    assert list(counts) == sorted(counts) and counts[-1] == last.requests
    assert last.prompt_tokens == pytest.approx(2 * last.generation_tokens, abs=2)  # type: ignore[operator]
    assert last.endpoint.ttft_bucket_bounds_s == VLLM_TTFT_BUCKETS_S and last.endpoint.kind == "vllm"
    assert last.endpoint.gpu_uuids == tuple(g.uuid for g in ep.backend.gpus)
    assert last.endpoint.epoch == str(float(START))


@pytest.mark.parametrize(
    ("spec", "low", "high"), [("h100-sxm:8", 0.04, 0.08), ("h100-pcie:4", 0.04, 0.08), ("rtx-4090:4", 0.1, 0.5)]
)
def test_p99_ttft_under_peak_load_is_plausible_for_the_model(spec: str, low: float, high: float) -> None:
    ep = endpoint(spec)
    peak = START + 15 * 3600
    before = ep.read(peak).ttft_bucket_counts
    after = ep.read(peak + 600).ttft_bucket_counts

    assert low <= p99_s(VLLM_TTFT_BUCKETS_S, before, after) <= high  # type: ignore[arg-type]
    assert MODELS["h100-sxm"].ttft_p99_s[1] <= 0.08 and MODELS["rtx-4090"].ttft_p99_s[0] >= 0.11


def test_a_driver_reload_restarts_the_server_counters_with_a_new_epoch() -> None:
    ep = endpoint("l4:1", resets_every_s=3600)
    reload_at = ep.backend.driver_loaded_at(START + 7200)
    before = ep.read(reload_at - 5)
    after = ep.read(reload_at + 5)

    assert after.endpoint.epoch == str(float(reload_at)) != before.endpoint.epoch
    assert after.requests < before.requests  # type: ignore[operator]
    assert (after.ttft_bucket_counts or ())[-1] == after.requests


def test_a_scheduled_restart_starts_the_counters_again_under_a_new_epoch() -> None:
    backend = SimulatedBackend(parse_simulate_spec("l4:1"), hostname="node-1")
    ep = SimulatedVllmEndpoint(backend, hostname="node-1", started_at=START, restarts_every_s=2700)

    before, after = ep.read(START + 2695), ep.read(START + 2705)

    assert before.endpoint.epoch == str(START) and after.endpoint.epoch == str(START + 2700)
    assert after.generation_tokens == math.floor(ep.generated_tokens(START + 2705)) < before.generation_tokens
    assert ep.process_start(START + 2 * 2700 + 1) == START + 5400
