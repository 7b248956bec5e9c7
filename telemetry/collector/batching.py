"""Readings to wire batches: columnar samples with ``gpus`` and ``endpoints`` reference lists.

A value outside what the wire accepts (a broken 6 kW power reading, a
temperature of 255 °C) becomes ``null`` here, with a warning: the server
refuses a whole batch for one bad value, and a refused batch is not retried.
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from . import __version__, wire
from .backend import EndpointIdentity, GpuIdentity, GpuReading, ServingReading

log = logging.getLogger(__name__)

# The wire's own bounds per GPU field (minimum, maximum, integer?): the contract, in one place.
GPU_BOUNDS = wire.GPU_BOUNDS


@dataclass(frozen=True)
class SpoolState:
    """What each batch reports about the collector's spool."""

    dropped_batches: int
    spool_bytes: int


@dataclass(frozen=True)
class Built:
    batch_id: str
    payload: dict[str, Any]
    gpu_rows: int
    serving_rows: int
    first_ts: float | None
    last_ts: float | None

    def encode(self) -> bytes:
        return wire.batch_encode(self.payload)


def _in_bounds(value: Any, low: float, high: float, integer: bool) -> bool:
    if integer:
        return isinstance(value, int) and low <= value <= high
    return isinstance(value, (int, float)) and math.isfinite(value) and low <= value <= high


