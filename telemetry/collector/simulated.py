"""A simulated GPU node: same interface as the NVML backend, for demos, backfills and tests.

Power follows load, between the model's idle draw and its TDP: load is a daily
pattern (low at 04:00 UTC, high at 16:00 UTC) scaled per GPU, plus smooth
noise. Load is piecewise linear between whole seconds, so everything derived
from it has an exact closed form: the energy counter is the exact integral of
the simulated power since the (simulated) driver load, computed in O(1) from
prefix sums of the periodic daily pattern and of a periodic noise table, so a
sample years after the driver load costs the same as the first.

Determinism: everything comes from ``seed`` and ``hostname``; two runs with the
same arguments give the same samples for the same timestamps, in any order.

Counter resets (``resets_every_s``): the driver "reloads" at fixed times; the
energy counter restarts from zero and the epoch (``<boot id>/<driver>@<load
time>``) changes, as on a real host.
"""

from __future__ import annotations

import itertools
import math
import random
import uuid
from dataclasses import dataclass

from . import wire
from .backend import GpuIdentity, GpuReading
from .units import S_PER_DAY, S_PER_HOUR

GIB = 1024**3
SIM_DRIVER_VERSION = "570.133.20"
# The simulated fleet's driver was loaded before any timestamp the wire accepts.
DRIVER_ORIGIN_S = 946_684_800  # 2000-01-01T00:00:00Z
NOISE_PERIOD = 100_003  # seconds; prime, so the noise does not repeat with the day


@dataclass(frozen=True)
class GpuModel:
    """A GPU model as the simulator draws it; throughput and TTFT for an 8B FP16 model under vLLM."""

    key: str
    nvml_name: str
    tdp_w: float
    idle_w: float
    memory_bytes: int
    generation_tokens_per_s: float  # per GPU at full load
    ttft_p99_s: tuple[float, float]  # at no load, at full load
    temp_c: tuple[int, int]  # idle, full load


MODELS: dict[str, GpuModel] = {
    m.key: m
    for m in (
        GpuModel("h100-sxm", "NVIDIA H100 80GB HBM3", 700, 70, 80 * GIB, 6000, (0.035, 0.075), (32, 68)),
        GpuModel("h100-pcie", "NVIDIA H100 PCIe", 350, 48, 80 * GIB, 5400, (0.040, 0.078), (34, 72)),
        GpuModel("a100-sxm", "NVIDIA A100-SXM4-80GB", 400, 55, 80 * GIB, 3600, (0.050, 0.120), (33, 70)),
        GpuModel("a100-pcie", "NVIDIA A100 80GB PCIe", 300, 45, 80 * GIB, 3100, (0.055, 0.130), (35, 74)),
        GpuModel("l40s", "NVIDIA L40S", 350, 35, 48 * GIB, 2600, (0.070, 0.180), (33, 75)),
        GpuModel("l4", "NVIDIA L4", 72, 16, 24 * GIB, 800, (0.120, 0.400), (38, 78)),
        GpuModel("rtx-4090", "NVIDIA GeForce RTX 4090", 450, 20, 24 * GIB, 3300, (0.110, 0.330), (35, 76)),
        GpuModel("rtx-3090", "NVIDIA GeForce RTX 3090", 350, 25, 24 * GIB, 2200, (0.150, 0.450), (38, 80)),
    )
}
ALIASES = {"h100": "h100-sxm", "a100": "a100-sxm", "4090": "rtx-4090", "3090": "rtx-3090"}


def parse_simulate_spec(spec: str) -> list[GpuModel]:
    """``"h100-sxm:8,rtx-4090:4"`` to one :class:`GpuModel` per GPU, in index order."""
    gpus: list[GpuModel] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, _, count = part.partition(":")
        model = MODELS.get(ALIASES.get(key.strip().lower(), key.strip().lower()))
        if model is None:
            raise ValueError(f"unknown GPU model {key!r}; known: {', '.join(MODELS)}")
        if not count.strip().isdigit() or int(count) < 1:
            raise ValueError(f"{part!r}: the count after ':' must be a positive integer")
        gpus.extend([model] * int(count))
    if not gpus or len(gpus) > wire.MAX_GPUS:
        raise ValueError(f"--simulate needs 1 to {wire.MAX_GPUS} GPUs, e.g. h100-sxm:8")
    return gpus


def _prefix(values: list[float]) -> list[float]:
    return [0.0, *itertools.accumulate(values)]


def _periodic_sum(prefix: list[float], start: int, stop: int) -> float:
    """Sum of a periodic sequence (period ``len(prefix) - 1``) over ``start <= k < stop``."""
    period = len(prefix) - 1
    full, rest = divmod(stop - start, period)
    first = start % period
    total = full * prefix[period]
    if first + rest <= period:
        return total + prefix[first + rest] - prefix[first]
    return total + prefix[period] - prefix[first] + prefix[first + rest - period]


def _daily_load(second_of_day: int) -> float:
    """Fleet-wide load, 0.15 at 04:00 UTC to 0.85 at 16:00 UTC."""
    return 0.5 - 0.35 * math.cos(2 * math.pi * (second_of_day - 4 * S_PER_HOUR) / S_PER_DAY)


def _noise_table(rng: random.Random) -> list[float]:
    """Smooth noise within ±0.12: a slow AR(1) (minutes) plus a fast one (seconds)."""
    slow = fast = 0.0
    table = []
    for _ in range(NOISE_PERIOD):
        slow = 0.995 * slow + rng.gauss(0.0, 0.006)
        fast = 0.7 * fast + rng.gauss(0.0, 0.014)
        table.append(max(-0.12, min(0.12, slow + fast)))
    return table


