"""Scraping vLLM, TGI and SGLang /metrics served by a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import logging

import pytest

from telemetry.collector.backend import GpuIdentity, ServingReading
from telemetry.collector.epochs import EpochBook
from telemetry.collector.serving import PrometheusEndpoint, ServingTarget, parse_serving_target, resolve_gpus
from telemetry.collector.simserving import VLLM_TTFT_BUCKETS_S
from tests.helpers.expositions import (
    MODEL,
    MODEL_14B,
    SGLANG_TTFT_BUCKETS_S,
    TGI_DURATION_BUCKETS_S,
    VLLM_ITL_BUCKETS_S,
    histogram_lines,
    sglang,
    tgi,
    vllm,
    vllm_two_models,
)
from tests.helpers.stub_server import StubServer

TS = 1_764_400_000.0
GPUS = ("GPU-aaa", "GPU-bbb")


def serve_text(server: StubServer, text: str) -> None:
    server.default = lambda _request: (200, {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}, text.encode())


def one(readings: list[ServingReading]) -> ServingReading:
    """The reading of a server serving one model."""
    (reading,) = readings
    return reading


def scrape(server: StubServer, book: EpochBook | None = None) -> PrometheusEndpoint:
    return PrometheusEndpoint(f"{server.url}/metrics", GPUS, book=book or EpochBook(), timeout_s=2)


def test_vllm_counters_histogram_and_start_time_epoch(stub_server: StubServer) -> None:
    serve_text(stub_server, vllm())

    reading = one(scrape(stub_server).read(TS))

    assert reading is not None
    assert (reading.prompt_tokens, reading.generation_tokens, reading.requests) == (1_234_567, 654_321, 789)
    ep = reading.endpoint
    assert (ep.kind, ep.model, ep.gpu_uuids, ep.url) == ("vllm", MODEL, GPUS, f"{stub_server.url}/metrics")
    assert ep.ttft_bucket_bounds_s == VLLM_TTFT_BUCKETS_S
    assert reading.ttft_bucket_counts is not None and reading.ttft_bucket_counts[-1] == 789
    assert len(reading.ttft_bucket_counts) == len(VLLM_TTFT_BUCKETS_S) + 1
    assert reading.ttft_sum_s == 41.2 and reading.ts == TS
    assert ep.epoch == str(1.7643e9)
    assert stub_server.requests[0].method == "GET" and stub_server.requests[0].path == "/metrics"


def test_vllm_restart_is_a_new_epoch_from_its_start_time(stub_server: StubServer) -> None:
    endpoint = scrape(stub_server)
    serve_text(stub_server, vllm(start=1.7643e9))
    before = one(endpoint.read(TS))
    serve_text(stub_server, vllm(start=1.7644e9, prompt=10, generation=5))

    after = one(endpoint.read(TS + 5))

    assert before is not None and after is not None
    assert after.endpoint.epoch == str(1.7644e9) != before.endpoint.epoch
    assert after.prompt_tokens == 10


def test_tgi_mapping_and_ttft_from_queue_and_prefill(stub_server: StubServer) -> None:
    serve_text(stub_server, tgi())

    reading = one(scrape(stub_server).read(TS))

    assert reading is not None
    assert (reading.prompt_tokens, reading.generation_tokens, reading.requests) == (123_456, 654_321, 990)
    assert reading.endpoint.kind == "tgi" and reading.endpoint.model == ""
    assert reading.endpoint.ttft_bucket_bounds_s == pytest.approx(TGI_DURATION_BUCKETS_S)
    assert reading.ttft_bucket_counts is not None and reading.ttft_bucket_counts[-1] == 990
    assert reading.ttft_sum_s == pytest.approx(12.5 + 20.25)  # queue + prefill (not decode)


def test_tgi_without_start_time_is_first_seen_and_renewed_on_a_reset(stub_server: StubServer, tmp_path) -> None:
    book = EpochBook(tmp_path / "epochs.json")
    serve_text(stub_server, tgi(success=990))
    first = one(scrape(stub_server, book).read(TS))
    book.save()
    serve_text(stub_server, tgi(success=995))
    same = one(scrape(stub_server, EpochBook(tmp_path / "epochs.json")).read(TS + 60))  # collector restarted
    serve_text(stub_server, tgi(success=3, input_sum=300))

    restarted = one(scrape(stub_server, book).read(TS + 120))

    assert first is not None and same is not None and restarted is not None
    assert first.endpoint.epoch == f"seen@{int(TS)}" == same.endpoint.epoch
    assert restarted.endpoint.epoch == f"seen@{int(TS + 120)}"


def test_sglang_mapping(stub_server: StubServer) -> None:
    serve_text(stub_server, sglang(requests=3000.0))

    reading = one(scrape(stub_server).read(TS))

    assert reading is not None
    assert (reading.prompt_tokens, reading.generation_tokens, reading.requests) == (8_128_902, 7_557_572, 3000)
    assert reading.endpoint.kind == "sglang" and reading.endpoint.model == MODEL
    assert reading.endpoint.ttft_bucket_bounds_s == tuple(float(b) for b in SGLANG_TTFT_BUCKETS_S)
    assert reading.ttft_sum_s == 2351.9 and reading.endpoint.epoch.startswith("seen@")


def test_an_unreachable_endpoint_is_none_warned_once_then_recovers(
    stub_server: StubServer, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = scrape(stub_server)
    stub_server.default = lambda _request: (503, {}, b"loading model")

    with caplog.at_level(logging.INFO):
        assert endpoint.read(TS) == []
        assert endpoint.read(TS + 5) == []
        serve_text(stub_server, vllm())
        assert endpoint.read(TS + 10) != []

    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 1
    assert any("readable again" in r.message for r in caplog.records)


def test_a_page_without_inference_metrics_is_none(stub_server: StubServer) -> None:
    serve_text(stub_server, "# TYPE up gauge\nup 1\n")

    assert scrape(stub_server).read(TS) == []


@pytest.mark.parametrize(
    ("spec", "url", "gpus"),
    [
        ("http://127.0.0.1:8000/metrics", "http://127.0.0.1:8000/metrics", ()),
        ("http://127.0.0.1:8000/metrics@0,1", "http://127.0.0.1:8000/metrics", ("0", "1")),
        ("https://h/metrics@GPU-0b6c-11aa,3", "https://h/metrics", ("GPU-0b6c-11aa", "3")),
        ("http://user@host:9000/metrics", "http://user@host:9000/metrics", ()),
    ],
)
def test_serving_targets(spec: str, url: str, gpus: tuple[str, ...]) -> None:
    assert parse_serving_target(spec) == ServingTarget(url, gpus)


def test_serving_target_needs_http() -> None:
    with pytest.raises(ValueError, match="http"):
        parse_serving_target("file:///etc/passwd@0")


def test_gpu_indexes_resolve_to_uuids_and_unknown_ones_fail_loudly() -> None:
    inventory = [GpuIdentity(f"GPU-{i}", i, "NVIDIA L4", True, "e") for i in range(3)]

    assert resolve_gpus(ServingTarget("http://h/m", ("2", "0")), inventory) == ("GPU-2", "GPU-0")
    assert resolve_gpus(ServingTarget("http://h/m", ()), inventory) == ("GPU-0", "GPU-1", "GPU-2")
    with pytest.raises(ValueError, match="no GPU 7"):
        resolve_gpus(ServingTarget("http://h/m", ("7",)), inventory)


def test_a_fresh_server_reports_nothing_until_its_first_request(stub_server: StubServer) -> None:
    serve_text(stub_server, "# TYPE tgi_queue_size gauge\ntgi_queue_size 0\n# TYPE tgi_batch_current_size gauge\n")
    endpoint = scrape(stub_server)

    assert endpoint.read(TS) == []
    serve_text(stub_server, tgi())
    assert endpoint.read(TS + 5) != []


def test_ttft_bounds_stay_fixed_within_an_epoch(stub_server: StubServer) -> None:
    endpoint = scrape(stub_server)
    serve_text(stub_server, vllm())
    first = one(endpoint.read(TS))
    without_histogram = "\n".join(line for line in vllm().splitlines() if "time_to_first_token" not in line)
    serve_text(stub_server, without_histogram)

    second = one(endpoint.read(TS + 5))

    assert first is not None and second is not None
    assert second.endpoint == first.endpoint  # same bounds: the server accepts both in one epoch
    assert second.ttft_bucket_counts is None and second.ttft_sum_s is None and second.requests == 789


def test_a_gpu_uuid_not_on_this_host_fails_loudly() -> None:
    inventory = [GpuIdentity("GPU-0", 0, "NVIDIA L4", True, "e")]

    with pytest.raises(ValueError, match="GPU-elsewhere"):
        resolve_gpus(ServingTarget("http://h/m", ("GPU-elsewhere",)), inventory)


def test_a_gpu_named_twice_fails_loudly() -> None:
    # by its index and by its UUID: the server would refuse every batch of the endpoint
    inventory = [GpuIdentity(f"GPU-{i}", i, "NVIDIA L4", True, "e") for i in range(2)]

    with pytest.raises(ValueError, match="names GPU GPU-0 more than once"):
        resolve_gpus(ServingTarget("http://h/m", ("0", "1", "GPU-0")), inventory)


def test_prefix_cache_hits_are_read_where_the_server_counts_them(stub_server: StubServer) -> None:
    # vLLM v1 counts prefix-cache hits in tokens (vllm:prefix_cache_hits, exposed with _total), per engine.
    vllm_text = vllm() + (
        "# TYPE vllm:prefix_cache_hits counter\n"
        f'vllm:prefix_cache_hits_total{{engine="0",model_name="{MODEL}"}} 400000.0\n'
        f'vllm:prefix_cache_hits_total{{engine="1",model_name="{MODEL}"}} 17000.0\n'
        "# TYPE vllm:prefix_cache_queries counter\n"
        f'vllm:prefix_cache_queries_total{{engine="0",model_name="{MODEL}"}} 1234567.0\n'
    )
    serve_text(stub_server, vllm_text)
    assert one(scrape(stub_server).read(TS)).cached_prompt_tokens == 417_000

    # SGLang counts cached prompt tokens by cache source: summed.
    sglang_text = sglang() + (
        "# TYPE sglang:cached_tokens_total counter\n"
        f'sglang:cached_tokens_total{{model_name="{MODEL}",cache_source="device"}} 900.0\n'
        f'sglang:cached_tokens_total{{model_name="{MODEL}",cache_source="host"}} 100.0\n'
    )
    serve_text(stub_server, sglang_text)
    assert one(scrape(stub_server).read(TS)).cached_prompt_tokens == 1000


def test_servers_that_do_not_count_prefix_cache_hits_send_null(stub_server: StubServer) -> None:
    for text in (vllm(), tgi()):
        serve_text(stub_server, text)
        assert one(scrape(stub_server).read(TS)).cached_prompt_tokens is None


def test_a_server_of_two_models_gives_one_reading_per_model_with_its_own_counters(stub_server: StubServer) -> None:
    serve_text(stub_server, vllm_two_models())

    large, small = sorted(scrape(stub_server).read(TS), key=lambda r: r.endpoint.model)

    assert (small.endpoint.model, large.endpoint.model) == (MODEL, MODEL_14B)
    assert (small.prompt_tokens, small.generation_tokens, small.requests) == (1_000_000, 500_000, 800)
    assert (large.prompt_tokens, large.generation_tokens, large.requests) == (300_000, 100_000, 200)
    assert small.ttft_bucket_counts and large.ttft_bucket_counts and small.itl_bucket_counts and large.itl_bucket_counts
    assert small.ttft_bucket_counts[-1] == 800 and large.ttft_bucket_counts[-1] == 200
    # Inter-token latency: the model's own histogram, once (not added to its deprecated alias's).
    assert small.endpoint.itl_bucket_bounds_s == VLLM_ITL_BUCKETS_S == large.endpoint.itl_bucket_bounds_s
    assert (small.itl_bucket_counts[-1], small.itl_sum_s) == (499_200, 4992.0)
    assert (large.itl_bucket_counts[-1], large.itl_sum_s) == (99_800, 2994.0)
    assert len(small.itl_bucket_counts) == len(VLLM_ITL_BUCKETS_S) + 1
    # One process: both models' epochs are its start time.
    assert small.endpoint.epoch == large.endpoint.epoch == str(1.7643e9)


def test_servers_without_an_inter_token_latency_histogram_send_null(stub_server: StubServer) -> None:
    for text in (vllm(), tgi()):
        serve_text(stub_server, text)
        reading = one(scrape(stub_server).read(TS))
        assert reading.endpoint.itl_bucket_bounds_s == () and reading.itl_bucket_counts is reading.itl_sum_s is None


def test_sglang_inter_token_latency_is_read_per_model(stub_server: StubServer) -> None:
    # sglang/srt/metrics/collector.py: buckets of sglang:inter_token_latency_seconds (first five of them here)
    bounds = (0.002, 0.004, 0.006, 0.008, 0.01)
    labels = f'model_name="{MODEL}"'
    itl = "\n".join(histogram_lines("sglang:inter_token_latency_seconds", bounds, 6000, labels, sum_s=30.5))
    serve_text(stub_server, sglang() + "# TYPE sglang:inter_token_latency_seconds histogram\n" + itl + "\n")

    reading = one(scrape(stub_server).read(TS))

    assert reading.endpoint.itl_bucket_bounds_s == bounds
    # histogram_lines: floor(6000 x (i + 1) / 3) below bound i, capped at the total
    assert reading.itl_bucket_counts == (2000, 4000, 6000, 6000, 6000, 6000) and reading.itl_sum_s == 30.5
