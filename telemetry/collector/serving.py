"""Inference servers' Prometheus endpoints (vLLM, TGI, SGLang) as cumulative serving counters.

The kind of server is recognised from its metric names. Each LLM model the
server serves (vLLM's and SGLang's ``model_name`` label) is an endpoint of its
own: one reading per model, its counters summed over that model's label sets
only (``finished_reason``, vLLM's ``engine``). Mapping to the wire's counters:

==================  ===================================  =========================================
wire                vLLM (``vllm:``)                     SGLang (``sglang:``)
==================  ===================================  =========================================
prompt_tokens       ``prompt_tokens_total``              ``prompt_tokens_total``
generation_tokens   ``generation_tokens_total``          ``generation_tokens_total``
requests            ``request_success_total``            ``num_requests_total``
TTFT buckets, sum   ``time_to_first_token_seconds``      ``time_to_first_token_seconds``
ITL buckets, sum    ``inter_token_latency_seconds``      ``inter_token_latency_seconds``
                    (or ``time_per_output_token_seconds``) (or ``time_per_output_token_seconds``)
==================  ===================================  =========================================

ITL: inter-token latency, the time between two output tokens of a request
(vLLM v1 exports it under both names, the older one deprecated, with the same
observations; older servers only under ``time_per_output_token_seconds``).
TGI exposes no histogram of it: ``null``.

Prefix cache: cached_prompt_tokens (prompt tokens served from the prefix cache,
counted within prompt_tokens) is vLLM's ``prefix_cache_hits_total`` (v1 engine,
in tokens) and SGLang's ``cached_tokens_total`` (summed over ``cache_source``);
TGI exposes none, and older vLLM only a hit-rate gauge: ``null``.

TGI: prompt_tokens is ``tgi_request_input_length_sum`` and generation_tokens
``tgi_request_generated_tokens_sum`` (the sums of those per-request
histograms), requests is ``tgi_request_success``.

TGI exposes no time-to-first-token histogram. TTFT is queue time plus the
prefill: the buckets are those of ``tgi_request_queue_duration`` (so they are a
lower bound of TTFT: they leave out the prefill itself), and the sum adds
``tgi_batch_inference_duration{method="prefill"}_sum`` to the queue's sum (so the
mean TTFT, sum / count, includes the prefill; it is exact when each prefill
batch admits one request, slightly low when a batch admits several).

TTFT and ITL bounds are fixed for an epoch (the server refuses a batch whose
endpoint changes them within one): the first bounds seen in an epoch are kept; a
scrape whose histogram is missing or differs sends ``null`` counts for it. Until an
endpoint has shown either a histogram or a non-zero counter (a TGI or SGLang
server exposes them at its first request), it reports nothing.

Epoch: the server's ``process_start_time_seconds`` when exposed (vLLM, SGLang
in single-process mode); otherwise (TGI) ``seen@<unix seconds>``, the time the
collector first saw this life of the server, renewed when the counters go down
(see :class:`~.epochs.EpochBook`).
"""

from __future__ import annotations

import logging
import re
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from . import promtext, wire
from .backend import EndpointIdentity, GpuIdentity, ServingReading
from .epochs import EpochBook

log = logging.getLogger(__name__)

MAX_SCRAPE_BYTES = 16 * 1024 * 1024
_GPU_LIST = re.compile(
    r"^(?:\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+)(?:,(?:\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+))*$"
)


@dataclass(frozen=True)
class ServingTarget:
    """``--serving URL[@GPU_UUID_OR_INDEX,...]``; no GPUs given: all of the host's."""

    url: str
    gpus: tuple[str, ...]


def parse_serving_target(spec: str) -> ServingTarget:
    url, sep, gpus = spec.strip().rpartition("@")
    if not sep or not _GPU_LIST.match(gpus):  # an '@' in the URL itself (user@host) is not a GPU list
        url, gpus = spec.strip(), ""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"--serving {spec!r}: the URL must start with http:// or https://")
    return ServingTarget(url, tuple(filter(None, gpus.split(","))))


