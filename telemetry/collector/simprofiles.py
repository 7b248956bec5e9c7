"""What the simulator's GPUs do when they serve an LLM: published measurements, each with its source.

Pure data and two small curves (no I/O): :mod:`.simulated` draws power from
:class:`PowerProfile`, :mod:`.simserving` draws tokens, TTFT and inter-token
latency from :class:`ServingProfile`.

Sources
-------
``IOG``: the study this product follows, A. Ribeiro de Almeida, "Idle Consumer GPUs as a
Complement to Enterprise Hardware for LLM Inference", AIBC 2025 (doi 10.1145/3775043.3775047),
raw results in github.com/IOG-Foundation/llm-inference-benchmarks, ``results/`` (vLLM 0.8.5,
``benchmark_serving.py``, 200 ShareGPT prompts, Poisson arrivals at 1, 4, 8, 16, 32 QPS; the
first run of each file). Figures below are that JSON's ``output_throughput`` (output tokens
only: the README's "Throughput (tokens/s)" column is ``total_token_throughput``, input plus
output, about twice as much), ``median_ttft_ms``/``p99_ttft_ms`` and ``median_itl_ms``/``p99_itl_ms``.

``NVIDIA``: board power limits from NVIDIA's product pages: H100 SXM 700 W, H100 PCIe 350 W,
GeForce RTX 4090 450 W (total graphics power).

``MLE``: the ML.ENERGY Leaderboard v3 (github.com/ml-energy/leaderboard,
``public/data/models/meta-llama__Llama-3.1-8B-Instruct__lm-arena-chat.json``, H100 SXM, one
GPU, vLLM): average board power against output throughput as the batch grows from 8 to 768:
486 W at 11 % of the peak throughput (1,070 of 9,806 tokens/s), 560 W at 35 %, 610 W at 52 %,
669 W at 72 %, 688 W at 100 %. Power is far from linear in load: it jumps as soon as anything
is served, then flattens. ``idle + (limit - idle) x load ** 0.2`` fits those points within
11 W RMS (Qwen3-14B on the same page rises more evenly, 443 W at 11 % to 645 W at 100 %).

Not found, so labelled ``assumption``:
- Power while serving at full load. The study measured none it published (``monitor_gpu.sh``
  logs ``nvidia-smi`` power, but no log is in ``results/``); its Table 3 assumes every GPU at
  its board limit. We do the same: full load draws the board limit (ML.ENERGY measured 688 W,
  98 % of the limit, on the H100 SXM at full load). (The study wrote 700 W for
  the H100 PCIe, the SXM's limit; the PCIe's is 350 W, used here. With 350 W its table gives
  6.2x, not 3.1x, in J per token between one H100 PCIe and two RTX 4090s on the 14B model.)
- The shape of power against load on GPUs other than the H100 SXM: the H100 SXM's fitted
  exponent (0.2: half load draws 87 % of the span) applies to every GPU model. ML.ENERGY has
  no RTX 4090 row, and the study published no power log.
- Idle power (a GPU holding a loaded model, no request): typical ``nvidia-smi`` readings,
  not from either source; for the H100s and the RTX 4090 the hardware catalog's
  (``accounting/hardware/catalog.json``, an engineering estimate) so both agree.
- The H100 SXM on these models: the study ran PCIe cards only. We scale the PCIe throughput by
  the memory-bandwidth ratio (3.35 / 2.0 TB/s, decode is memory-bound) and keep its latencies.
- Other GPU models (A100, L40S, L4, RTX 3090): demo figures for the 8B model, uncited; their
  14B throughput is the 8B one times the H100 PCIe's measured 14B/8B ratio (0.56).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
QWEN_14B = "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"
# Short names for the collector's --simulate-llm option.
LLMS = {"8b": LLAMA_8B, "14b": QWEN_14B}

POWER_EXPONENT = 0.2  # fitted to MLE (H100 SXM, Llama 3.1 8B); an assumption for other GPUs


@dataclass(frozen=True)
class PowerProfile:
    """Board power of one GPU against its load (0..1): ``idle_w`` at 0, ``full_w`` at 1, concave between."""

    idle_w: float
    full_w: float
    exponent: float = POWER_EXPONENT
    source: str = ""

    def power_w(self, load: float) -> float:
        load = min(1.0, max(0.0, load))
        return self.idle_w + (self.full_w - self.idle_w) * load**self.exponent


@dataclass(frozen=True)
class LoadPoint:
    """One measured operating point: load is output tokens/s as a fraction of the profile's full load."""

    load: float
    ttft_p50_s: float
    ttft_p99_s: float
    itl_p50_s: float
    itl_p99_s: float