class BatchBuilder:
    """Collects GPU and serving readings (thread-safe) until :meth:`build` makes a batch of them."""

    def __init__(
        self,
        *,
        hostname: str,
        sample_interval_s: float,
        spool_state: Callable[[], SpoolState],
        max_gpu_rows: int = wire.MAX_GPU_ROWS,
        max_serving_rows: int = wire.MAX_SERVING_ROWS,
    ) -> None:
        self._hostname = hostname[:253]
        self._interval_s = sample_interval_s
        self._spool_state = spool_state
        self._max = (max_gpu_rows, max_serving_rows)
        self._lock = threading.Lock()
        self._reset()
        self._warned: set[str] = set()

    def _reset(self) -> None:
        self._gpus: dict[GpuIdentity, int] = {}
        self._endpoints: dict[EndpointIdentity, int] = {}
        self._gpu_rows = wire.empty_gpu_samples()
        self._serving_rows = wire.empty_serving_samples(optional=True)
        self._node_rows: dict[str, list[Any]] = {"ts": [], "power_w": [], "energy_j": []}
        self._stamped: set[tuple[Any, ...]] = set()  # (series key..., stamp) in this batch

    @property
    def gpu_rows(self) -> int:
        return len(self._gpu_rows["ts"])

    @property
    def serving_rows(self) -> int:
        return len(self._serving_rows["ts"])

    def has_room(self, *, gpu_rows: int = 0, serving_rows: int = 0) -> bool:
        """Whether that many more rows fit in this batch (the wire's row limits)."""
        return self.gpu_rows + gpu_rows <= self._max[0] and self.serving_rows + serving_rows <= self._max[1]

    def add_gpu(self, readings: Iterable[GpuReading]) -> None:
        with self._lock:
            for reading in readings:
                self._add_gpu_row(reading)

    def _first_at(self, key: tuple[Any, ...], where: str) -> bool:
        """Whether ``key`` (a series and its stamp) is new in this batch; a second reading is dropped.

        The server refuses a whole batch with two readings of one series at one
        stamp (one would overwrite the other); a wall clock stepped back can stamp
        a reading where one already is, and dropping it keeps the rest.
        """
        if key not in self._stamped:
            self._stamped.add(key)
            return True
        if where not in self._warned:
            self._warned.add(where)
            log.warning("a second %s reading at %s (clock stepped back?) was dropped (warned once)", where, key[-1])
        return False

    def _add_gpu_row(self, reading: GpuReading) -> None:
        ts = round(reading.ts, 3)
        if not self._first_at((reading.gpu.uuid, ts), "GPU"):
            return
        columns = self._gpu_rows
        columns["gpu"].append(self._gpus.setdefault(reading.gpu, len(self._gpus)))
        columns["ts"].append(ts)
        for name, (low, high, integer) in GPU_BOUNDS.items():
            columns[name].append(self._checked(name, getattr(reading, name), low, high, integer))

    def _checked(self, name: str, value: Any, low: float, high: float, integer: bool) -> Any:
        if value is None or _in_bounds(value, low, high, integer):
            return value
        if name not in self._warned:
            self._warned.add(name)
            log.warning("%s=%r is outside %s..%s; sent as null (warned once per field)", name, value, low, high)
        return None

    def add_serving(self, reading: ServingReading) -> None:
        ts = round(reading.ts, 3)
        with self._lock:
            if not self._first_at((reading.endpoint.url, reading.endpoint.model, ts), "serving"):
                return
            columns = self._serving_rows
            columns["endpoint"].append(self._endpoints.setdefault(reading.endpoint, len(self._endpoints)))
            columns["ts"].append(ts)
            for name in wire.SERVING_COUNTERS_ALL:
                columns[name].append(getattr(reading, name))
            for name in ("ttft_bucket_counts", "itl_bucket_counts"):
                counts = getattr(reading, name)
                columns[name].append(list(counts) if counts is not None else None)
            columns["ttft_sum_s"].append(reading.ttft_sum_s)
            columns["itl_sum_s"].append(reading.itl_sum_s)

    def add_node_meter(self, ts: float, *, method: str, epoch: str, power_w: Any, energy_j: Any) -> None:
        """One reading of the host's meter (``telemetry.collector.hostmeter``) at ``ts``."""
        with self._lock:
            self._node_meter = (method, epoch[:128])
            self._node_rows["ts"].append(round(ts, 3))
            self._node_rows["power_w"].append(self._checked("node power_w", power_w, 0.0, wire.MAX_NODE_POWER_W, False))
            self._node_rows["energy_j"].append(self._checked("node energy_j", energy_j, 0.0, 1.9e16, False))

    def build(self, *, sent_at: float) -> Built | None:
        """The batch of everything added since the last build, or ``None`` if nothing was."""
        with self._lock:
            if not self.gpu_rows and not self.serving_rows:
                return None
            built = self._built(sent_at)
            self._reset()
        return built

    def _built(self, sent_at: float) -> Built:
        batch_id = uuid.uuid4().hex
        state = self._spool_state()
        payload = {
            "version": wire.WIRE_VERSION,
            "batch_id": batch_id,
            "sent_at": round(sent_at, 3),
            "collector": {
                "version": __version__,
                "hostname": self._hostname,
                "dropped_batches": state.dropped_batches,
                "spool_bytes": state.spool_bytes,
                "sample_interval_s": self._interval_s,
            },
            "gpus": [_gpu_ref(gpu) for gpu in self._gpus],
            "gpu_samples": self._gpu_rows,
            "endpoints": [_endpoint_ref(endpoint) for endpoint in self._endpoints],
            "serving_samples": self._serving_rows,
        }
        if self._node_rows["ts"]:
            method, epoch = self._node_meter
            payload["node_meter"] = {"method": method, "epoch": epoch, **self._node_rows}
        stamps = self._gpu_rows["ts"] + self._serving_rows["ts"]
        return Built(batch_id, payload, self.gpu_rows, self.serving_rows, min(stamps), max(stamps))


def _gpu_ref(gpu: GpuIdentity) -> dict[str, Any]:
    return {**asdict(gpu), "uuid": gpu.uuid[:96], "name": gpu.name[:128], "epoch": gpu.epoch[:128]}


def _endpoint_ref(endpoint: EndpointIdentity) -> dict[str, Any]:
    return {
        "url": endpoint.url[:512],
        "kind": endpoint.kind,
        "model": endpoint.model[:256],
        "gpu_uuids": list(endpoint.gpu_uuids),
        "epoch": endpoint.epoch[:128],
        "ttft_bucket_bounds_s": list(endpoint.ttft_bucket_bounds_s),
        "itl_bucket_bounds_s": list(endpoint.itl_bucket_bounds_s),
    }
