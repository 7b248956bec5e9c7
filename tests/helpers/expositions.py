"""/metrics pages as vLLM, TGI and SGLang write them (names, labels, HELP/TYPE lines, +Inf buckets)."""

from __future__ import annotations

from telemetry.collector.simserving import VLLM_TTFT_BUCKETS_S

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
MODEL_14B = "Qwen/Qwen2.5-14B-Instruct"
# vllm/v1/metrics/loggers.py: buckets of vllm:inter_token_latency_seconds (and its deprecated alias
# vllm:time_per_output_token_seconds, exported beside it with the same observations)
VLLM_ITL_BUCKETS_S = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
# text-generation-inference router: 35 duration buckets, 0.0001 x 1.5^k
TGI_DURATION_BUCKETS_S = tuple(0.0001 * 1.5**k for k in range(1, 36))
# sglang/srt/metrics/collector.py: default buckets of sglang:time_to_first_token_seconds
SGLANG_TTFT_BUCKETS_S = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)


def histogram_lines(name: str, bounds: tuple[float, ...], total: int, labels: str = "", *, sum_s: float) -> list[str]:
    """Cumulative buckets: a share of ``total`` below each bound, all of it at +Inf (prometheus_client order)."""
    sep = "," if labels else ""
    lines = []
    for i, bound in enumerate(bounds):
        count = total * min(1.0, (i + 1) / (len(bounds) * 0.6))
        lines.append(f'{name}_bucket{{{labels}{sep}le="{bound}"}} {float(int(count))}')
    lines.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {float(total)}')
    braces = f"{{{labels}}}" if labels else ""
    lines += [f"{name}_count{braces} {float(total)}", f"{name}_sum{braces} {sum_s}"]
    return lines


def vllm(
    *,
    prompt: float = 1.234567e6,
    generation: float = 654321.0,
    start: float = 1.7643e9,
    model: str = MODEL,
    requests: tuple[int, int] = (700, 89),
    itl: tuple[int, float] | None = None,
    process: bool = True,
    ttft_sum_s: float = 41.2,
) -> str:
    """vLLM v1's page for one model; ``requests``: finished by stop and by length; ``itl``: the inter-token
    latency histogram's (count, sum), exported under both its names; ``process``: with the process's metrics
    (a page of several models has them once)."""
    labels = f'engine="0",model_name="{model}"'
    itl_lines = []
    if itl is not None:
        for name in ("vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds"):
            itl_lines += [
                f"# TYPE {name} histogram",
                *histogram_lines(name, VLLM_ITL_BUCKETS_S, itl[0], labels, sum_s=itl[1]),
            ]
    process_lines = [
        "# HELP python_gc_objects_collected_total Objects collected during gc",
        "# TYPE python_gc_objects_collected_total counter",
        'python_gc_objects_collected_total{generation="0"} 1234.0',
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
        "# TYPE process_start_time_seconds gauge",
        f"process_start_time_seconds {start}",
    ]
    return "\n".join(
        [
            *(process_lines if process else []),
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{labels}}} 12.0",
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{labels}}} {prompt:e}",
            f"vllm:prompt_tokens_created{{{labels}}} 1.7643e+09",
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{labels}}} {generation}",
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
            f'vllm:request_success_total{{engine="0",finished_reason="stop",model_name="{model}"}} {requests[0]}.0',
            f'vllm:request_success_total{{engine="0",finished_reason="length",model_name="{model}"}} {requests[1]}.0',
            f'vllm:request_success_total{{engine="0",finished_reason="abort",model_name="{model}"}} 0.0',
            "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
            "# TYPE vllm:time_to_first_token_seconds histogram",
            *histogram_lines(
                "vllm:time_to_first_token_seconds", VLLM_TTFT_BUCKETS_S, sum(requests), labels, sum_s=ttft_sum_s
            ),
            *itl_lines,
            "",
        ]
    )


def tgi(*, success: int = 990, input_sum: int = 123456) -> str:
    return "\n".join(
        [
            "# TYPE tgi_request_count counter",
            "tgi_request_count 1000",
            "# TYPE tgi_request_success counter",
            f"tgi_request_success {success}",
            "# TYPE tgi_queue_size gauge",
            "tgi_queue_size 3",
            "# TYPE tgi_request_input_length histogram",
            *histogram_lines("tgi_request_input_length", (40.96, 81.92, 163.84), success, sum_s=input_sum),
            "# TYPE tgi_request_generated_tokens histogram",
            *histogram_lines("tgi_request_generated_tokens", (20.48, 40.96, 81.92), success, sum_s=654321),
            "# TYPE tgi_request_queue_duration histogram",
            *histogram_lines("tgi_request_queue_duration", TGI_DURATION_BUCKETS_S, success, sum_s=12.5),
            "# TYPE tgi_batch_inference_duration histogram",
            *histogram_lines(
                "tgi_batch_inference_duration", TGI_DURATION_BUCKETS_S, 500, 'method="prefill"', sum_s=20.25
            ),
            *histogram_lines(
                "tgi_batch_inference_duration", TGI_DURATION_BUCKETS_S, 40000, 'method="decode"', sum_s=300.0
            ),
            "",
        ]
    )


def sglang(*, requests: float = 3000.0) -> str:
    labels = f'model_name="{MODEL}"'
    return "\n".join(
        [
            "# HELP sglang:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE sglang:prompt_tokens_total counter",
            f"sglang:prompt_tokens_total{{{labels}}} 8.128902e+06",
            "# HELP sglang:generation_tokens_total Number of generation tokens processed.",
            "# TYPE sglang:generation_tokens_total counter",
            f"sglang:generation_tokens_total{{{labels}}} 7.557572e+06",
            "# HELP sglang:num_requests_total Number of requests processed.",
            "# TYPE sglang:num_requests_total counter",
            f"sglang:num_requests_total{{{labels}}} {requests}",
            "# HELP sglang:token_usage The token usage.",
            "# TYPE sglang:token_usage gauge",
            f"sglang:token_usage{{{labels}}} 0.28",
            "# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.",
            "# TYPE sglang:time_to_first_token_seconds histogram",
            *histogram_lines(
                "sglang:time_to_first_token_seconds", SGLANG_TTFT_BUCKETS_S, int(requests), labels, sum_s=2351.9
            ),
            "",
        ]
    )


def vllm_two_models(*, start: float = 1.7643e9, scale: float = 1.0) -> str:
    """One vLLM process's page serving two models (an 8B and a 14B), each with its own counters and histograms.

    8B: 1,000,000 prompt and 500,000 output tokens, 800 requests (TTFTs summing 40 s), ITL 499,200 tokens
    summing 4,992 s; 14B: 300,000 prompt and 100,000 output tokens, 200 requests (TTFTs summing 30 s), ITL
    99,800 tokens summing 2,994 s; every counter times ``scale`` (rounded).
    """

    def n(value: float) -> int:
        return round(value * scale)

    return vllm(
        prompt=n(1e6), generation=n(500_000), start=start, requests=(n(700), n(100)), itl=(n(499_200), n(4992) * 1.0),
        ttft_sum_s=n(40) * 1.0,
    ) + vllm(
        prompt=n(300_000), generation=n(100_000), start=start, model=MODEL_14B, requests=(n(150), n(50)),
        itl=(n(99_800), n(2994) * 1.0), process=False, ttft_sum_s=n(30) * 1.0,
    )  # fmt: skip
