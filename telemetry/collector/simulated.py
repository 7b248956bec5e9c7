"""A simulated GPU node: same interface as the NVML backend, for demos, backfills and tests.

Load follows a weekly pattern (see :data:`PATTERNS`: every day alike, office
weeks, or a spare-capacity fleet with idle nights and weekends), scaled per
node, plus smooth noise; it is 0 (no request at all) in a pattern's idle hours.
Power follows load along the GPU's measured-or-assumed curve
(:class:`.simprofiles.PowerProfile`: concave, from idle to the board limit).

Both are tabulated once per node at knots ``KNOT_S`` seconds apart over one week
and are linear between knots, so everything derived from them has an exact
closed form: the energy counter is the exact integral of the simulated power
since the (simulated) driver load, computed in O(1) from prefix sums of the
weekly tables, so a sample years after the driver load costs the same as the first.

Determinism: everything comes from ``seed`` and ``hostname``; two runs with the
same arguments give the same samples for the same timestamps, in any order.

Counter resets (``resets_every_s``): the driver "reloads" at fixed times; the
energy counter restarts from zero and the epoch (``<boot id>/<driver>@<load
time>``) changes, as on a real host.
"""

from __future__ import annotations

import functools
import math
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from . import wire
from .backend import GpuIdentity, GpuReading
from .simprofiles import POWER, PowerProfile
from .units import S_PER_DAY, S_PER_HOUR

GIB = 1024**3
SIM_DRIVER_VERSION = "570.133.20"
# The simulated fleet's driver was loaded before any timestamp the wire accepts.
DRIVER_ORIGIN_S = 946_684_800  # 2000-01-01T00:00:00Z
KNOT_S = 10  # seconds between tabulated loads: a week is 60,480 knots per table
S_PER_WEEK = 7 * S_PER_DAY
KNOTS_PER_WEEK = S_PER_WEEK // KNOT_S
NOISE_LIMIT = 0.12


@dataclass(frozen=True)
class GpuModel:
    """A GPU model as the simulator draws it; what it serves is in :mod:`.simprofiles`."""

    key: str
    nvml_name: str
    memory_bytes: int
    temp_c: tuple[int, int]  # idle, full load

    @property
    def power(self) -> PowerProfile:
        return POWER[self.key]

    @property
    def tdp_w(self) -> float:
        return self.power.full_w

    @property
    def idle_w(self) -> float:
        return self.power.idle_w


MODELS: dict[str, GpuModel] = {
    m.key: m
    for m in (
        GpuModel("h100-sxm", "NVIDIA H100 80GB HBM3", 80 * GIB, (32, 68)),
        GpuModel("h100-pcie", "NVIDIA H100 PCIe", 80 * GIB, (34, 72)),
        GpuModel("a100-sxm", "NVIDIA A100-SXM4-80GB", 80 * GIB, (33, 70)),
        GpuModel("a100-pcie", "NVIDIA A100 80GB PCIe", 80 * GIB, (35, 74)),
        GpuModel("l40s", "NVIDIA L40S", 48 * GIB, (33, 75)),
        GpuModel("l4", "NVIDIA L4", 24 * GIB, (38, 78)),
        GpuModel("rtx-4090", "NVIDIA GeForce RTX 4090", 24 * GIB, (35, 76)),
        GpuModel("rtx-3090", "NVIDIA GeForce RTX 3090", 24 * GIB, (38, 80)),
    )
}
ALIASES = {"h100": "h100-sxm", "a100": "a100-sxm", "4090": "rtx-4090", "3090": "rtx-3090"}


def _daily(second_of_day: float, low: float, high: float) -> float:
    """``low`` at 04:00 UTC to ``high`` at 16:00 UTC, a cosine between."""
    middle, half = (high + low) / 2, (high - low) / 2
    return middle - half * math.cos(2 * math.pi * (second_of_day - 4 * S_PER_HOUR) / S_PER_DAY)


def steady_pattern(weekday: int, second_of_day: float) -> float:
    """Every day alike: 0.15 at 04:00 UTC to 0.85 at 16:00 UTC, never idle."""
    return _daily(second_of_day, 0.15, 0.85)


def office_pattern(weekday: int, second_of_day: float) -> float:
    """Weekdays 0.20 at 04:00 to 0.90 at 16:00 UTC; weekends at 45 % of that; never idle."""
    return _daily(second_of_day, 0.20, 0.90) * (1.0 if weekday < 5 else 0.45)


# Spare capacity (a consumer fleet taking batch work and overflow): idle hours, UTC, per weekday.
SPARE_IDLE_HOURS = {
    **{day: range(0, 6) for day in range(5)},  # weekday nights 00-06
    5: range(0, 9),  # Saturday until 09
    6: (*range(0, 12), *range(20, 24)),  # Sunday until noon, and from 20
}


