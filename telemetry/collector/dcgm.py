"""The dcgm-exporter backend: this host's GPUs read from NVIDIA dcgm-exporter's ``/metrics`` instead of NVML.

Each sample tick reads every configured exporter's page once (one HTTP GET
each, in parallel, with a short timeout and no retry: the next tick is the
retry), parses it with :mod:`.promtext` and gives one :class:`~.backend.GpuReading`
per GPU it shows. Field mapping (dcgm-exporter's names, its units, the reading's):

=====================================  ==========================  ==================================
dcgm-exporter                          unit                        reading
=====================================  ==========================  ==================================
``DCGM_FI_DEV_POWER_USAGE``            W (gauge)                   ``power_w``
``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``  mJ since boot (counter)  ``energy_j`` (mJ / 1000)
``DCGM_FI_DEV_GPU_UTIL``               % (gauge)                   ``util_pct``
``DCGM_FI_DEV_MEM_COPY_UTIL``          % (gauge)                   ``mem_util_pct``
``DCGM_FI_DEV_FB_USED`` + ``_RESERVED``  MiB (gauges)              ``mem_used_bytes`` (x 2^20)
``DCGM_FI_DEV_GPU_TEMP``               °C (gauge)                  ``temp_c``
=====================================  ==========================  ==================================

A GPU is one ``UUID`` label; ``gpu`` is its index, ``modelName`` its name (the
NVML device name: the server maps it to a hardware profile, as it does NVML's),
``Hostname`` (older releases) or ``hostname`` the exporter's host, and
``DCGM_FI_DRIVER_VERSION``, where exported, the driver. Memory used is NVML's
``used`` (allocated plus reserved): dcgm-exporter splits it into ``FB_USED`` and
``FB_RESERVED``, so both must be exported (the default counters CSV has no
``FB_RESERVED``: add it; ``FB_FREE`` is not carried by the wire). A metric the
exporter is configured without, a value DCGM marks blank (its ``..._BLANK``
sentinels: unsupported, not found, no permission), NaN, or a malformed line is
``None``: missing, never zero. With MIG, a metric exported only per GPU instance
(series with a ``GPU_I_ID`` label) is missing too: the collector reads whole GPUs.

A failed scrape (connection refused, a non-200 answer, a timeout, a page with no
DCGM GPU metric in it) gives that exporter's GPUs no reading that tick, never a
zero (nor a row of nulls, which would cut the energy counter's chain): the
server sees a gap, and the counter read when the exporter answers again proves
the whole energy across it (counted in full while the gap is short, bridged when
longer). It is logged when the exporter starts failing (or fails another way: a
500, then a timeout), not at every tick, and once when it is readable again. A
GPU that leaves the exporter's page is treated alike.

Epochs: dcgm-exporter's energy counter is NVML's (millijoules since the driver
loaded), so its epoch follows :mod:`.nvml`'s rules exactly: ``<boot id>/<driver
version>`` (the boot id of this host: run the collector on the exporter's host),
and a counter that goes down starts a new epoch (``@<unix seconds>``, in the
:class:`~.epochs.EpochBook`, across collector restarts too). A host switched
from NVML to dcgm-exporter keeps its epochs when the exporter exports the
driver version.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from . import promtext
from .backend import GpuIdentity, GpuReading
from .epochs import EpochBook
from .nvml import read_boot_id
from .serving import fetch_text
from .units import energy_j_from_nvml_mj

log = logging.getLogger(__name__)

POWER = "DCGM_FI_DEV_POWER_USAGE"
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
MEM_COPY_UTIL = "DCGM_FI_DEV_MEM_COPY_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"
GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
READ_METRICS = (POWER, ENERGY, GPU_UTIL, MEM_COPY_UTIL, FB_USED, FB_RESERVED, GPU_TEMP)
HOSTNAME_LABELS = ("hostname", "Hostname")  # dcgm-exporter's releases spell it both ways
BYTES_PER_MIB = 1024**2
# DCGM's blank sentinels (dcgm_structs.h): DCGM_FP64_BLANK is 2^47 (and 2^47 + 1, 2, 3 for not found,
# not supported, no permission); DCGM_INT64_BLANK is 0x7ffffffffffffff0 (and the next three).
DCGM_FP64_BLANK = 140_737_488_355_328.0
DCGM_INT64_BLANK = float(0x7FFF_FFFF_FFFF_FFF0)
# Integer fields use the int64 sentinels; power (a double) the fp64 ones.
_BLANK_AT = {POWER: DCGM_FP64_BLANK}
DEFAULT_TIMEOUT_S = 2.0

Fetch = Callable[[str, float], str]


@dataclass
class _Gpu:
    uuid: str
    index: int
    name: str
    exporter: str
    driver: str
    energy_counter_supported: bool
    failed: bool = False


@dataclass
class _Exporter:
    url: str
    failing: str | None = None  # how its last scrape failed (an exception's class, "garbage"); None: it did not
    hostname: str | None = None
    warned: set[str] = field(default_factory=set)


def _value(sample: promtext.Sample | None, metric: str) -> float | None:
    """The sample's value, or ``None`` when absent, NaN, infinite, negative or one of DCGM's blanks."""
    if sample is None or not math.isfinite(sample.value) or sample.value < 0:
        return None
    return None if sample.value >= _BLANK_AT.get(metric, DCGM_INT64_BLANK) else sample.value


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


class DcgmExporterBackend:
    """Reads the GPUs dcgm-exporter shows at ``urls``; see the module docstring for the rules."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        book: EpochBook | None = None,
        hostname: str | None = None,
        boot_id: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        fetch: Fetch = fetch_text,
    ) -> None:
        self._exporters = [_Exporter(url) for url in urls]
        self._book = book if book is not None else EpochBook()
        self._hostname = hostname
        self._boot_id = boot_id if boot_id is not None else read_boot_id()
        self._timeout_s = timeout_s
        self._fetch = fetch
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(urls)), thread_name_prefix="dcgm")
        self._gpus: dict[str, _Gpu] = {}  # by UUID, in the order first seen
        self._learn(self._scrape_all())  # the GPUs known from the start (endpoints are mapped to them)
        log.info("dcgm-exporter: %d GPU(s) at %s", len(self._gpus), ", ".join(urls))

    # --- the backend protocol ---------------------------------------------------------

    def inventory(self) -> list[GpuIdentity]:
        return [self._identity(gpu, None, 0.0) for gpu in self._ordered()]

    def read(self, ts: float) -> list[GpuReading]:
        pages = self._scrape_all()
        self._learn(pages)
        readings = (self._read(gpu, pages.get(gpu.exporter), ts) for gpu in self._ordered())
        return [reading for reading in readings if reading is not None]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # --- scraping ---------------------------------------------------------------------

    def _scrape_all(self) -> dict[str, dict[str, dict[str, promtext.Sample]] | None]:
        """Per exporter URL, its samples by UUID and metric; ``None`` for an exporter that failed."""
        pages = self._pool.map(self._scrape, self._exporters)
        return {exporter.url: page for exporter, page in zip(self._exporters, pages, strict=True)}

    def _scrape(self, exporter: _Exporter) -> dict[str, dict[str, promtext.Sample]] | None:
        try:
            exposition = promtext.parse(self._fetch(exporter.url, self._timeout_s))
        except (OSError, ValueError) as exc:  # URLError, HTTPError (a 500), timeouts are OSErrors
            self._failed(exporter, type(exc).__name__, f"cannot scrape {exporter.url}: {exc}")
            return None
        page = _by_gpu(exposition)
        if not page:
            why = f"{exposition.skipped_lines} malformed line(s), " if exposition.skipped_lines else ""
            message = f"{exporter.url}: no DCGM GPU metric in the page ({why}not dcgm-exporter?)"
            self._failed(exporter, "garbage", message)
            return None
        if exposition.skipped_lines:
            self._warn_once(exporter, "malformed", f"{exporter.url}: malformed lines skipped (their fields are null)")
        if exporter.failing:
            log.warning("%s is readable again", exporter.url)
        exporter.failing = None
        self._check_host(exporter, page)
        return page

    def _failed(self, exporter: _Exporter, kind: str, why: str) -> None:
        """Logged when the exporter starts failing, or fails another way (a 500, then a timeout), not every tick."""
        (log.debug if exporter.failing == kind else log.error)("%s; its GPUs are not sampled until it answers", why)
        exporter.failing = kind

    def _warn_once(self, exporter: _Exporter, key: str, message: str) -> None:
        if key not in exporter.warned:
            exporter.warned.add(key)
            log.warning("%s (warned once)", message)

    def _check_host(self, exporter: _Exporter, page: dict[str, dict[str, promtext.Sample]]) -> None:
        names = {name for samples in page.values() if (name := _hostname(samples)) is not None}
        if names and exporter.hostname is None:
            exporter.hostname = min(names)
            if self._hostname is not None and exporter.hostname != self._hostname:
                log.warning(
                    "%s reports host %r, this collector is %r: its GPUs are sent as this node's",
                    exporter.url, exporter.hostname, self._hostname,
                )  # fmt: skip
        for metric in READ_METRICS:
            if not any(metric in samples for samples in page.values()):
                self._warn_once(
                    exporter, metric, f"{exporter.url} does not export {metric}: {_LOST_BY[metric]} reported missing"
                )

    # --- GPUs -------------------------------------------------------------------------

    def _learn(self, pages: dict[str, dict[str, dict[str, promtext.Sample]] | None]) -> None:
        for url, page in pages.items():
            for uuid, samples in (page or {}).items():
                known = self._gpus.get(uuid)
                if known is None:
                    self._gpus[uuid] = _describe(uuid, samples, url)
                    log.info("dcgm-exporter GPU %s: %s at %s", uuid, self._gpus[uuid].name, url)
                elif known.exporter != url:
                    self._warn_once(self._exporter(url), f"dup:{uuid}", f"{url} also shows {uuid}: read from one only")

    def _exporter(self, url: str) -> _Exporter:
        return next(e for e in self._exporters if e.url == url)

    def _ordered(self) -> list[_Gpu]:
        return sorted(self._gpus.values(), key=lambda gpu: (gpu.index, gpu.uuid))

    def _identity(self, gpu: _Gpu, energy_j: float | None, ts: float) -> GpuIdentity:
        epoch = self._book.epoch(f"gpu:{gpu.uuid}", f"{self._boot_id}/{gpu.driver}", (energy_j,), ts)
        return GpuIdentity(gpu.uuid, gpu.index, gpu.name, gpu.energy_counter_supported, epoch)

    def _read(self, gpu: _Gpu, page: dict[str, dict[str, promtext.Sample]] | None, ts: float) -> GpuReading | None:
        """The GPU's reading, or ``None`` (no sample this tick) when its exporter failed or no longer shows it."""
        if page is None:
            return None  # the exporter's failure is logged, once, for all of its GPUs
        samples = page.get(gpu.uuid)
        if samples is None:
            self._mark(gpu, failed=True, why="not in its exporter's page")
            return None
        self._mark(gpu, failed=False, why="")
        fields = _fields(samples, energy_counter=gpu.energy_counter_supported)
        return GpuReading(self._identity(gpu, fields["energy_j"], ts), ts, **fields)

    def _mark(self, gpu: _Gpu, *, failed: bool, why: str) -> None:
        if failed and not gpu.failed:
            log.error("GPU %d (%s): %s; not sampled until it comes back", gpu.index, gpu.uuid, why)
        elif gpu.failed and not failed:
            log.warning("GPU %d (%s) is readable again", gpu.index, gpu.uuid)
        gpu.failed = failed