def resolve_gpus(target: ServingTarget, inventory: list[GpuIdentity]) -> tuple[str, ...]:
    """GPU indexes to UUIDs; fails loudly on an index this host does not have, or on one GPU named twice."""
    by_index = {gpu.index: gpu.uuid for gpu in inventory}
    if not target.gpus:
        return tuple(by_index[i] for i in sorted(by_index))
    known = set(by_index.values())
    try:
        uuids = tuple(by_index[int(g)] if g.isdigit() else g for g in target.gpus)
    except KeyError as exc:
        raise ValueError(f"--serving {target.url}: this host has no GPU {exc.args[0]}") from None
    if unknown := [u for u in uuids if u not in known]:
        raise ValueError(f"--serving {target.url}: this host has no GPU {', '.join(unknown)}")
    if repeated := sorted({u for u in uuids if uuids.count(u) > 1}):
        # The server refuses an endpoint naming a GPU twice (it would raise its counters' bounds).
        raise ValueError(f"--serving {target.url}: names GPU {', '.join(repeated)} more than once")
    return uuids


@dataclass(frozen=True)
class Counters:
    """What one scrape says, mapped to the wire's serving counters."""

    model: str
    prompt_tokens: int | None
    generation_tokens: int | None
    requests: int | None
    ttft: promtext.Histogram | None
    cached_prompt_tokens: int | None = None
    itl: promtext.Histogram | None = None


def detect_kind(exposition: promtext.Exposition) -> str | None:
    names = {s.name for s in exposition.samples}
    for kind, prefix in (("vllm", "vllm:"), ("sglang", "sglang:"), ("tgi", "tgi_")):
        if any(name.startswith(prefix) for name in names):
            return kind
    return None


def _count(value: float | None) -> int | None:
    return None if value is None else max(0, round(value))


def models_of(exposition: promtext.Exposition) -> list[tuple[str, dict[str, str]]]:
    """``(model, labels selecting its samples)`` of each LLM model the server serves.

    vLLM and SGLang label their metrics with ``model_name``: one model per value.
    Without it (TGI), the whole exposition is one model, named by a ``name`` label when one has it.
    """
    models = exposition.label_values("model_name")
    if models:
        return [(model[:256], {"model_name": model}) for model in models]
    names = exposition.label_values("name")
    return [(names[0][:256] if len(names) == 1 else "", {})]


def _histogram(e: promtext.Exposition, names: tuple[str, ...], labels: dict[str, str]) -> promtext.Histogram | None:
    """The first of ``names`` the server exposes (a metric and its deprecated alias)."""
    return next(filter(None, (e.histogram(name, **labels) for name in names)), None)


