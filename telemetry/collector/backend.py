"""What every GPU backend (NVML, simulated) and serving source returns.

A backend is read once per sample tick; each read gives one :class:`GpuReading`
per GPU. A field the GPU cannot report is ``None`` (never zero), and a GPU that
failed this tick still gives a reading, with every field ``None`` and
``error`` set, so one failing GPU never stops the others. A backend that reads
the GPUs through another process (dcgm-exporter) gives no reading for the GPUs
of a source it could not read: the GPUs and their energy counters ran on, and a
gap in the samples, unlike a row of nulls, lets the server count the counter's
increase across it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class GpuIdentity:
    """One life of one GPU's counters: a new ``epoch`` means the energy counter restarted."""

    uuid: str
    index: int
    name: str
    energy_counter_supported: bool
    epoch: str


@dataclass(frozen=True)
class GpuReading:
    gpu: GpuIdentity
    ts: float  # Unix seconds
    power_w: float | None = None
    energy_j: float | None = None  # cumulative since the driver loaded (NVML's counter)
    util_pct: int | None = None
    mem_util_pct: int | None = None
    mem_used_bytes: int | None = None
    temp_c: int | None = None
    error: str | None = None  # set when the whole GPU could not be read this tick


class GpuBackend(Protocol):
    def inventory(self) -> list[GpuIdentity]:
        """The GPUs of this host, in index order (to map endpoints to GPUs; epochs may be stale)."""
        ...

    def read(self, ts: float) -> list[GpuReading]:
        """One reading per GPU, stamped ``ts`` (Unix seconds)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class EndpointIdentity:
    """One life of one LLM model's counters at one inference server (``epoch`` changes when it restarts).

    A server serving several models gives one identity per model (``model``: one model's name).
    """

    url: str
    kind: str  # "vllm" | "tgi" | "sglang"
    model: str
    gpu_uuids: tuple[str, ...]
    epoch: str
    ttft_bucket_bounds_s: tuple[float, ...]  # +Inf is implicit
    # Inter-token latency (time per output token) histogram's bounds; empty where not exposed.
    itl_bucket_bounds_s: tuple[float, ...] = ()


@dataclass(frozen=True)
class ServingReading:
    """Cumulative counters of one endpoint at ``ts``; ``None`` means not exposed."""

    endpoint: EndpointIdentity
    ts: float
    prompt_tokens: int | None
    generation_tokens: int | None
    requests: int | None
    ttft_bucket_counts: tuple[int, ...] | None  # one per bound, then +Inf
    ttft_sum_s: float | None
    # Prompt tokens served from the prefix cache (a subset of prompt_tokens); None where not exposed.
    cached_prompt_tokens: int | None = None
    # Inter-token latency histogram: cumulative, one per bound then +Inf, and its sum; None where not exposed.
    itl_bucket_counts: tuple[int, ...] | None = None
    itl_sum_s: float | None = None


class ServingSource(Protocol):
    url: str

    def read(self, ts: float) -> ServingReading | Sequence[ServingReading] | None:
        """The counters now of each LLM model the server serves (a server of one model may return its reading
        alone); ``None`` or nothing when it could not be read (logged)."""
        ...


def serving_readings(result: ServingReading | Sequence[ServingReading] | None) -> Sequence[ServingReading]:
    """What :meth:`ServingSource.read` returned, as a sequence of readings."""
    if result is None:
        return ()
    return (result,) if isinstance(result, ServingReading) else result