_LOST_BY = {
    POWER: "power is",
    ENERGY: "the energy counter is",
    GPU_UTIL: "GPU utilization is",
    MEM_COPY_UTIL: "memory utilization is",
    FB_USED: "memory used is",
    FB_RESERVED: "memory used (allocated plus reserved) is",
    GPU_TEMP: "temperature is",
}


def whole_gpu(labels: dict[str, str]) -> bool:
    """Whether a series with these labels is one whole GPU's (a ``UUID`` and ``gpu``, no MIG ``GPU_I_ID``)."""
    return bool(labels.get("UUID")) and "gpu" in labels and not labels.get("GPU_I_ID")


def gpu_identity_fields(samples: dict[str, promtext.Sample]) -> tuple[int, str, str, bool]:
    """(index, name, driver version, energy counter supported) of the GPU whose samples these are, by metric."""
    gpu = _describe("", samples, "")
    return gpu.index, gpu.name, gpu.driver, gpu.energy_counter_supported


def reading_fields(samples: dict[str, promtext.Sample], *, energy_counter: bool) -> dict[str, Any]:
    """A reading's fields from one GPU's samples by metric name: the mapping in the module docstring."""
    return _fields(samples, energy_counter=energy_counter)


def _by_gpu(exposition: promtext.Exposition) -> dict[str, dict[str, promtext.Sample]]:
    """The page's whole-GPU DCGM samples, by GPU UUID then metric name (the first of each, if one repeats:
    one series per pod sharing the GPU). A MIG instance's series (``GPU_I_ID``) is a part of the GPU, not it."""
    page: dict[str, dict[str, promtext.Sample]] = {}
    for sample in exposition.samples:
        if whole_gpu(sample.labels) and sample.name.startswith("DCGM_FI_"):
            page.setdefault(sample.labels["UUID"], {}).setdefault(sample.name, sample)
    return page