@dataclass(frozen=True)
class SimulatedGpu:
    model: GpuModel
    uuid: str
    index: int
    load_scale: float  # this GPU's share of the fleet's load, 0.9..1.0
    noise_offset: int


class SimulatedBackend:
    """Simulated GPUs of one host; see the module docstring."""

    def __init__(
        self, models: list[GpuModel], *, seed: int = 0, hostname: str = "sim", resets_every_s: int | None = None
    ) -> None:
        node = random.Random(f"{seed}:{hostname}")
        self._daily_values = [_daily_load(s) for s in range(S_PER_DAY)]
        self._daily = _prefix(self._daily_values)
        self._noise_values = _noise_table(node)
        self._noise = _prefix(self._noise_values)
        self._boot_id = str(uuid.UUID(int=node.getrandbits(128), version=4))
        self._origin = DRIVER_ORIGIN_S - node.randrange(365 * 24) * S_PER_HOUR
        self._resets_every_s = resets_every_s
        self.gpus = [self._gpu(m, i, random.Random(f"{seed}:{hostname}:{i}")) for i, m in enumerate(models)]

    @staticmethod
    def _gpu(model: GpuModel, index: int, rng: random.Random) -> SimulatedGpu:
        gpu_uuid = f"GPU-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
        return SimulatedGpu(model, gpu_uuid, index, rng.uniform(0.9, 1.0), rng.randrange(NOISE_PERIOD))

    # --- the backend interface --------------------------------------------------

    def inventory(self) -> list[GpuIdentity]:
        return [self._identity(gpu, self.driver_loaded_at(DRIVER_ORIGIN_S)) for gpu in self.gpus]

    def read(self, ts: float) -> list[GpuReading]:
        loaded_at = self.driver_loaded_at(ts)
        return [self._reading(gpu, ts, loaded_at) for gpu in self.gpus]

    def close(self) -> None:
        pass

    # --- the physics ------------------------------------------------------------

    def driver_loaded_at(self, ts: float) -> int:
        """When the (simulated) driver was last loaded before ``ts``: the energy counter's zero."""
        if not self._resets_every_s:
            return self._origin
        return self._origin + math.floor((ts - self._origin) / self._resets_every_s) * self._resets_every_s

    def load_at(self, gpu: SimulatedGpu, ts: float) -> float:
        """Load (0..1) at ``ts``: linear between the values at whole seconds."""
        knot = math.floor(ts)
        frac = ts - knot
        return (1 - frac) * self._knot_load(gpu, knot) + frac * self._knot_load(gpu, knot + 1)

    def load_integral(self, gpu: SimulatedGpu, start: int, ts: float) -> float:
        """Exact ∫ load dt from the whole second ``start`` to ``ts`` (load-seconds)."""
        knot = math.floor(ts)
        whole = self._load_sum(gpu, start, knot) + (self._knot_load(gpu, knot) - self._knot_load(gpu, start)) / 2
        return whole + (self._knot_load(gpu, knot) + self.load_at(gpu, ts)) / 2 * (ts - knot)

    def power_w(self, gpu: SimulatedGpu, ts: float) -> float:
        return gpu.model.idle_w + (gpu.model.tdp_w - gpu.model.idle_w) * self.load_at(gpu, ts)

    def energy_j(self, gpu: SimulatedGpu, ts: float) -> float:
        """Exact ∫ power dt since the driver was loaded: what NVML's counter would say."""
        start = self.driver_loaded_at(ts)
        span_w = gpu.model.tdp_w - gpu.model.idle_w
        return gpu.model.idle_w * (ts - start) + span_w * self.load_integral(gpu, start, ts)

    def _knot_load(self, gpu: SimulatedGpu, knot: int) -> float:
        noise = self._noise_values[(knot + gpu.noise_offset) % NOISE_PERIOD]
        return gpu.load_scale * self._daily_values[knot % S_PER_DAY] + noise

    def _load_sum(self, gpu: SimulatedGpu, start: int, stop: int) -> float:
        """Σ load at whole seconds ``start <= k < stop``, in O(1)."""
        daily = _periodic_sum(self._daily, start, stop)
        noise = _periodic_sum(self._noise, start + gpu.noise_offset, stop + gpu.noise_offset)
        return gpu.load_scale * daily + noise

    def _identity(self, gpu: SimulatedGpu, loaded_at: int) -> GpuIdentity:
        epoch = f"{self._boot_id}/{SIM_DRIVER_VERSION}@{loaded_at}"
        return GpuIdentity(gpu.uuid, gpu.index, gpu.model.nvml_name, True, epoch)

    def _reading(self, gpu: SimulatedGpu, ts: float, loaded_at: int) -> GpuReading:
        load = self.load_at(gpu, ts)
        model = gpu.model
        return GpuReading(
            self._identity(gpu, loaded_at),
            ts,
            power_w=round(self.power_w(gpu, ts), 3),  # NVML's resolution: mW and mJ
            energy_j=round(self.energy_j(gpu, ts), 3),
            util_pct=min(100, round(100 * load**0.8)),
            mem_util_pct=round(70 * load),
            mem_used_bytes=int(model.memory_bytes * (0.9 + 0.02 * load)),  # vLLM reserves 90 %
            temp_c=round(model.temp_c[0] + (model.temp_c[1] - model.temp_c[0]) * load),
        )
