"""The NVML backend: the only module that imports ``pynvml`` (lazily, in :func:`load_pynvml`).

Every NVML call goes through :class:`NvmlGateway`, which returns ``None`` for a
field the GPU does not report (not supported, no permission, no data yet)
instead of raising, so an old or consumer GPU simply has ``null`` fields. A GPU
that fails as a whole (``GpuIsLost``, ``GpuNotFound``, ``ResetRequired``) gives a
reading with every field ``None`` and ``error`` set, is logged once when it
fails and once when it comes back, and never stops the other GPUs.

Epoch of a GPU's energy counter (NVML counts millijoules since the driver was
loaded). NVML does not expose the driver's load time, so the epoch is the
best stand-in: ``<boot id>/<driver version>``, where the boot id
(``/proc/sys/kernel/random/boot_id``) changes with every reboot and the driver
version with every upgrade; a reload without either is caught by the
:class:`~.epochs.EpochBook`, which sees the counter go down (also across
collector restarts) and appends ``@<unix seconds>`` of the first reading after
the reset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from .backend import GpuIdentity, GpuReading
from .epochs import EpochBook
from .units import energy_j_from_nvml_mj, power_w_from_nvml_mw

log = logging.getLogger(__name__)

BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")
# The GPU cannot report this field (now or ever): the field is None.
UNSUPPORTED_ERRORS = (
    "NVMLError_NotSupported",
    "NVMLError_FunctionNotFound",
    "NVMLError_NoPermission",
    "NVMLError_NoData",
    "NVMLError_NotReady",
)
# The whole GPU is gone: every field is None and the GPU is reported.
GPU_FAILED_ERRORS = ("NVMLError_GpuIsLost", "NVMLError_GpuNotFound", "NVMLError_ResetRequired")


class NvmlUnavailable(RuntimeError):
    """NVML cannot be loaded or initialised on this host; ``str()`` says why and what to do."""


class GpuFailed(Exception):
    """One GPU failed as a whole (lost, fell off the bus, needs a reset)."""


def load_pynvml() -> ModuleType:
    try:
        import pynvml  # imported lazily: only this backend needs it
    except ImportError as exc:
        raise NvmlUnavailable(
            "the pynvml module is not installed (pip install -r telemetry/collector/requirements.txt); "
            "use --simulate for a demo without GPUs"
        ) from exc
    return pynvml


def read_boot_id(path: Path = BOOT_ID_PATH) -> str:
    try:
        return path.read_text().strip() or "unknown-boot"
    except OSError:
        log.warning("cannot read %s: GPU epochs will not see reboots", path)
        return "unknown-boot"


def _error_classes(nvml: ModuleType, names: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    return tuple(cls for name in names if isinstance(cls := getattr(nvml, name, None), type))


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else (str(value) if value is not None else None)


class NvmlGateway:
    """Calls NVML: an unsupported field comes back ``None``; a failed GPU raises :class:`GpuFailed`."""

    def __init__(self, nvml: ModuleType) -> None:
        self.nvml = nvml
        self._base_error: type[BaseException] = nvml.NVMLError
        self._unsupported = _error_classes(nvml, UNSUPPORTED_ERRORS)
        self._failed = _error_classes(nvml, GPU_FAILED_ERRORS)
        self._warned: set[str] = set()

    def call(self, function: str, *args: Any) -> Any | None:
        try:
            return getattr(self.nvml, function)(*args)
        except self._failed as exc:
            raise GpuFailed(f"{function}: {exc!r}") from exc
        except self._unsupported:
            return None
        except self._base_error as exc:
            self._warn_once(function, exc)
            return None

    def _warn_once(self, function: str, exc: BaseException) -> None:
        if function not in self._warned:
            self._warned.add(function)
            log.warning("%s failed (%r); the field is reported as null", function, exc)


@dataclass
class _Gpu:
    handle: Any
    uuid: str
    index: int
    name: str
    energy_counter_supported: bool
    failed: bool = False


class NvmlBackend:
    """Reads every GPU of this host through NVML; see the module docstring for the rules."""

    def __init__(self, *, nvml: ModuleType | None = None, book: EpochBook | None = None, boot_id: str | None = None):
        self._gw = NvmlGateway(nvml if nvml is not None else load_pynvml())
        self._init()
        self._book = book if book is not None else EpochBook()
        driver = _text(self._gw.call("nvmlSystemGetDriverVersion")) or "unknown-driver"
        self._epoch_base = f"{boot_id if boot_id is not None else read_boot_id()}/{driver}"
        self._temperature_sensor = getattr(self._gw.nvml, "NVML_TEMPERATURE_GPU", 0)
        self._gpus = self._discover()

    def _init(self) -> None:
        try:
            self._gw.nvml.nvmlInit()
        except self._gw.nvml.NVMLError as exc:
            raise NvmlUnavailable(
                f"NVML could not be initialised ({exc}); is the NVIDIA driver installed and loaded? "
                "Use --simulate for a demo without GPUs"
            ) from exc

    def _discover(self) -> list[_Gpu]:
        count = self._gw.call("nvmlDeviceGetCount") or 0
        gpus = [gpu for index in range(count) if (gpu := self._describe(index)) is not None]
        log.info("NVML: %d of %d GPUs readable (%s)", len(gpus), count, self._epoch_base)
        return gpus

    def _describe(self, index: int) -> _Gpu | None:
        try:
            handle = self._gw.call("nvmlDeviceGetHandleByIndex", index)
            uuid = _text(self._gw.call("nvmlDeviceGetUUID", handle))
            name = _text(self._gw.call("nvmlDeviceGetName", handle)) or "unknown NVIDIA GPU"
            energy = self._gw.call("nvmlDeviceGetTotalEnergyConsumption", handle)
        except GpuFailed as exc:
            log.error("GPU %d cannot be read and is left out: %s", index, exc)
            return None
        if handle is None or not uuid:
            log.error("GPU %d has no handle or UUID and is left out", index)
            return None
        return _Gpu(handle, uuid, index, name, energy_counter_supported=energy is not None)

    def inventory(self) -> list[GpuIdentity]:
        return [self._identity(gpu, None, 0.0) for gpu in self._gpus]

    def read(self, ts: float) -> list[GpuReading]:
        return [self._read(gpu, ts) for gpu in self._gpus]

    def close(self) -> None:
        try:
            self._gw.nvml.nvmlShutdown()
        except self._gw.nvml.NVMLError as exc:
            log.debug("nvmlShutdown: %r", exc)

    def _identity(self, gpu: _Gpu, energy_j: float | None, ts: float) -> GpuIdentity:
        epoch = self._book.epoch(f"gpu:{gpu.uuid}", self._epoch_base, (energy_j,), ts)
        return GpuIdentity(gpu.uuid, gpu.index, gpu.name, gpu.energy_counter_supported, epoch)

    def _read(self, gpu: _Gpu, ts: float) -> GpuReading:
        try:
            fields = self._fields(gpu)
        except GpuFailed as exc:
            self._mark(gpu, failed=True, why=str(exc))
            return GpuReading(self._identity(gpu, None, ts), ts, error=str(exc))
        self._mark(gpu, failed=False, why="")
        return GpuReading(self._identity(gpu, fields["energy_j"], ts), ts, **fields)

    def _fields(self, gpu: _Gpu) -> dict[str, Any]:
        call, handle = self._gw.call, gpu.handle
        energy_mj = call("nvmlDeviceGetTotalEnergyConsumption", handle) if gpu.energy_counter_supported else None
        utilization = call("nvmlDeviceGetUtilizationRates", handle)
        memory = call("nvmlDeviceGetMemoryInfo", handle)
        return {
            "power_w": _maybe(power_w_from_nvml_mw, call("nvmlDeviceGetPowerUsage", handle)),
            "energy_j": _maybe(energy_j_from_nvml_mj, energy_mj),
            "util_pct": _maybe(int, getattr(utilization, "gpu", None)),
            "mem_util_pct": _maybe(int, getattr(utilization, "memory", None)),
            "mem_used_bytes": _maybe(int, getattr(memory, "used", None)),
            "temp_c": _maybe(int, call("nvmlDeviceGetTemperature", handle, self._temperature_sensor)),
        }

    def _mark(self, gpu: _Gpu, *, failed: bool, why: str) -> None:
        if failed and not gpu.failed:
            log.error("GPU %d (%s) failed: %s; its samples are null until it comes back", gpu.index, gpu.uuid, why)
        elif gpu.failed and not failed:
            log.warning("GPU %d (%s) is readable again", gpu.index, gpu.uuid)
        gpu.failed = failed


def _maybe(convert: Callable[[Any], Any], value: Any | None) -> Any | None:
    return None if value is None else convert(value)
