"""A simulated vLLM endpoint on a simulated node: one LLM, tokens, TTFT and inter-token latency that follow load.

The node serves one LLM (``llm``, a full model name of :mod:`.simprofiles`) on
all its GPUs. Throughput: each GPU generates its profile's output tokens/s at
full load (measured by the study: on an H100 PCIe, Llama 3 8B 2,693 and the
14B 1,507; on an RTX 4090, 1,646 and 312) times the node's load, so the
generation-token counter is the exact integral of the load since the server
started (O(1), see :mod:`.simulated`). Requests and prompts have the study's
ShareGPT shape: ``GENERATED_TOKENS_PER_REQUEST`` output tokens per request, as
many prompt tokens as output tokens.

TTFT and inter-token latency: log-normal, their P50 and P99 at the current load
interpolated between the study's measured points; the slowest GPU model of the
node sets them. Bucket counts use vLLM's real default bounds. Every output
token but a request's first is one inter-token observation, as in vLLM's
``time_per_output_token`` histogram.

The server "starts" with the simulation (or when the simulated driver
reloads, or every ``restarts_every_s`` after its first start), so its counters
start at zero and its epoch is that start time, as
``process_start_time_seconds`` would give on a real vLLM.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .backend import EndpointIdentity, ServingReading
from .simprofiles import LLAMA_8B, Quantiles, serving_profile
from .simulated import SimulatedBackend

# vllm/v1/metrics/loggers.py: buckets of vllm:time_to_first_token_seconds
VLLM_TTFT_BUCKETS_S = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
# vllm/v1/metrics/loggers.py: buckets of vllm:time_per_output_token_seconds
VLLM_ITL_BUCKETS_S = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
SIM_MODEL = LLAMA_8B
# The study's ShareGPT runs: 200 requests, ~41,200 prompt and ~40,400 output tokens (8B).
PROMPT_TOKENS_PER_GENERATED = 1.0
GENERATED_TOKENS_PER_REQUEST = 202.0
Z_99 = 2.326


@dataclass
class _Histogram:
    """A server's histogram: whole observations per bucket (the +Inf bucket last), never fewer than before.

    ``expected``: what each bucket would hold if observations could be split; each read hands its new
    observations out whole, to the buckets furthest behind their expectation, so that every bucket only
    grows (as a real server's do) and the buckets add up to the count of observations.
    """

    epoch: str = ""
    observed: int = 0  # observations so far in this epoch
    counts: list[int] = field(default_factory=list)
    sum_s: float = 0.0
    expected: list[float] = field(default_factory=list)

    @classmethod
    def from_cumulative(cls, epoch: str, cumulative: Sequence[int], sum_s: float) -> _Histogram:
        """The state behind a reading a server sent (cumulative per bound, the total last)."""
        counts = [int(b - a) for a, b in zip((0, *cumulative[:-1]), cumulative, strict=True)]
        return cls(epoch, int(cumulative[-1]), counts, sum_s, [float(c) for c in counts])

    def add(self, new: int, shares: Sequence[float]) -> None:
        for i, share in enumerate(shares):
            self.expected[i] += new * share
        behind = [expected - count for expected, count in zip(self.expected, self.counts, strict=True)]
        adds = [max(0, math.floor(b)) for b in behind]
        rest = new - sum(adds)
        # Whole observations to hand out (or, after rounding, to hold back): by how far each bucket is behind.
        order = sorted(range(len(adds)), key=lambda i: behind[i] - adds[i], reverse=rest > 0)
        for i in order:
            if rest == 0:
                break
            if rest > 0:
                adds[i], rest = adds[i] + 1, rest - 1
            elif adds[i] > 0:
                adds[i], rest = adds[i] - 1, rest + 1
        self.counts = [count + add for count, add in zip(self.counts, adds, strict=True)]
        self.observed += new


class SimulatedVllmEndpoint:
    def __init__(
        self,
        backend: SimulatedBackend,
        *,
        hostname: str,
        started_at: float,
        restarts_every_s: int | None = None,
        llm: str = SIM_MODEL,
    ) -> None:
        self.backend = backend
        self.llm = llm
        self.url = f"sim://{hostname}/vllm/metrics"
        self._started_at = math.floor(started_at)
        self._restarts_every_s = restarts_every_s
        self.profiles = {gpu.model.key: serving_profile(gpu.model.key, llm) for gpu in backend.gpus}
        self._tokens_per_load_s = sum(self.profiles[gpu.model.key].output_tokens_per_s_per_gpu for gpu in backend.gpus)
        self._histograms = {"ttft": _Histogram(), "itl": _Histogram()}

    def process_start(self, ts: float) -> int:
        """When the simulated server last started: with the simulation, its latest restart, or driver reload."""
        started = self._started_at
        if self._restarts_every_s and ts >= started:
            started += math.floor((ts - started) / self._restarts_every_s) * self._restarts_every_s
        return max(started, self.backend.driver_loaded_at(ts))

    def generated_tokens(self, ts: float) -> float:
        start = self.process_start(ts)
        return self._tokens_per_load_s * self.backend.load.integral(start, ts)

    def read(self, ts: float) -> ServingReading:
        generated = self.generated_tokens(ts)
        identity = self._identity(ts)
        requests = math.floor(generated / GENERATED_TOKENS_PER_REQUEST)
        load = self.backend.load.at(ts)
        counts, sum_s = self._observe("ttft", identity.epoch, requests, self.ttft_at(load), VLLM_TTFT_BUCKETS_S)
        itl_counts, itl_sum_s = self._observe(
            "itl", identity.epoch, max(0, math.floor(generated) - requests), self.itl_at(load), VLLM_ITL_BUCKETS_S
        )
        return ServingReading(
            identity, ts, math.floor(PROMPT_TOKENS_PER_GENERATED * generated), math.floor(generated),
            requests, counts, sum_s, itl_bucket_counts=itl_counts, itl_sum_s=itl_sum_s,
        )  # fmt: skip

    def ttft_at(self, load: float) -> Quantiles:
        """The slowest GPU model's TTFT quantiles at ``load``."""
        return max((p.ttft_at(load) for p in self.profiles.values()), key=lambda q: q.p99_s)

    def itl_at(self, load: float) -> Quantiles:
        return max((p.itl_at(load) for p in self.profiles.values()), key=lambda q: q.p99_s)

    def _observe(
        self, metric: str, epoch: str, total: int, q: Quantiles, bounds: tuple[float, ...]
    ) -> tuple[tuple[int, ...], float]:
        """Add the observations since the last read (``total`` so far this epoch) to a cumulative histogram."""
        h = self._histograms[metric]
        if h.epoch != epoch:
            n = len(bounds) + 1
            self._histograms[metric] = h = _Histogram(epoch, 0, [0] * n, 0.0, [0.0] * n)
        new = max(0, total - h.observed)
        sigma = lognormal_sigma(q)
        cdf = [lognormal_cdf(bound, q.p50_s, sigma) for bound in bounds]
        h.add(new, [b - a for a, b in zip((0.0, *cdf), (*cdf, 1.0), strict=True)])
        h.sum_s += new * q.p50_s * math.exp(sigma**2 / 2)
        return tuple(itertools.accumulate(h.counts)), round(h.sum_s, 6)

    def _identity(self, ts: float) -> EndpointIdentity:
        uuids = tuple(gpu.uuid for gpu in self.backend.gpus)
        epoch = f"{float(self.process_start(ts))}"
        return EndpointIdentity(
            self.url, "vllm", self.llm, uuids, epoch, VLLM_TTFT_BUCKETS_S, itl_bucket_bounds_s=VLLM_ITL_BUCKETS_S
        )


def lognormal_sigma(q: Quantiles) -> float:
    """The shape that puts P99 at ``q.p99_s`` for a median of ``q.p50_s`` (at least 0.05)."""
    return max(0.05, math.log(q.p99_s / q.p50_s) / Z_99)


def lognormal_cdf(x: float, median: float, sigma: float) -> float:
    return 0.5 * (1 + math.erf(math.log(x / median) / (sigma * math.sqrt(2))))