@dataclass(frozen=True)
class Quantiles:
    p50_s: float
    p99_s: float


@dataclass(frozen=True)
class ServingProfile:
    """One LLM on one GPU model under vLLM: output tokens/s per GPU at full load, latencies along the load."""

    gpu: str
    llm: str
    output_tokens_per_s_per_gpu: float
    points: tuple[LoadPoint, ...]  # by load; held flat below the first and above the last
    gpus_per_replica: int = 1  # tensor parallelism
    source: str = ""

    def ttft_at(self, load: float) -> Quantiles:
        p50, p99 = self._interpolate(load, lambda p: (p.ttft_p50_s, p.ttft_p99_s))
        return Quantiles(p50, p99)

    def itl_at(self, load: float) -> Quantiles:
        p50, p99 = self._interpolate(load, lambda p: (p.itl_p50_s, p.itl_p99_s))
        return Quantiles(p50, p99)

    def _interpolate(self, load: float, pick: Callable[[LoadPoint], tuple[float, float]]) -> tuple[float, float]:
        """Linear between the measured points around ``load``."""
        values = [pick(p) for p in self.points]
        loads = [p.load for p in self.points]
        i = bisect.bisect_left(loads, load)
        if i == 0:
            return values[0]
        if i == len(loads):
            return values[-1]
        w = (load - loads[i - 1]) / (loads[i] - loads[i - 1])
        low, high = values[i - 1], values[i]
        return (low[0] + w * (high[0] - low[0]), low[1] + w * (high[1] - low[1]))


_IOG = "IOG results/vllm_200prompts{{1,4,8,16,32}}qps_{model}_sharegpt_{gpus}.json"


def _measured(
    gpu: str,
    llm: str,
    run: tuple[str, str],
    qps: int,
    *rows: tuple[float, float, float, float, float],
    gpus_per_replica: int = 1,
) -> ServingProfile:
    """A profile from IOG's results for ``run`` (model, GPUs): rows of (output tokens/s per GPU, TTFT p50 ms,
    TTFT p99 ms, ITL p50 ms, ITL p99 ms) by load, the last at full load (``qps``)."""
    full_tps = rows[-1][0]
    points = tuple(LoadPoint(tps / full_tps, a / 1e3, b / 1e3, c / 1e3, d / 1e3) for tps, a, b, c, d in rows)
    source = _IOG.format(model=run[0], gpus=run[1]) + f"; full load: {qps} QPS"
    return ServingProfile(gpu, llm, full_tps, points, gpus_per_replica, source)


POWER: dict[str, PowerProfile] = {
    "h100-sxm": PowerProfile(70, 700, source="NVIDIA (limit); idle: assumption"),
    "h100-pcie": PowerProfile(50, 350, source="NVIDIA (limit); idle: assumption"),
    "a100-sxm": PowerProfile(55, 400, source="NVIDIA (limit); idle: assumption"),
    "a100-pcie": PowerProfile(45, 300, source="NVIDIA (limit); idle: assumption"),
    "l40s": PowerProfile(35, 350, source="NVIDIA (limit); idle: assumption"),
    "l4": PowerProfile(16, 72, source="NVIDIA (limit); idle: assumption"),
    "rtx-4090": PowerProfile(25, 450, source="NVIDIA (limit); idle: assumption"),
    "rtx-3090": PowerProfile(25, 350, source="NVIDIA (limit); idle: assumption"),
}

