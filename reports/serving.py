"""Hourly serving usage summed for a report row: throughput while serving, TTFT, inter-token latency.

Pure: no Django. TTFT comes measured (vLLM, SGLang) or as a lower bound (TGI's
queue duration), never the two merged; times in seconds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from reports.latency import ShareWithin, TimeSum, share_within
from telemetry.histogram import Histogram, histogram_quantile, histogram_quantile_bucket


class TtftBasis(enum.StrEnum):
    """What a TTFT figure measures: the time to the first token (vLLM, SGLang), or a lower bound of it.

    TGI exposes no TTFT histogram: its queue-duration histogram (queue time,
    before the prefill) stands in, so every quantile from it is a lower bound.
    """

    MEASURED = "measured"
    LOWER_BOUND = "lower_bound"


@dataclass(frozen=True)
class ServingSums:
    """Hourly serving usage summed: tokens and seconds of endpoint-hours that served tokens, latency merged.

    ``serving_s`` counts the observed seconds of endpoint-hours with at least one
    token ("while serving"), so throughput is per second *while serving*; ``requests``
    are those endpoint-hours' requests. ``gpu_serving_s``: the same seconds times the
    GPUs each endpoint serves from (inventory), with ``gpu_generation_tokens`` /
    ``gpu_requests`` their tokens and requests (endpoints without GPUs in the inventory
    are left out of per-GPU figures). ``cached_prompt_tokens``: prompt tokens served
    from the prefix cache (``None`` where no server exposes it), of
    ``prompt_tokens_cache_known`` prompt tokens whose server does. ``ttft``: merged
    histograms of endpoints that measure TTFT (vLLM, SGLang); ``ttft_lower_bound``:
    TGI's queue-duration histograms (a lower bound of TTFT). The two are never
    merged: TTFT figures come from ``ttft`` when any endpoint measured it, else
    from ``ttft_lower_bound``, and ``ttft_basis`` says which. ``ttft_sum`` /
    ``ttft_lower_bound_sum``: the histograms' sums, for the mean. ``itl``: merged
    inter-token latency (time per output token) histograms of the endpoints that
    expose one (not TGI), ``itl_sum`` their sums.
    """

    serving_s: float = 0.0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    ttft: Histogram | None = None
    ttft_lower_bound: Histogram | None = None
    cached_prompt_tokens: int | None = None
    prompt_tokens_cache_known: int = 0
    requests: int = 0
    gpu_serving_s: float = 0.0
    gpu_generation_tokens: int = 0
    gpu_requests: int = 0
    ttft_sum: TimeSum = field(default_factory=TimeSum)
    ttft_lower_bound_sum: TimeSum = field(default_factory=TimeSum)
    itl: Histogram | None = None
    itl_sum: TimeSum = field(default_factory=TimeSum)

    @property
    def prefix_cache_hit_share(self) -> float | None:
        """Share (0-1) of prompt tokens served from the prefix cache, over endpoint-hours whose server says.

        Those tokens are in ``prompt_tokens`` and so in every per-token figure (input + output).
        """
        if self.cached_prompt_tokens is None or self.prompt_tokens_cache_known == 0:
            return None
        return self.cached_prompt_tokens / self.prompt_tokens_cache_known

    @property
    def tokens_per_s(self) -> float | None:
        """Input + output tokens per second while serving."""
        tokens = self.prompt_tokens + self.generation_tokens
        return None if self.serving_s == 0 else tokens / self.serving_s

    @property
    def generation_tokens_per_s(self) -> float | None:
        """Output (generation) tokens per second while serving."""
        return None if self.serving_s == 0 else self.generation_tokens / self.serving_s

    @property
    def requests_per_s(self) -> float | None:
        """Requests per second while serving."""
        return None if self.serving_s == 0 else self.requests / self.serving_s

    @property
    def generation_tokens_per_gpu_s(self) -> float | None:
        """Output tokens per GPU-second while serving (per GPU)."""
        return None if self.gpu_serving_s == 0 else self.gpu_generation_tokens / self.gpu_serving_s

    @property
    def requests_per_gpu_s(self) -> float | None:
        """Requests per GPU-second while serving (per GPU)."""
        return None if self.gpu_serving_s == 0 else self.gpu_requests / self.gpu_serving_s

    @property
    def ttft_basis(self) -> TtftBasis | None:
        if self.ttft is not None and self.ttft.total:
            return TtftBasis.MEASURED
        if self.ttft_lower_bound is not None and self.ttft_lower_bound.total:
            return TtftBasis.LOWER_BOUND
        return None

    @property
    def ttft_shown(self) -> Histogram | None:
        """The histogram the TTFT figures come from (see ``ttft_basis``)."""
        basis = self.ttft_basis
        return None if basis is None else self.ttft if basis is TtftBasis.MEASURED else self.ttft_lower_bound

    @property
    def ttft_mean_s(self) -> float | None:
        """Mean TTFT (histogram sum / count) on the same basis as the quantiles; ``None`` without a sum."""
        basis = self.ttft_basis
        if basis is None:
            return None
        return (self.ttft_sum if basis is TtftBasis.MEASURED else self.ttft_lower_bound_sum).mean_s

    @property
    def ttft_lower_bound_requests_left_out(self) -> int:
        """Requests of lower-bound (TGI) histograms not in the TTFT figures, because measured ones were."""
        if self.ttft_basis is not TtftBasis.MEASURED or self.ttft_lower_bound is None:
            return 0
        return self.ttft_lower_bound.total

    def ttft_quantile_s(self, q: float) -> float | None:
        shown = self.ttft_shown
        return None if shown is None else histogram_quantile(q, shown)

    def ttft_quantile_bucket_s(self, q: float) -> tuple[float, float | None] | None:
        shown = self.ttft_shown
        return None if shown is None else histogram_quantile_bucket(q, shown)

    def ttft_within(self, target_s: float) -> ShareWithin | None:
        """Goodput: the share of requests whose TTFT is at or below ``target_s`` (on ``ttft_basis``).

        On a lower bound (TGI's queue time) no request is proved within the target: ``certain`` is 0, and
        ``possible`` / ``estimate`` (the queue times' share) are upper bounds of goodput.
        """
        shown = self.ttft_shown
        within = None if shown is None else share_within(shown, target_s)
        if within is None or self.ttft_basis is not TtftBasis.LOWER_BOUND:
            return within
        return replace(within, certain=0.0)

    @property
    def itl_shown(self) -> Histogram | None:
        """The inter-token latency histogram, ``None`` where no endpoint exposed one (TGI) or it is empty."""
        return self.itl if self.itl is not None and self.itl.total else None

    def itl_quantile_s(self, q: float) -> float | None:
        shown = self.itl_shown
        return None if shown is None else histogram_quantile(q, shown)

    def itl_quantile_bucket_s(self, q: float) -> tuple[float, float | None] | None:
        shown = self.itl_shown
        return None if shown is None else histogram_quantile_bucket(q, shown)
