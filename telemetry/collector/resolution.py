"""``--resolution``: GPU readings averaged on the host over windows of that many seconds.

A window is right-closed on the Unix-seconds grid: ``((k-1) x R, k x R]``, so
with whole-second sampling the last reading of a window falls on its end, and
every hour boundary (a multiple of R when R divides 3600) has a sample. Each
window becomes one reading per GPU and epoch:

* ``ts`` and ``energy_j``: the window's last reading, as read. Energy stays exact:
  the server takes counter deltas, and the counter at the window's end is the
  counter, whatever happened inside the window.
* ``power_w``, ``util_pct``, ``mem_util_pct``, ``mem_used_bytes``, ``temp_c``: the
  mean of the readings that have the field (integers rounded); ``None`` if none has it.

A new epoch (the energy counter restarted) closes the open window at once, so
the old counter's last value is sent before the new one. A window is sent once a
reading of a later window arrives, or at once when a reading falls on its end.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .backend import GpuIdentity, GpuReading

AVERAGED_FIELDS = ("power_w", "util_pct", "mem_util_pct", "mem_used_bytes", "temp_c")
INTEGER_FIELDS = frozenset({"util_pct", "mem_util_pct", "mem_used_bytes", "temp_c"})
_EPSILON_S = 1e-6  # timestamps are rounded to the millisecond on the wire


@dataclass
class _Window:
    index: int
    gpu: GpuIdentity
    readings: list[GpuReading] = field(default_factory=list)


def window_index(ts: float, resolution_s: float) -> int:
    """The window ``((k-1) x R, k x R]`` that ``ts`` falls in: ``k``."""
    return math.ceil(ts / resolution_s - _EPSILON_S)


def average(readings: list[GpuReading]) -> GpuReading:
    """One reading for a window: the last reading's time and energy counter, the mean of the rest."""
    last = readings[-1]
    means: dict[str, Any] = {}
    for name in AVERAGED_FIELDS:
        values = [value for r in readings if (value := getattr(r, name)) is not None]
        mean = math.fsum(values) / len(values) if values else None
        means[name] = round(mean) if mean is not None and name in INTEGER_FIELDS else mean
    error = last.error if all(r.error for r in readings) else None
    return replace(last, error=error, **means)


class GpuAverager:
    """Turns per-tick readings into one averaged reading per GPU per window of ``resolution_s``."""

    def __init__(self, resolution_s: float) -> None:
        if resolution_s <= 0:
            raise ValueError("the resolution must be positive")
        self.resolution_s = resolution_s
        self._open: dict[str, _Window] = {}  # GPU UUID -> its window being filled

    def add(self, readings: Iterable[GpuReading]) -> list[GpuReading]:
        """Add one tick's readings; return the averaged readings of the windows they completed."""
        done: list[GpuReading] = []
        for reading in readings:
            index = window_index(reading.ts, self.resolution_s)
            window = self._open.get(reading.gpu.uuid)
            if window is not None and (window.index != index or window.gpu != reading.gpu):
                done.append(average(self._open.pop(reading.gpu.uuid).readings))
            window = self._open.setdefault(reading.gpu.uuid, _Window(index, reading.gpu))
            window.readings.append(reading)
            if abs(index * self.resolution_s - reading.ts) < _EPSILON_S:  # on the window's end
                done.append(average(self._open.pop(reading.gpu.uuid).readings))
        return done

    def flush(self) -> list[GpuReading]:
        """The open windows, averaged as they are (on stop, so nothing sampled is lost)."""
        done = [average(window.readings) for window in self._open.values()]
        self._open.clear()
        return done
