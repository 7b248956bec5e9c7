"""A simulated vLLM endpoint on a simulated node: tokens and TTFT that follow the GPUs' load.

Throughput: each GPU generates ``model.generation_tokens_per_s`` at full load
(an 8B FP16 model: ~6k tokens/s on an H100 SXM, ~3.3k on an RTX 4090) times
its load, so the generation-token counter is the exact integral of the GPUs'
load since the server started (O(1), see :mod:`.simulated`). Prompts are
``PROMPT_TOKENS_PER_GENERATED`` times as long as answers, which average
``GENERATED_TOKENS_PER_REQUEST`` tokens.

TTFT: log-normal, its P99 rising with load from the model's no-load to its
full-load value (H100 SXM 35→75 ms, RTX 4090 110→330 ms); the slowest GPU
model of the node sets it. Bucket counts use vLLM's real default bounds.

The server "starts" with the simulation (or when the simulated driver
reloads, or every ``restarts_every_s`` after its first start), so its counters
start at zero and its epoch is that start time, as
``process_start_time_seconds`` would give on a real vLLM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .backend import EndpointIdentity, ServingReading
from .simulated import SimulatedBackend

# vllm/v1/metrics/loggers.py: buckets of vllm:time_to_first_token_seconds
VLLM_TTFT_BUCKETS_S = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
SIM_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
PROMPT_TOKENS_PER_GENERATED = 2.0
GENERATED_TOKENS_PER_REQUEST = 256.0
TTFT_SIGMA = 0.45  # log-normal shape: P99 is 2.85 x the median
Z_99 = 2.326


@dataclass
class _Histogram:
    epoch: str = ""
    requests: int = 0
    counts: list[float] = field(default_factory=list)
    sum_s: float = 0.0


class SimulatedVllmEndpoint:
    def __init__(
        self, backend: SimulatedBackend, *, hostname: str, started_at: float, restarts_every_s: int | None = None
    ) -> None:
        self.backend = backend
        self.url = f"sim://{hostname}/vllm/metrics"
        self._started_at = math.floor(started_at)
        self._restarts_every_s = restarts_every_s
        self._p99_s = max((gpu.model.ttft_p99_s for gpu in backend.gpus), key=lambda p: p[1])
        self._ttft = _Histogram()

    def process_start(self, ts: float) -> int:
        """When the simulated server last started: with the simulation, its latest restart, or driver reload."""
        started = self._started_at
        if self._restarts_every_s and ts >= started:
            started += math.floor((ts - started) / self._restarts_every_s) * self._restarts_every_s
        return max(started, self.backend.driver_loaded_at(ts))

    def generated_tokens(self, ts: float) -> float:
        start = self.process_start(ts)
        return sum(
            gpu.model.generation_tokens_per_s * self.backend.load_integral(gpu, start, ts) for gpu in self.backend.gpus
        )

    def read(self, ts: float) -> ServingReading:
        generated = self.generated_tokens(ts)
        identity = self._identity(ts)
        requests = math.floor(generated / GENERATED_TOKENS_PER_REQUEST)
        counts, sum_s = self._observe(identity.epoch, requests, self._mean_load(ts))
        return ServingReading(
            identity, ts, math.floor(PROMPT_TOKENS_PER_GENERATED * generated), math.floor(generated),
            requests, counts, sum_s,
        )  # fmt: skip

    def _identity(self, ts: float) -> EndpointIdentity:
        uuids = tuple(gpu.uuid for gpu in self.backend.gpus)
        epoch = f"{float(self.process_start(ts))}"
        return EndpointIdentity(self.url, "vllm", SIM_MODEL, uuids, epoch, VLLM_TTFT_BUCKETS_S)

    def _mean_load(self, ts: float) -> float:
        return sum(self.backend.load_at(gpu, ts) for gpu in self.backend.gpus) / len(self.backend.gpus)

    def _observe(self, epoch: str, requests: int, load: float) -> tuple[tuple[int, ...], float]:
        """Add the requests finished since the last read to the cumulative TTFT histogram."""
        h = self._ttft
        if h.epoch != epoch:
            self._ttft = h = _Histogram(epoch, 0, [0.0] * len(VLLM_TTFT_BUCKETS_S), 0.0)
        new = max(0, requests - h.requests)
        median_s = self._median_s(load)
        for i, bound in enumerate(VLLM_TTFT_BUCKETS_S):
            h.counts[i] += new * _lognormal_cdf(bound, median_s)
        h.sum_s += new * median_s * math.exp(TTFT_SIGMA**2 / 2)
        h.requests = requests
        return (*(min(requests, math.floor(c + 1e-6)) for c in h.counts), requests), round(h.sum_s, 6)

    def _median_s(self, load: float) -> float:
        low, high = self._p99_s
        return (low + (high - low) * load**2) / math.exp(Z_99 * TTFT_SIGMA)


def _lognormal_cdf(x: float, median: float) -> float:
    return 0.5 * (1 + math.erf(math.log(x / median) / (TTFT_SIGMA * math.sqrt(2))))
