"""A stand-in for the ``pynvml`` module, scripted per scenario, injected into the NVML backend."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

ERROR_NAMES = (
    "NotSupported",
    "FunctionNotFound",
    "NoPermission",
    "GpuIsLost",
    "LibraryNotFound",
    "DriverNotLoaded",
    "Unknown",
)


@dataclass
class FakeGpu:
    """One GPU. A field's value may be an error name (``"NotSupported"``): reading it raises that error."""

    uuid: str
    name: Any = "NVIDIA H100 80GB HBM3"
    power_mw: Any = 412_345
    energy_mj: Any = 123_456_789
    util: Any = field(default_factory=lambda: types.SimpleNamespace(gpu=97, memory=41))
    memory: Any = field(
        default_factory=lambda: types.SimpleNamespace(total=85_899_345_920, free=1, used=68_719_476_736)
    )
    temp_c: Any = 61
    lost: bool = False  # every call raises NVMLError_GpuIsLost


def fake_pynvml(gpus: list[FakeGpu], *, init_error: str | None = None, driver: str = "550.54.15") -> Any:
    module: Any = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    module.NVMLError = NVMLError
    for name in ERROR_NAMES:
        setattr(module, f"NVMLError_{name}", type(f"NVMLError_{name}", (NVMLError,), {}))
    module.NVML_TEMPERATURE_GPU = 0
    module.calls = []
    module.shutdown = False

    def fail(name: str) -> None:
        raise getattr(module, f"NVMLError_{name}")(name)

    def read(handle: int, attribute: str) -> Any:
        gpu = gpus[handle]
        module.calls.append((handle, attribute))
        if gpu.lost:
            fail("GpuIsLost")
        value = getattr(gpu, attribute)
        if isinstance(value, str) and value in ERROR_NAMES:
            fail(value)
        return value

    def nvml_init() -> None:
        if init_error:
            fail(init_error)

    def temperature(handle: int, sensor: int) -> Any:
        assert sensor == module.NVML_TEMPERATURE_GPU
        return read(handle, "temp_c")

    def shutdown() -> None:
        module.shutdown = True

    module.nvmlInit = nvml_init
    module.nvmlShutdown = shutdown
    module.nvmlSystemGetDriverVersion = lambda: driver
    module.nvmlDeviceGetCount = lambda: len(gpus)
    module.nvmlDeviceGetHandleByIndex = lambda index: index
    module.nvmlDeviceGetUUID = lambda handle: read(handle, "uuid")
    module.nvmlDeviceGetName = lambda handle: read(handle, "name")
    module.nvmlDeviceGetPowerUsage = lambda handle: read(handle, "power_mw")
    module.nvmlDeviceGetTotalEnergyConsumption = lambda handle: read(handle, "energy_mj")
    module.nvmlDeviceGetUtilizationRates = lambda handle: read(handle, "util")
    module.nvmlDeviceGetMemoryInfo = lambda handle: read(handle, "memory")
    module.nvmlDeviceGetTemperature = temperature
    return module