def _hostname(samples: dict[str, promtext.Sample]) -> str | None:
    labels = next(iter(samples.values())).labels
    return next((labels[name] for name in HOSTNAME_LABELS if labels.get(name)), None)


def _describe(uuid: str, samples: dict[str, promtext.Sample], url: str) -> _Gpu:
    labels = next(iter(samples.values())).labels
    index = labels.get("gpu", "")
    drivers = (s.labels.get("DCGM_FI_DRIVER_VERSION") for s in samples.values())
    driver = next((d for d in drivers if d), None)
    return _Gpu(
        uuid=uuid,
        index=int(index) if index.isdigit() else 0,
        name=labels.get("modelName") or "unknown NVIDIA GPU",
        exporter=url,
        driver=driver or "unknown-driver",
        # Without the counter the server integrates power instead (as for a GPU whose NVML has none).
        energy_counter_supported=_value(samples.get(ENERGY), ENERGY) is not None,
    )


def _fields(samples: dict[str, promtext.Sample], *, energy_counter: bool) -> dict[str, Any]:
    """The reading's fields; the energy counter only for a GPU declared with one (as NVML's backend does)."""

    def value(metric: str) -> float | None:
        return _value(samples.get(metric), metric)

    energy_mj = value(ENERGY) if energy_counter else None
    used_mib, reserved_mib = value(FB_USED), value(FB_RESERVED)
    return {
        "power_w": value(POWER),
        "energy_j": None if energy_mj is None else energy_j_from_nvml_mj(round(energy_mj)),
        "util_pct": _int(value(GPU_UTIL)),
        "mem_util_pct": _int(value(MEM_COPY_UTIL)),
        "mem_used_bytes": None
        if used_mib is None or reserved_mib is None
        else round((used_mib + reserved_mib) * BYTES_PER_MIB),
        "temp_c": _int(value(GPU_TEMP)),
    }
