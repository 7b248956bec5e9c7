"""A stand-in for NVIDIA dcgm-exporter's ``/metrics``, served by :class:`~tests.helpers.stub_server.StubServer`.

The page is written as dcgm-exporter writes it (its ``etc/default-counters.csv``
HELP texts and types, ``# HELP``/``# TYPE`` before each metric's lines, labels
``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname`` (or
``hostname``: both spellings are in the field) and ``DCGM_FI_DRIVER_VERSION``,
optionally ``container``/``namespace``/``pod``, power printed ``%f``, counters as
integers, an unsupported field as DCGM's blank sentinel).

Its energy counter (mJ since boot) advances by a fixed step at every request,
answered or not, as a real GPU's does between scrapes; a reset restarts it from
the step. It keeps its own truth: for every counter value it served, the energy
(mJ) accrued since the first page it served, so a test can compare what the
collector reports with what the GPU "used".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tests.helpers.stub_server import Answer, Request

# (metric, Prometheus type, HELP) as in dcgm-exporter's etc/default-counters.csv, plus FB_RESERVED.
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
)
DCGM_INT64_NOT_SUPPORTED = 9223372036854775794  # what dcgm-exporter prints for a field the GPU lacks
TEXT = {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}


@dataclass
class StandInGpu:
    uuid: str
    index: int
    model_name: str = "NVIDIA H100 80GB HBM3"
    power_w: float = 412.345
    step_mj: int = 41_234  # mJ added per request (41.234 J: dropping the mJ would be off by 0.6 %)
    energy_mj: int = 31_035_686_671  # since boot
    util_pct: int = 87
    mem_copy_util_pct: int = 41
    fb_used_mib: int = 61_440
    fb_free_mib: int = 19_280
    fb_reserved_mib: int = 529
    temp_c: int = 61
    accrued_mj: int = 0
    served: dict[int, int] = field(default_factory=dict)  # counter value served (mJ) -> accrued mJ

    def values(self) -> dict[str, float | int]:
        return {
            "DCGM_FI_DEV_SM_CLOCK": 1980,
            "DCGM_FI_DEV_MEM_CLOCK": 2619,
            "DCGM_FI_DEV_MEMORY_TEMP": DCGM_INT64_NOT_SUPPORTED,
            "DCGM_FI_DEV_GPU_TEMP": self.temp_c,
            "DCGM_FI_DEV_POWER_USAGE": self.power_w,
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": self.energy_mj,
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0,
            "DCGM_FI_DEV_GPU_UTIL": self.util_pct,
            "DCGM_FI_DEV_MEM_COPY_UTIL": self.mem_copy_util_pct,
            "DCGM_FI_DEV_ENC_UTIL": 0,
            "DCGM_FI_DEV_DEC_UTIL": 0,
            "DCGM_FI_DEV_XID_ERRORS": 0,
            "DCGM_FI_DEV_FB_FREE": self.fb_free_mib,
            "DCGM_FI_DEV_FB_USED": self.fb_used_mib,
            "DCGM_FI_DEV_FB_RESERVED": self.fb_reserved_mib,
        }

    def advance(self, *, reset: bool) -> None:
        self.energy_mj = self.step_mj if reset else self.energy_mj + self.step_mj
        self.accrued_mj += self.step_mj

    def truth_j(self, first_mj: int, last_mj: int) -> float:
        """The energy (J) the GPU used between two counter values this stand-in served."""
        return (self.served[last_mj] - self.served[first_mj]) / 1000


@dataclass
class DcgmExporterStandIn:
    gpus: list[StandInGpu]
    hostname: str = "gpu-node-1"
    hostname_label: str = "Hostname"  # dcgm-exporter before 3.3.x; "hostname" later
    driver_version: str | None = "550.54.15"
    kubernetes: bool = False  # container, namespace, pod labels (an empty pod mapping)
    without: set[str] = field(default_factory=set)  # fields the exporter is configured without
    mode: str = "ok"  # ok | error (500) | garbage | slow
    slow_s: float = 3.0
    resets: int = 0  # the next requests that reset the counters (driver reload, reboot)
    requests: int = 0

    def answer(self, _request: Request) -> Answer:
        self.requests += 1
        reset, self.resets = self.resets > 0, max(0, self.resets - 1)
        for gpu in self.gpus:
            gpu.advance(reset=reset and self.mode == "ok")
        if self.mode == "error":
            return 500, {"Content-Type": "text/plain"}, b"failed to collect metrics: DCGM is not running\n"
        if self.mode == "garbage":
            return 200, TEXT, b'<html><body>502 Bad Gateway</body></html>\nDCGM_FI_DEV_POWER_USAGE{gpu="0" 12 x\n'
        if self.mode == "slow":
            time.sleep(self.slow_s)
        for gpu in self.gpus:
            gpu.served[gpu.energy_mj] = gpu.accrued_mj
        return 200, TEXT, self.page().encode()

    def labels(self, gpu: StandInGpu) -> str:
        parts = [
            f'gpu="{gpu.index}"', f'UUID="{gpu.uuid}"', f'pci_bus_id="00000000:{0x18 + gpu.index:02X}:00.0"',
            f'device="nvidia{gpu.index}"', f'modelName="{gpu.model_name}"', f'{self.hostname_label}="{self.hostname}"',
        ]  # fmt: skip
        if self.driver_version is not None:
            parts.append(f'DCGM_FI_DRIVER_VERSION="{self.driver_version}"')
        if self.kubernetes:
            parts += ['container=""', 'namespace=""', 'pod=""']
        return ",".join(parts)

    def page(self) -> str:
        lines = []
        for name, kind, help_text in FIELDS:
            if name in self.without:
                continue
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
            for gpu in self.gpus:
                value = gpu.values()[name]
                text = f"{value:f}" if isinstance(value, float) else str(value)
                lines.append(f"{name}{{{self.labels(gpu)}}} {text}")
        return "\n".join(lines) + "\n"
