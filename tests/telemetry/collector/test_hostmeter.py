"""The host meter: IPMI DCMI through a real ipmitool-like process, Redfish over a real local HTTP server,
RAPL from a sysfs tree in a temp dir."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from telemetry.collector import wire
from telemetry.collector.backend import GpuIdentity, GpuReading
from telemetry.collector.batching import BatchBuilder, SpoolState
from telemetry.collector.hostmeter import (
    HostReading,
    IpmiDcmiMeter,
    RaplMeter,
    RedfishMeter,
    dcmi_power_w,
    host_meter_from_spec,
)
from tests.helpers.batches import make_batch

DCMI_OUTPUT = """
    Instantaneous power reading:                   245 Watts
    Minimum during sampling period:                 98 Watts
    Maximum during sampling period:                612 Watts
    Average power reading over sample period:      301 Watts
    IPMI timestamp:                           Sun Nov 30 17:20:00 2026
    Sampling period:                          00000005 Seconds.
    Power reading state is:                   activated
"""


def fake_ipmitool(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "ipmitool"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def test_ipmi_dcmi_reads_the_instantaneous_power_of_the_node(tmp_path):
    script = fake_ipmitool(tmp_path, f"[ \"$*\" = 'dcmi power reading' ] || exit 2\ncat <<'OUT'\n{DCMI_OUTPUT}\nOUT")

    assert IpmiDcmiMeter(ipmitool=str(script)).read() == HostReading(power_w=245.0)


@pytest.mark.parametrize(
    "body", ["echo 'Error: no DCMI support' >&2; exit 1", "echo 'Power reading state is: deactivated'"]
)
def test_ipmi_failures_are_no_reading_not_a_crash(tmp_path, body):
    assert IpmiDcmiMeter(ipmitool=str(fake_ipmitool(tmp_path, body))).read() is None


def test_ipmi_missing_binary_is_no_reading(tmp_path):
    assert IpmiDcmiMeter(ipmitool=str(tmp_path / "absent")).read() is None


def test_dcmi_parses_decimal_watts():
    assert dcmi_power_w("Instantaneous power reading: 1234.5 Watts") == 1234.5


class _Bmc(BaseHTTPRequestHandler):
    watts: object = 612
    status = 200

    def do_GET(self) -> None:
        expected = "Basic " + base64.b64encode(b"admin:s3cret").decode()
        if self.path != "/redfish/v1/Chassis/1/Power" or self.headers.get("Authorization") != expected:
            self.send_error(404 if self.headers.get("Authorization") == expected else 401)
            return
        body = json.dumps({"@odata.id": self.path, "PowerControl": [{"PowerConsumedWatts": self.watts}]}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def bmc() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Bmc)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_redfish_reads_power_control_over_http(bmc):
    meter = RedfishMeter(base_url=bmc, username="admin", password="s3cret")

    assert meter.read() == HostReading(power_w=612.0)


def test_redfish_wrong_credentials_or_bad_value_is_no_reading(bmc, monkeypatch):
    assert RedfishMeter(base_url=bmc, username="admin", password="wrong").read() is None
    monkeypatch.setattr(_Bmc, "watts", "n/a")
    assert RedfishMeter(base_url=bmc, username="admin", password="s3cret").read() is None


def sysfs(root: Path, zone: str, name: str, energy_uj: int, range_uj: int = 10_000) -> None:
    path = root / zone
    path.mkdir(parents=True, exist_ok=True)
    (path / "name").write_text(f"{name}\n")
    (path / "energy_uj").write_text(f"{energy_uj}\n")
    (path / "max_energy_range_uj").write_text(f"{range_uj}\n")


def test_rapl_sums_the_cpu_packages_and_carries_a_wrap(tmp_path):
    # given two packages and their subzones (core, dram), which are not added again
    sysfs(tmp_path, "intel-rapl:0", "package-0", 9_000)
    sysfs(tmp_path, "intel-rapl:1", "package-1", 2_000)
    sysfs(tmp_path, "intel-rapl:0:0", "core", 5_000)
    sysfs(tmp_path, "intel-rapl:0:1", "dram", 700)
    meter = RaplMeter(root=tmp_path)
    first = meter.read()
    # when package 0 wraps at its 10,000 µJ range (9,000 -> 500: 1,500 µJ more) and package 1 adds 500
    sysfs(tmp_path, "intel-rapl:0", "package-0", 500)
    sysfs(tmp_path, "intel-rapl:1", "package-1", 2_500)
    second = meter.read()
    # then the sum is one cumulative counter in joules, from zero at the first read (11,000 µJ): 0, then 2,000 µJ
    assert (first, second) == (HostReading(energy_j=0.0), HostReading(energy_j=0.002))


def test_no_rapl_packages_means_no_meter(tmp_path):
    assert RaplMeter(root=tmp_path).read() is None


@pytest.mark.parametrize(
    ("spec", "kind"),
    [("none", type(None)), ("ipmi", IpmiDcmiMeter), ("redfish=http://bmc", RedfishMeter), ("rapl", RaplMeter)],
)
def test_host_meter_option(spec, kind):
    assert isinstance(host_meter_from_spec(spec), kind)


def test_an_unknown_host_meter_option_is_refused():
    with pytest.raises(ValueError, match=r"--host-meter 'snmp'"):
        host_meter_from_spec("snmp")


def test_the_builder_sends_the_node_meter_and_the_server_accepts_it():
    builder = BatchBuilder(hostname="gpu-01", sample_interval_s=1.0, spool_state=lambda: SpoolState(0, 0))
    gpu = GpuIdentity("GPU-1", 0, "NVIDIA H100 80GB HBM3", True, "boot-1")
    for ts in (1_764_400_000.0, 1_764_400_001.0):
        builder.add_gpu([GpuReading(gpu, ts, power_w=300.0, energy_j=1e6)])
        builder.add_node_meter(ts, method="ipmi_dcmi", epoch="collector-1", power_w=612.0, energy_j=None)
    builder.add_node_meter(1_764_400_002.0, method="ipmi_dcmi", epoch="collector-1", power_w=1e9, energy_j=None)

    decoded = wire.batch_decode(builder.build(sent_at=1_764_400_003.0).encode(), content_encoding="gzip")

    assert decoded.node_meter == {
        "method": "ipmi_dcmi",
        "epoch": "collector-1",
        "ts": [1_764_400_000.0, 1_764_400_001.0, 1_764_400_002.0],
        "power_w": [612.0, 612.0, None],  # a broken reading is sent as not measured
        "energy_j": [None, None, None],
    }


def test_the_server_refuses_an_unknown_node_meter_method():
    batch = make_batch(gpus=1, seconds=2) | {
        "node_meter": {"method": "snmp", "epoch": "x", "ts": [1.8e9], "power_w": [1.0], "energy_j": [None]}
    }
    with pytest.raises(wire.WireError, match=r"node_meter\.method 'snmp'"):
        wire.batch_decode(wire.batch_encode(batch), content_encoding="gzip")