# Meta-Llama-3-8B-Instruct (the 8B the study ran; Llama 3.1 8B has the same architecture and size).
_H100_PCIE_8B = _measured(
    "h100-pcie", LLAMA_8B, ("Meta-Llama-3-8B-Instruct", "1xNVIDIA-H100-PCIe"), 32,
    (212.1, 20.4, 27.4, 10.6, 11.1), (773.3, 21.6, 27.9, 10.9, 11.8), (1329.2, 22.7, 30.2, 11.8, 12.6),
    (2052.4, 24.9, 31.1, 12.1, 13.8), (2692.8, 37.7, 77.5, 14.0, 38.1),
)  # fmt: skip
_RTX4090_8B = _measured(
    "rtx-4090", LLAMA_8B, ("Meta-Llama-3-8B-Instruct", "1xNVIDIA-GeForce-RTX-4090"), 32,
    (210.1, 43.5, 110.7, 19.2, 24.1), (685.4, 50.0, 132.1, 21.3, 65.5), (1063.1, 61.0, 180.3, 24.1, 78.1),
    (1407.7, 74.4, 193.1, 26.7, 93.1), (1645.9, 162.9, 330.5, 28.4, 148.1),
)  # fmt: skip
# DeepSeek-R1-Distill-Qwen-14B (the study's case study). Full load is the study's chosen
# operating point: 16 QPS on one H100 PCIe (32 QPS adds 3 % throughput and 3.5x the P99 TTFT),
# 4 QPS on two RTX 4090s in tensor parallel (beyond it their queue grows: 1.9 s P99 at 16 QPS).
_H100_PCIE_14B = _measured(
    "h100-pcie", QWEN_14B, ("DeepSeek-R1-Distill-Qwen-14B", "1xNVIDIA-H100-PCIe"), 16,
    (217.0, 35.0, 45.5, 19.6, 20.2), (706.4, 36.3, 46.8, 20.1, 21.1), (1121.2, 38.2, 49.1, 20.8, 22.2),
    (1506.5, 41.9, 54.4, 21.9, 24.6),
)  # fmt: skip
# Per GPU: the pair's 624.0 output tokens/s over two cards. The study's TTFT at 1 QPS (1.03 s
# P99) is higher than at 4 QPS (0.64 s): kept as measured, linear between.
_RTX4090_14B = _measured(
    "rtx-4090", QWEN_14B, ("DeepSeek-R1-Distill-Qwen-14B", "2xNVIDIA-GeForce-RTX-4090"), 4,
    (107.7, 300.7, 1031.9, 20.0, 124.5), (312.0, 207.7, 638.7, 38.9, 288.3), gpus_per_replica=2,
)  # fmt: skip

SXM_OVER_PCIE = 3.35 / 2.0  # HBM3 bandwidth, NVIDIA datasheets; assumption: decode scales with it
H100_PCIE_14B_OVER_8B = 1506.5 / 2692.8  # measured (IOG), used for the uncalibrated GPUs' 14B

# Uncalibrated GPUs: (output tokens/s per GPU on the 8B at full load, TTFT P99 s at no load, at full load).
_UNCALIBRATED = {
    "a100-sxm": (1800.0, 0.050, 0.120),
    "a100-pcie": (1550.0, 0.055, 0.130),
    "l40s": (1300.0, 0.070, 0.180),
    "l4": (400.0, 0.120, 0.400),
    "rtx-3090": (1100.0, 0.150, 0.450),
}


def _scaled(base: ServingProfile, gpu: str, throughput: float, source: str) -> ServingProfile:
    return ServingProfile(gpu, base.llm, base.output_tokens_per_s_per_gpu * throughput, base.points, 1, source)


def _uncalibrated(gpu: str, llm: str, tps_8b: float, p99_low: float, p99_high: float) -> ServingProfile:
    """Two points, P50 at a third of P99 and ITL from the throughput (``assumption``)."""
    tps = tps_8b * (H100_PCIE_14B_OVER_8B if llm == QWEN_14B else 1.0)
    slow = 1.0 if llm == LLAMA_8B else 1.5
    itl = 32 / tps * slow  # ~32 concurrent sequences at full load
    low = LoadPoint(0.1, p99_low * slow / 3, p99_low * slow, itl * 0.7, itl * 1.2)
    high = LoadPoint(1.0, p99_high * slow / 3, p99_high * slow, itl, itl * 3)
    return ServingProfile(gpu, llm, tps, (low, high), 1, "assumption: uncited demo figures")


SERVING: dict[tuple[str, str], ServingProfile] = {
    ("h100-pcie", LLAMA_8B): _H100_PCIE_8B,
    ("rtx-4090", LLAMA_8B): _RTX4090_8B,
    ("h100-pcie", QWEN_14B): _H100_PCIE_14B,
    ("rtx-4090", QWEN_14B): _RTX4090_14B,
    ("h100-sxm", LLAMA_8B): _scaled(_H100_PCIE_8B, "h100-sxm", SXM_OVER_PCIE, "assumption: H100 PCIe x bandwidth"),
    ("h100-sxm", QWEN_14B): _scaled(_H100_PCIE_14B, "h100-sxm", SXM_OVER_PCIE, "assumption: H100 PCIe x bandwidth"),
    **{
        (gpu, llm): _uncalibrated(gpu, llm, *figures) for gpu, figures in _UNCALIBRATED.items() for llm in LLMS.values()
    },
}


def serving_profile(gpu: str, llm: str) -> ServingProfile:
    try:
        return SERVING[(gpu, llm)]
    except KeyError:
        raise ValueError(f"no serving profile for {llm!r} on {gpu!r}; known LLMs: {', '.join(LLMS.values())}") from None