def spare_pattern(weekday: int, second_of_day: float) -> float:
    """Weekdays up to 0.90 at 16:00 UTC, Saturdays 60 % and Sundays 40 % of that; 0 in its idle hours."""
    if int(second_of_day // S_PER_HOUR) in SPARE_IDLE_HOURS[weekday]:
        return 0.0
    return _daily(second_of_day, 0.10, 0.90) * (1.0, 1.0, 1.0, 1.0, 1.0, 0.6, 0.4)[weekday]


PATTERNS: dict[str, Callable[[int, float], float]] = {
    "steady": steady_pattern,
    "office": office_pattern,
    "spare": spare_pattern,
}


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


def weekly_load_table(pattern: Callable[[int, float], float], scale: float, noise: list[float]) -> list[float]:
    """The node's load at each knot of a week that starts at the Unix epoch (a Thursday), in 0..1.

    ``scale x pattern + noise``, clamped to [0.02, 1] while the pattern is serving
    and exactly 0 in its idle hours (no request, so no token and no noise).
    """
    table = []
    for k in range(KNOTS_PER_WEEK):
        t = k * KNOT_S
        base = pattern((t // S_PER_DAY + 3) % 7, t % S_PER_DAY)
        table.append(0.0 if base <= 0 else min(1.0, max(0.02, scale * base + noise[k])))
    return table


def _noise_table(rng: random.Random) -> list[float]:
    """Smooth noise within +-0.12, one value per knot: a slow AR(1) (minutes) plus a fast one."""
    slow = fast = 0.0
    table = []
    for _ in range(KNOTS_PER_WEEK):
        slow = 0.95 * slow + rng.gauss(0.0, 0.02)
        fast = 0.3 * fast + rng.gauss(0.0, 0.03)
        table.append(max(-NOISE_LIMIT, min(NOISE_LIMIT, slow + fast)))
    return table


class PeriodicCurve:
    """A weekly-periodic function, linear between knots ``KNOT_S`` apart, with its exact integral in O(1)."""

    def __init__(self, values: list[float]) -> None:
        self.values = values
        n = len(values)
        self._trapezoids = [0.0]  # running sum of the trapezoids of whole knot intervals
        for k in range(n):
            self._trapezoids.append(self._trapezoids[-1] + (values[k] + values[(k + 1) % n]) / 2)

    def at(self, ts: float) -> float:
        x = ts / KNOT_S
        k = math.floor(x)
        frac = x - k
        n = len(self.values)
        return (1 - frac) * self.values[k % n] + frac * self.values[(k + 1) % n]

    def antiderivative(self, ts: float) -> float:
        """∫ from the epoch to ``ts`` (value-seconds)."""
        x = ts / KNOT_S
        k = math.floor(x)
        n = len(self.values)
        weeks, rest = divmod(k, n)
        whole = weeks * self._trapezoids[n] + self._trapezoids[rest]
        return KNOT_S * (whole + (x - k) * (self.values[rest] + self.at(ts)) / 2)

    def integral(self, start: float, stop: float) -> float:
        """∫ from ``start`` to ``stop``; both shifted back by the same whole weeks, to keep float precision."""
        base = math.floor(start / S_PER_WEEK) * S_PER_WEEK
        return self.antiderivative(stop - base) - self.antiderivative(start - base)


@dataclass(frozen=True)
class SimulatedGpu:
    model: GpuModel
    uuid: str
    index: int
    power_scale: float  # this card's share of its model's power span, 0.95..1.0 (silicon varies)


class SimulatedBackend:
    """Simulated GPUs of one host; see the module docstring. Every GPU of the host carries the host's load."""

    def __init__(
        self,
        models: list[GpuModel],
        *,
        seed: int = 0,
        hostname: str = "sim",
        resets_every_s: int | None = None,
        pattern: str = "steady",
    ) -> None:
        node = random.Random(f"{seed}:{hostname}")
        self._boot_id = str(uuid.UUID(int=node.getrandbits(128), version=4))
        self._origin = DRIVER_ORIGIN_S - node.randrange(365 * 24) * S_PER_HOUR
        self._resets_every_s = resets_every_s
        self.gpus = [self._gpu(m, i, random.Random(f"{seed}:{hostname}:{i}")) for i, m in enumerate(models)]
        self._pattern, self._scale, self._noise_rng = PATTERNS[pattern], node.uniform(0.9, 1.0), node

    @functools.cached_property
    def load(self) -> PeriodicCurve:
        """The node's load, tabulated on first use (the inventory alone needs no table)."""
        return PeriodicCurve(weekly_load_table(self._pattern, self._scale, _noise_table(self._noise_rng)))

    @functools.cached_property
    def _shape(self) -> dict[str, PeriodicCurve]:
        """``load ** exponent`` per GPU model, at the same knots (power is not linear in load)."""
        models = {gpu.model for gpu in self.gpus}
        return {m.key: PeriodicCurve([v**m.power.exponent for v in self.load.values]) for m in models}

    @staticmethod
    def _gpu(model: GpuModel, index: int, rng: random.Random) -> SimulatedGpu:
        gpu_uuid = f"GPU-{uuid.UUID(int=rng.getrandbits(128), version=4)}"
        return SimulatedGpu(model, gpu_uuid, index, rng.uniform(0.95, 1.0))

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
        """Load (0..1) at ``ts``: linear between knots."""
        return self.load.at(ts)

    def load_integral(self, gpu: SimulatedGpu, start: float, ts: float) -> float:
        """Exact ∫ load dt from ``start`` to ``ts`` (load-seconds)."""
        return self.load.integral(start, ts)

    def power_w(self, gpu: SimulatedGpu, ts: float) -> float:
        """Idle plus the card's span times load ** exponent, the latter linear between knots."""
        power = gpu.model.power
        return power.idle_w + (power.full_w - power.idle_w) * gpu.power_scale * self._shape[gpu.model.key].at(ts)

    def energy_j(self, gpu: SimulatedGpu, ts: float) -> float:
        """Exact ∫ power dt since the driver was loaded: what NVML's counter would say."""
        start = self.driver_loaded_at(ts)
        power = gpu.model.power
        span_w = (power.full_w - power.idle_w) * gpu.power_scale
        return power.idle_w * (ts - start) + span_w * self._shape[gpu.model.key].integral(start, ts)

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
