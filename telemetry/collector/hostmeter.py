"""The host's own power meter, where it offers one: the node boundary beside NVML's GPU boundary.

Three sources, each read the way its operators read it, and each saying what
it measures (its *boundary*):

- ``ipmi_dcmi``: ``ipmitool dcmi power reading``, the BMC's instantaneous
  reading of the whole node at its power supplies (boundary ``node``);
- ``redfish``: ``PowerControl[0].PowerConsumedWatts`` of a chassis's Power
  resource over the BMC's Redfish HTTP API (boundary ``node``);
- ``rapl``: the CPU packages' cumulative energy counters under
  ``/sys/class/powercap`` (``intel-rapl:N`` with ``name`` ``package-N``), in
  microjoules, wrapping at ``max_energy_range_uj`` (boundary ``cpu_packages``:
  CPUs only, not the node).

A meter is an object with ``read() -> HostReading | None``; ``None`` (and a
logged warning) when one read fails, so a flaky BMC never stops GPU sampling.
Like the NVML energy counter, RAPL is sent raw and cumulative (the server
takes deltas, wrap included as a restart); IPMI and Redfish give power only.
Standard library only: the collector does not import the server.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import shutil
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)

UJ_PER_J = 1_000_000  # RAPL counts microjoules

BOUNDARY_NODE = "node"
BOUNDARY_CPU_PACKAGES = "cpu_packages"
METHODS = {"ipmi_dcmi": BOUNDARY_NODE, "redfish": BOUNDARY_NODE, "rapl": BOUNDARY_CPU_PACKAGES}

_DCMI_READING = re.compile(r"Instantaneous power reading:\s*([0-9]+(?:\.[0-9]+)?)\s*Watts", re.IGNORECASE)


@dataclass(frozen=True)
class HostReading:
    """One reading: ``power_w`` (W, instantaneous) and/or ``energy_j`` (J, cumulative); ``None``: not measured."""

    power_w: float | None = None
    energy_j: float | None = None


class HostMeter(Protocol):
    method: str

    def read(self) -> HostReading | None: ...


def energy_j_from_rapl_uj(energy_uj: int) -> float:
    """RAPL's ``energy_uj`` (µJ) to joules."""
    return energy_uj / UJ_PER_J


def dcmi_power_w(output: str) -> float | None:
    """The instantaneous power (W) in ``ipmitool dcmi power reading``'s output; ``None`` if absent."""
    match = _DCMI_READING.search(output)
    return float(match.group(1)) if match else None


class IpmiDcmiMeter:
    """``ipmitool dcmi power reading`` (in-band, or out-of-band with ``extra_args`` such as ``-I lanplus -H …``)."""

    method = "ipmi_dcmi"

    def __init__(self, *, ipmitool: str = "ipmitool", extra_args: tuple[str, ...] = (), timeout_s: float = 5.0) -> None:
        self.command = [ipmitool, *extra_args, "dcmi", "power", "reading"]
        self.timeout_s = timeout_s

    def read(self) -> HostReading | None:
        try:
            done = subprocess.run(  # noqa: S603 - a fixed command, no shell
                self.command, capture_output=True, text=True, timeout=self.timeout_s, check=True
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("host meter: %s failed: %s", " ".join(self.command), exc)
            return None
        power_w = dcmi_power_w(done.stdout)
        if power_w is None:
            log.warning("host meter: no power reading in ipmitool's output")
            return None
        return HostReading(power_w=power_w)


class RedfishMeter:
    """``GET {base_url}/redfish/v1/Chassis/{chassis}/Power``: ``PowerControl[0].PowerConsumedWatts``."""

    method = "redfish"

    def __init__(
        self, *, base_url: str, chassis: str = "1", username: str = "", password: str = "", timeout_s: float = 5.0
    ) -> None:
        self.url = f"{base_url.rstrip('/')}/redfish/v1/Chassis/{chassis}/Power"
        self.headers = {"Accept": "application/json"}
        if username:
            token = base64.b64encode(f"{username}:{password}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"
        self.timeout_s = timeout_s

    def read(self) -> HostReading | None:
        request = urllib.request.Request(self.url, headers=self.headers)  # noqa: S310 - an operator-given BMC URL
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                body = json.loads(response.read())
            watts = body["PowerControl"][0]["PowerConsumedWatts"]
        except (OSError, ValueError, LookupError, TypeError) as exc:
            log.warning("host meter: Redfish %s unreadable: %s", self.url, exc)
            return None
        if not isinstance(watts, int | float) or isinstance(watts, bool) or watts < 0:
            log.warning("host meter: Redfish PowerConsumedWatts %r is not a power", watts)
            return None
        return HostReading(power_w=float(watts))


class RaplMeter:
    """The sum of the CPU packages' RAPL energy counters (J, cumulative) under ``root`` (``/sys/class/powercap``).

    Each package counter wraps at its ``max_energy_range_uj``; the sum is kept
    monotonic here by adding each package's wraps, so the server sees one
    counter that only restarts when the collector does (its epoch). It counts
    from zero at the first read, as a restarted counter does: the server takes a
    new epoch's reading as the energy since the restart, bounded by the time
    since the previous reading (the packages' own counters do not restart with us).
    """

    method = "rapl"

    def __init__(self, *, root: Path = Path("/sys/class/powercap")) -> None:
        self.packages = sorted(
            zone for zone in root.glob("intel-rapl:*") if _text(zone / "name", "").startswith("package-")
        )
        self._last_uj: dict[Path, int] = {}
        self._wrapped_uj: dict[Path, int] = {}
        self._start_uj: int | None = None  # the sum at the first read: the counter's zero

    def read(self) -> HostReading | None:
        if not self.packages:
            return None
        total_uj = 0
        for zone in self.packages:
            try:
                energy_uj = int(_text(zone / "energy_uj"))
                range_uj = int(_text(zone / "max_energy_range_uj", "0"))
            except (OSError, ValueError) as exc:
                log.warning("host meter: RAPL %s unreadable: %s", zone, exc)
                return None
            if energy_uj < self._last_uj.get(zone, 0):  # the counter wrapped since the last read
                self._wrapped_uj[zone] = self._wrapped_uj.get(zone, 0) + range_uj
            self._last_uj[zone] = energy_uj
            total_uj += self._wrapped_uj.get(zone, 0) + energy_uj
        if self._start_uj is None:
            self._start_uj = total_uj
        return HostReading(energy_j=energy_j_from_rapl_uj(total_uj - self._start_uj))


def _text(path: Path, default: str | None = None) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        if default is None:
            raise
        return default


def host_meter_from_spec(spec: str) -> HostMeter | None:
    """A meter from the ``--host-meter`` option: ``none``, ``ipmi``, ``redfish=URL``, ``rapl`` or ``auto``.

    ``auto`` prefers the node boundary: ``ipmitool`` when it is installed, else
    RAPL's CPU packages where the kernel offers them, else none (the server then
    models host power from the hardware profile).
    """
    if spec in ("", "none"):
        return None
    if spec == "ipmi":
        return IpmiDcmiMeter()
    if spec.startswith("redfish="):
        return RedfishMeter(base_url=spec.removeprefix("redfish="))
    if spec == "rapl":
        return RaplMeter()
    if spec == "auto":
        if shutil.which("ipmitool"):
            return IpmiDcmiMeter()
        rapl = RaplMeter()
        return rapl if rapl.packages else None
    raise ValueError(f"--host-meter {spec!r}: use none, ipmi, redfish=URL, rapl or auto")
