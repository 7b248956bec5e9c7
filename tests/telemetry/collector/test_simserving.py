"""The simulated vLLM endpoint: tokens, TTFT and inter-token latency follow the load along the study's profiles."""

from __future__ import annotations

import itertools
import math

import pytest

from telemetry.collector.simprofiles import LLMS
from telemetry.collector.simserving import SIM_MODEL, VLLM_ITL_BUCKETS_S, VLLM_TTFT_BUCKETS_S, SimulatedVllmEndpoint
from telemetry.collector.simulated import SimulatedBackend, parse_simulate_spec

START = 1_764_374_400.0  # 2025-11-29T00:00:00Z


def endpoint(spec: str, llm: str = SIM_MODEL, **kwargs: object) -> SimulatedVllmEndpoint:
    backend = SimulatedBackend(parse_simulate_spec(spec), hostname="node-1", **kwargs)  # type: ignore[arg-type]
    return SimulatedVllmEndpoint(backend, hostname="node-1", started_at=START, llm=llm)


def p99_s(bounds: tuple[float, ...], before: tuple[int, ...], after: tuple[int, ...]) -> float:
    """The upper bound of the bucket holding the 99th percentile of the requests in between."""
    deltas = [b - a for a, b in zip(before, after, strict=True)]
    return next(bound for bound, count in zip(bounds, deltas, strict=False) if count >= 0.99 * deltas[-1])


@pytest.mark.parametrize(
    ("spec", "llm", "per_gpu"),
    [
        ("h100-pcie:4", "8b", 2692.8),  # the study's 32 QPS run
        ("rtx-4090:4", "8b", 1645.9),
        ("h100-pcie:8", "14b", 1506.5),  # its 16 QPS run
        ("rtx-4090:4", "14b", 624.0 / 2),  # its 4 QPS run on two cards
        ("h100-sxm:8", "8b", 2692.8 * 3.35 / 2.0),  # assumption: the PCIe figure x the bandwidth ratio
    ],
)
def test_generation_throughput_follows_the_profile_and_the_load(spec: str, llm: str, per_gpu: float) -> None:
    ep = endpoint(spec, llm=LLMS[llm])
    ts = START + 16 * 3600  # the daily peak
    tokens_per_s = (ep.generated_tokens(ts + 60) - ep.generated_tokens(ts)) / 60
    load = ep.backend.load_integral(ep.backend.gpus[0], ts, ts + 60) / 60

    assert tokens_per_s == pytest.approx(per_gpu * len(ep.backend.gpus) * load, rel=1e-9)
    assert 0.5 * per_gpu * len(ep.backend.gpus) < tokens_per_s < per_gpu * len(ep.backend.gpus)


def test_counters_are_cumulative_integers_and_the_histograms_are_consistent() -> None:
    ep = endpoint("h100-sxm:2")
    readings = [ep.read(START + 5 * i) for i in range(1, 200)]

    for earlier, later in itertools.pairwise(readings):
        assert later.generation_tokens >= earlier.generation_tokens  # type: ignore[operator]
        assert later.requests >= earlier.requests  # type: ignore[operator]
        assert all(b >= a for a, b in zip(earlier.ttft_bucket_counts, later.ttft_bucket_counts, strict=True))  # type: ignore[arg-type]
        assert all(b >= a for a, b in zip(earlier.itl_bucket_counts, later.itl_bucket_counts, strict=True))  # type: ignore[arg-type]
    last = readings[-1]
    counts = last.ttft_bucket_counts or ()
    assert list(counts) == sorted(counts) and counts[-1] == last.requests
    itl = last.itl_bucket_counts or ()
    assert list(itl) == sorted(itl) and itl[-1] == last.generation_tokens - last.requests  # type: ignore[operator]
    assert last.prompt_tokens == pytest.approx(last.generation_tokens, abs=1)  # ShareGPT: as many in as out
    assert last.endpoint.ttft_bucket_bounds_s == VLLM_TTFT_BUCKETS_S and last.endpoint.kind == "vllm"
    assert last.endpoint.itl_bucket_bounds_s == VLLM_ITL_BUCKETS_S
    assert last.endpoint.gpu_uuids == tuple(g.uuid for g in ep.backend.gpus)
    assert last.endpoint.epoch == str(float(START)) and last.endpoint.model == SIM_MODEL


@pytest.mark.parametrize(
    ("spec", "llm", "low", "high"),
    [
        ("h100-pcie:4", "8b", 0.04, 0.1),  # the study: 31-78 ms P99 at 16-32 QPS
        ("rtx-4090:4", "8b", 0.1, 0.5),  # 193-330 ms
        ("h100-pcie:8", "14b", 0.04, 0.08),  # 54 ms at 16 QPS
        ("rtx-4090:4", "14b", 0.5, 1.0),  # 639 ms at 4 QPS
    ],
)
def test_p99_ttft_under_peak_load_is_the_studys_for_the_gpu_and_llm(spec: str, llm: str, low: float, high: float):
    ep = endpoint(spec, llm=LLMS[llm])
    peak = START + 15 * 3600
    before = ep.read(peak).ttft_bucket_counts
    after = ep.read(peak + 600).ttft_bucket_counts

    assert ep.read(peak).endpoint.model == LLMS[llm]
    assert low <= p99_s(VLLM_TTFT_BUCKETS_S, before, after) <= high  # type: ignore[arg-type]


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


@pytest.mark.parametrize("spec", ["rtx-4090:2", "h100-sxm:2", "l4:2"])
def test_no_bucket_of_a_histogram_ever_counts_fewer_than_before(spec: str) -> None:
    # A real server's buckets only grow: a bucket read one lower would be a restart to the server's counter rule.
    ep = endpoint(spec)
    before: dict[str, list[int]] = {}
    for i in range(1, 3000):
        reading = ep.read(START + 5 * i)
        for name in ("ttft_bucket_counts", "itl_bucket_counts"):
            cumulative = getattr(reading, name)
            per_bucket = [b - a for a, b in zip((0, *cumulative[:-1]), cumulative, strict=True)]
            assert all(now >= then for then, now in zip(before.get(name, per_bucket), per_bucket, strict=True)), i
            before[name] = per_bucket
        assert reading.ttft_bucket_counts[-1] == reading.requests  # type: ignore[index]
        assert reading.itl_bucket_counts[-1] == reading.generation_tokens - reading.requests  # type: ignore[index,operator]
