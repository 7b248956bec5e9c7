"""A stand-in vLLM server's ``/metrics`` (the page :func:`tests.helpers.expositions.vllm` writes), its counters
advancing at every request, answered or not, as a serving server's do between scrapes.

It keeps its truth: every (prompt, generation, requests) it served, so a test can compare the tokens an
import stores with what the server counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from telemetry.collector.simserving import VLLM_TTFT_BUCKETS_S
from tests.helpers import expositions
from tests.helpers.stub_server import Answer, Request

TEXT = {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}
TTFT = "vllm:time_to_first_token_seconds"


@dataclass
class VllmStandIn:
    prompt: int = 1_000_000  # below 10^7: the page prints it with %e, exact to 7 digits
    generation: int = 500_000
    requests: int = 700
    prompt_step: int = 1_234
    generation_step: int = 567
    requests_step: int = 3
    start: float = 1_764_300_000.0  # process_start_time_seconds
    mode: str = "ok"  # ok | error (500)
    served: list[tuple[int, int, int]] = field(default_factory=list)  # (prompt, generation, requests) served

    def answer(self, _request: Request) -> Answer:
        self.prompt += self.prompt_step
        self.generation += self.generation_step
        self.requests += self.requests_step
        if self.mode == "error":
            return 500, {"Content-Type": "text/plain"}, b"engine dead\n"
        self.served.append((self.prompt, self.generation, self.requests))
        page = expositions.vllm(
            prompt=float(self.prompt), generation=float(self.generation), start=self.start,
            requests=(self.requests, 0), ttft_sum_s=self.requests * 0.05,
        )  # fmt: skip
        # TTFT as a real server's histogram grows: each request in one bucket, so no bucket's count ever drops
        # (the page's own shape spreads a total over buckets, which a growing total can make drop).
        lines = [line for line in page.splitlines() if not line.startswith(f"{TTFT}_")]
        labels = f'engine="0",model_name="{expositions.MODEL}"'
        for i, bound in enumerate(VLLM_TTFT_BUCKETS_S):
            lines.append(f'{TTFT}_bucket{{{labels},le="{bound}"}} {float(self.requests if i >= 3 else 0)}')
        lines += [
            f'{TTFT}_bucket{{{labels},le="+Inf"}} {float(self.requests)}',
            f"{TTFT}_count{{{labels}}} {float(self.requests)}",
            f"{TTFT}_sum{{{labels}}} {self.requests * 0.05}",
        ]
        return 200, TEXT, ("\n".join(lines) + "\n").encode()