def map_vllm(e: promtext.Exposition, model: str, labels: dict[str, str]) -> Counters:
    return Counters(
        model,
        _count(e.total("vllm:prompt_tokens_total", **labels)),
        _count(e.total("vllm:generation_tokens_total", **labels)),
        _count(e.total("vllm:request_success_total", **labels)),
        e.histogram("vllm:time_to_first_token_seconds", **labels),
        _count(e.total("vllm:prefix_cache_hits_total", **labels)),
        _histogram(e, ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"), labels),
    )


def map_sglang(e: promtext.Exposition, model: str, labels: dict[str, str]) -> Counters:
    return Counters(
        model,
        _count(e.total("sglang:prompt_tokens_total", **labels)),
        _count(e.total("sglang:generation_tokens_total", **labels)),
        _count(e.total("sglang:num_requests_total", **labels)),
        e.histogram("sglang:time_to_first_token_seconds", **labels),
        _count(e.total("sglang:cached_tokens_total", **labels)),
        _histogram(e, ("sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"), labels),
    )


def map_tgi(e: promtext.Exposition, model: str, labels: dict[str, str]) -> Counters:
    success = e.total("tgi_request_success")
    return Counters(
        model,
        _count(e.total("tgi_request_input_length_sum")),
        _count(e.total("tgi_request_generated_tokens_sum")),
        _count(success if success is not None else e.total("tgi_request_success_total")),
        _tgi_ttft(e),
    )


def _tgi_ttft(e: promtext.Exposition) -> promtext.Histogram | None:
    queue = e.histogram("tgi_request_queue_duration")
    if queue is None:
        return None
    prefill_s = e.total("tgi_batch_inference_duration_sum", method="prefill") or 0.0
    return promtext.Histogram(queue.bounds, queue.counts, (queue.sum or 0.0) + prefill_s)


MAPPERS: dict[str, Callable[[promtext.Exposition, str, dict[str, str]], Counters]] = {
    "vllm": map_vllm,
    "sglang": map_sglang,
    "tgi": map_tgi,
}


def fetch_text(url: str, timeout_s: float) -> str:
    request = urllib.request.Request(url, headers={"Accept": "text/plain;version=0.0.4"})  # noqa: S310 - http(s) only, checked in parse_serving_target
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        return bytes(response.read(MAX_SCRAPE_BYTES)).decode("utf-8", errors="replace")


class PrometheusEndpoint:
    """One inference server's ``/metrics``, read as a :class:`~.backend.ServingSource`."""

    def __init__(
        self,
        url: str,
        gpu_uuids: tuple[str, ...],
        *,
        book: EpochBook,
        timeout_s: float = 3.0,
        fetch: Callable[[str, float], str] = fetch_text,
    ) -> None:
        self.url = url
        self._gpu_uuids = gpu_uuids
        self._book = book
        self._timeout_s = timeout_s
        self._fetch = fetch
        self._failing = False
        # Per model: (epoch, its TTFT bounds, its ITL bounds)
        self._bounds: dict[str, tuple[str, tuple[float, ...], tuple[float, ...]]] = {}

    def read(self, ts: float) -> list[ServingReading]:
        """One reading per LLM model served (none when the server could not be read, or has nothing yet)."""
        exposition = self._scrape()
        kind = detect_kind(exposition) if exposition is not None else None
        if exposition is None or kind is None:
            if exposition is not None:
                self._report(f"no vLLM, TGI or SGLang metrics at {self.url}")
            return []
        models = models_of(exposition)
        readings = []
        for model, labels in models:
            # One model keeps the URL's own epoch key (as before models were told apart).
            key = f"serving:{self.url}" if len(models) == 1 else f"serving:{self.url}#{model}"
            reading = self._reading(kind, MAPPERS[kind](exposition, model, labels), exposition, ts, key)
            if reading is not None:
                readings.append(reading)
        return readings

    def _scrape(self) -> promtext.Exposition | None:
        try:
            exposition = promtext.parse(self._fetch(self.url, self._timeout_s))
        except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts are OSErrors
            self._report(f"cannot scrape {self.url}: {exc}")
            return None
        if self._failing:
            log.info("%s is readable again", self.url)
            self._failing = False
        return exposition

    def _report(self, message: str) -> None:
        (log.debug if self._failing else log.warning)(message)
        self._failing = True

    def _reading(self, kind: str, c: Counters, e: promtext.Exposition, ts: float, key: str) -> ServingReading | None:
        ttft, itl = (h if h is not None and len(h.bounds) <= wire.MAX_TTFT_BUCKETS else None for h in (c.ttft, c.itl))
        epoch = self._epoch(c, e, ts, key)
        bounds = self._epoch_bounds(epoch, ttft, itl, c)
        if bounds is None:
            return None
        ttft_counts, ttft_sum = self._histogram_values(ttft, bounds[0], "TTFT", epoch)
        itl_counts, itl_sum = self._histogram_values(itl, bounds[1], "inter-token latency", epoch)
        identity = EndpointIdentity(self.url, kind, c.model, self._gpu_uuids, epoch, *bounds)
        return ServingReading(
            identity, ts, c.prompt_tokens, c.generation_tokens, c.requests, ttft_counts, ttft_sum,
            c.cached_prompt_tokens, itl_counts, itl_sum,
        )  # fmt: skip

    def _histogram_values(
        self, h: promtext.Histogram | None, bounds: tuple[float, ...], what: str, epoch: str
    ) -> tuple[tuple[int, ...] | None, float | None]:
        """A histogram's cumulative counts and sum as sent; ``None`` where missing or its bounds changed."""
        if h is not None and h.bounds != bounds:
            self._report(f"{self.url}: {what} buckets changed within epoch {epoch}; {what} is sent as null")
            h = None
        if h is None:
            return None, None
        return tuple(max(0, round(n)) for n in h.counts), h.sum if h.sum is not None and h.sum >= 0 else None

    def _epoch_bounds(
        self, epoch: str, ttft: promtext.Histogram | None, itl: promtext.Histogram | None, c: Counters
    ) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """The TTFT and ITL bounds of this model's epoch: the first seen; ``None`` while there is nothing to report."""
        known = self._bounds.get(c.model)
        if known is not None and known[0] == epoch:
            return known[1], known[2]
        if ttft is None and not any((c.prompt_tokens, c.generation_tokens, c.requests)):
            return None
        bounds = (ttft.bounds if ttft is not None else (), itl.bounds if itl is not None else ())
        self._bounds[c.model] = (epoch, *bounds)
        return bounds

    def _epoch(self, c: Counters, e: promtext.Exposition, ts: float, key: str) -> str:
        starts = [s.value for s in e.find("process_start_time_seconds")]
        counters = (c.prompt_tokens, c.generation_tokens, c.requests)
        if starts:
            return self._book.epoch(key, f"{min(starts)}", counters, ts)
        return self._book.epoch(key, "seen", counters, ts, stamp_first=True)
