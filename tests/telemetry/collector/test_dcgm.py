"""The dcgm-exporter backend against a stand-in exporter on 127.0.0.1, one scenario per test."""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from telemetry.collector import wire
from telemetry.collector.dcgm import DcgmExporterBackend
from telemetry.collector.epochs import EpochBook
from tests.helpers.dcgm_exporter import DcgmExporterStandIn, StandInGpu
from tests.helpers.expositions import vllm
from tests.helpers.stub_server import StubServer

ROOT = Path(__file__).resolve().parents[3]

BOOT = "6f1e2d3c-0000-4000-8000-000000000001"
TS = 1_764_400_000.0
MIB = 1024**2


def exporter(server: StubServer, **kwargs: object) -> DcgmExporterStandIn:
    gpus = [StandInGpu("GPU-aaa", 0), StandInGpu("GPU-bbb", 1, model_name="NVIDIA H200", power_w=98.5)]
    stand_in = DcgmExporterStandIn(gpus, **kwargs)  # type: ignore[arg-type]
    server.default = stand_in.answer
    return stand_in


def backend_for(*servers: StubServer, book: EpochBook | None = None, timeout_s: float = 2.0) -> DcgmExporterBackend:
    urls = [f"{server.url}/metrics" for server in servers]
    return DcgmExporterBackend(urls, book=book, hostname="gpu-node-1", boot_id=BOOT, timeout_s=timeout_s)


@pytest.mark.parametrize("hostname_label", ["Hostname", "hostname"])
def test_fields_are_read_in_the_exporters_units_and_gpus_keyed_by_uuid(
    stub_server: StubServer, hostname_label: str, caplog: pytest.LogCaptureFixture
) -> None:
    stand_in = exporter(stub_server, hostname_label=hostname_label, kubernetes=True)
    backend = backend_for(stub_server)

    first, second = backend.read(TS)

    gpu = first.gpu
    assert (gpu.uuid, gpu.index, gpu.name) == ("GPU-aaa", 0, "NVIDIA H100 80GB HBM3")
    assert gpu.energy_counter_supported is True
    assert gpu.epoch == f"{BOOT}/550.54.15"  # NVML's epoch rule: boot id and driver version
    assert first.power_w == 412.345  # W, printed %f
    assert first.energy_j == stand_in.gpus[0].energy_mj / 1000  # mJ -> J, to the mJ
    assert (first.util_pct, first.mem_util_pct, first.temp_c) == (87, 41, 61)
    assert first.mem_used_bytes == (61_440 + 529) * MIB  # used plus reserved, MiB -> bytes
    assert first.ts == TS and first.error is None
    assert second.gpu.name == "NVIDIA H200" and second.power_w == 98.5
    assert "reports host" not in caplog.text  # the exporter's host is this node, in either spelling


def test_an_exporter_of_another_host_is_named_in_the_log(stub_server: StubServer, caplog) -> None:
    exporter(stub_server, hostname_label="hostname", hostname="elsewhere")

    with caplog.at_level(logging.WARNING):
        backend_for(stub_server).read(TS)

    assert "reports host 'elsewhere'" in caplog.text


def test_a_field_the_exporter_is_configured_without_is_missing_not_zero(stub_server: StubServer, caplog) -> None:
    exporter(stub_server, without={"DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_GPU_TEMP"})
    backend = backend_for(stub_server)

    with caplog.at_level(logging.WARNING):
        first, _ = backend.read(TS)
        backend.read(TS + 1)

    assert first.mem_used_bytes is None and first.temp_c is None
    assert first.power_w == 412.345 and first.energy_j is not None and first.error is None
    assert caplog.text.count("does not export DCGM_FI_DEV_FB_RESERVED") == 1  # once, not every tick
    assert "does not export DCGM_FI_DEV_GPU_TEMP: temperature is reported missing" in caplog.text


def test_without_the_energy_counter_the_gpu_says_so(stub_server: StubServer) -> None:
    exporter(stub_server, without={"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"})

    first, _ = backend_for(stub_server).read(TS)

    assert first.energy_j is None and first.gpu.energy_counter_supported is False  # the server integrates power


def test_dcgm_blank_values_are_missing(stub_server: StubServer) -> None:
    stand_in = exporter(stub_server)
    stand_in.gpus[0].power_w = 140_737_488_355_328.0  # DCGM_FP64_BLANK
    stand_in.gpus[0].temp_c = 9_223_372_036_854_775_794  # DCGM_INT64_NOT_SUPPORTED

    first, second = backend_for(stub_server).read(TS)

    assert first.power_w is None and first.temp_c is None and first.energy_j is not None
    assert second.power_w == 98.5


def test_a_counter_reset_starts_a_new_epoch_as_nvml_does(stub_server: StubServer) -> None:
    stand_in = exporter(stub_server)
    backend = backend_for(stub_server)
    before = backend.read(TS)[0]

    stand_in.resets = 1
    after = backend.read(TS + 1)[0]
    later = backend.read(TS + 2)[0]

    assert after.energy_j == stand_in.gpus[0].step_mj / 1000  # the counter restarted: one step since
    assert before.energy_j is not None and after.energy_j is not None and after.energy_j < before.energy_j
    assert after.gpu.epoch == f"{BOOT}/550.54.15@{int(TS + 1)}" != before.gpu.epoch
    assert later.gpu.epoch == after.gpu.epoch


def test_epochs_survive_a_collector_restart(stub_server: StubServer, tmp_path) -> None:
    exporter(stub_server)
    book = EpochBook(tmp_path / "epochs.json")
    backend_for(stub_server, book=book).read(TS)
    book.save()

    again = backend_for(stub_server, book=EpochBook(tmp_path / "epochs.json")).read(TS + 1)[0]

    assert again.gpu.epoch == f"{BOOT}/550.54.15"


@pytest.mark.parametrize(
    ("mode", "logged"),
    [("error", "HTTP Error 500"), ("garbage", "no DCGM GPU metric in the page (2 malformed line(s)")],
)
def test_a_failed_scrape_gives_no_reading_logged_once_per_change(
    stub_server: StubServer, caplog, mode: str, logged: str
) -> None:
    stand_in = exporter(stub_server)
    backend = backend_for(stub_server)
    before = backend.read(TS)

    stand_in.mode = mode
    with caplog.at_level(logging.WARNING):
        failed = backend.read(TS + 1) + backend.read(TS + 2)
        stand_in.mode = "ok"
        back = backend.read(TS + 3)

    assert failed == []  # a gap, never a zero nor a row of nulls (which would cut the counter's chain)
    assert caplog.text.count(logged) == 1
    assert caplog.text.count("is readable again") == 1  # the exporter, not each of its GPUs
    assert [r.gpu for r in back] == [r.gpu for r in before]  # the same GPUs, epochs unchanged
    assert all(r.error is None and r.power_w is not None for r in back)


def test_an_exporter_that_times_out_costs_one_short_wait_per_tick(stub_server: StubServer) -> None:
    stand_in = exporter(stub_server)
    backend = backend_for(stub_server, timeout_s=0.3)
    stand_in.mode, stand_in.slow_s = "slow", 2.0

    started = time.monotonic()
    readings = backend.read(TS)
    took = time.monotonic() - started

    assert took < 1.5 and readings == []


def test_a_gpu_that_leaves_the_page_is_not_sampled_until_it_comes_back(stub_server: StubServer, caplog) -> None:
    stand_in = exporter(stub_server)
    backend = backend_for(stub_server)
    gone = stand_in.gpus.pop()

    with caplog.at_level(logging.WARNING):
        without = backend.read(TS)
        stand_in.gpus.append(gone)
        back = backend.read(TS + 1)

    assert [r.gpu.uuid for r in without] == ["GPU-aaa"] and [r.gpu.uuid for r in back] == ["GPU-aaa", "GPU-bbb"]
    assert "GPU 1 (GPU-bbb): not in its exporter's page" in caplog.text
    assert "GPU 1 (GPU-bbb) is readable again" in caplog.text


def test_several_exporters_are_read_once_per_tick_each(stub_server: StubServer) -> None:
    other = StubServer().start()
    try:
        exporter(stub_server, hostname_label="Hostname")
        gpus = [StandInGpu("GPU-ccc", 2, model_name="NVIDIA L40S")]
        second = DcgmExporterStandIn(gpus, hostname_label="hostname")
        other.default = second.answer
        backend = backend_for(stub_server, other)
        requests_before = (len(stub_server.requests), len(other.requests))

        readings = backend.read(TS)

        assert [r.gpu.uuid for r in readings] == ["GPU-aaa", "GPU-bbb", "GPU-ccc"]
        assert (len(stub_server.requests), len(other.requests)) == tuple(n + 1 for n in requests_before)
        assert [g.uuid for g in backend.inventory()] == ["GPU-aaa", "GPU-bbb", "GPU-ccc"]
    finally:
        other.stop()


def test_an_exporter_down_at_start_is_read_once_it_answers(stub_server: StubServer) -> None:
    stand_in = exporter(stub_server, mode="error")
    backend = backend_for(stub_server)
    assert backend.inventory() == [] and backend.read(TS) == []

    stand_in.mode = "ok"

    assert [r.gpu.uuid for r in backend.read(TS + 1)] == ["GPU-aaa", "GPU-bbb"]


# --- the collector as a process, against two stand-in exporters, an inference server and a stand-in ingest ---


def start_collector(args: list[str]) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WATTLEDGER_")}
    command = [sys.executable, "-m", "telemetry.collector", *args]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def gpu_rows(bodies: list[bytes]) -> dict[str, list[tuple[float, str, dict[str, Any]]]]:
    """Per GPU UUID, its rows (ts, epoch, fields) in time order, decoded as the server decodes them."""
    rows: dict[str, list[tuple[float, str, dict[str, Any]]]] = {}
    for body in bodies:
        batch = wire.batch_decode(body, content_encoding="gzip")
        samples = batch.gpu_samples
        for i, ref in enumerate(samples["gpu"]):
            gpu = batch.gpus[ref]
            fields = {name: samples[name][i] for name in wire.GPU_FIELDS}
            rows.setdefault(gpu.uuid, []).append((samples["ts"][i], gpu.epoch, fields))
    return {uuid: sorted(values, key=lambda row: row[0]) for uuid, values in rows.items()}


def counted_energy_j(rows: list[tuple[float, str, dict[str, Any]]]) -> float:
    """The energy the server counts from these rows: counter deltas; after a drop or a new epoch, the new value."""
    readings = [(epoch, fields["energy_j"]) for _ts, epoch, fields in rows if fields["energy_j"] is not None]
    total = 0.0
    for (epoch_a, a), (epoch_b, b) in itertools.pairwise(readings):
        total += b if epoch_b != epoch_a or b < a else b - a
    return total


@pytest.mark.slow
def test_the_collector_reports_the_exporters_energy_to_the_mj_through_reset_500_garbage_and_timeout(
    stub_server: StubServer, tmp_path: Path
) -> None:
    # given: one exporter of an older release (Hostname), one newer (hostname), and a vLLM server beside them
    old_release, new_release, vllm_server = StubServer().start(), StubServer().start(), StubServer().start()
    try:
        first = DcgmExporterStandIn(
            [StandInGpu("GPU-aaa", 0), StandInGpu("GPU-bbb", 1, power_w=350.25, step_mj=35_025)],
            hostname="n1", hostname_label="Hostname",
        )  # fmt: skip
        second = DcgmExporterStandIn(
            [StandInGpu("GPU-ccc", 2, model_name="NVIDIA L40S", step_mj=9_871)],
            hostname="n1", hostname_label="hostname", without={"DCGM_FI_DEV_FB_RESERVED"},
        )  # fmt: skip
        old_release.default, new_release.default = first.answer, second.answer
        vllm_server.default = lambda _r: (200, {"Content-Type": "text/plain"}, vllm().encode())
        args = [
            "--server", stub_server.url, "--token", "t", "--hostname", "n1", "--spool", str(tmp_path / "spool"),
            "--dcgm-exporter", f"{old_release.url}/metrics", "--dcgm-exporter", f"{new_release.url}/metrics",
            "--serving", f"{vllm_server.url}/metrics", "--serving-interval", "1",
            "--sample-interval", "0.25", "--batch-seconds", "1", "--shutdown-grace", "5",
        ]  # fmt: skip
        process = start_collector(args)

        # when: the first exporter's counters reset, then it answers 500, garbage, and too late, then recovers
        for mode, requests in (("ok", 6), ("reset", 10), ("error", 14), ("garbage", 18), ("slow", 20), ("ok", 28)):
            if mode == "reset":
                first.resets, mode = 1, "ok"
            first.mode, first.slow_s = mode, 0.6
            wait_for(lambda n=requests: first.requests >= n)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        for server in (old_release, new_release, vllm_server):
            server.stop()

    # then: what the stand-in ingest received counts the energy each stand-in GPU used, to the mJ
    assert process.returncode == 0, stderr
    bodies = [r.body for r in stub_server.requests if r.path == "/api/v1/ingest/"]
    rows = gpu_rows(bodies)
    assert sorted(rows) == ["GPU-aaa", "GPU-bbb", "GPU-ccc"]
    for gpu in (*first.gpus, *second.gpus):
        readings = [fields["energy_j"] for _ts, _epoch, fields in rows[gpu.uuid] if fields["energy_j"] is not None]
        truth_j = gpu.truth_j(round(readings[0] * 1000), round(readings[-1] * 1000))
        assert truth_j > 0
        assert counted_energy_j(rows[gpu.uuid]) == pytest.approx(truth_j, rel=1e-3)
        assert abs(counted_energy_j(rows[gpu.uuid]) - truth_j) < 1e-3  # to the mJ, in fact
    # the reset is a new epoch; the failed scrapes left a gap in the first exporter's GPUs, never a zero
    assert len({epoch for _ts, epoch, _f in rows["GPU-aaa"]}) == 2
    assert len(rows["GPU-aaa"]) <= len(rows["GPU-ccc"]) - 6
    assert all(f["energy_j"] is not None and f["power_w"] == 412.345 for _t, _e, f in rows["GPU-aaa"])
    assert not [v for gpu_rows_ in rows.values() for _t, _e, f in gpu_rows_ for v in f.values() if v == 0]
    # the other exporter's GPU is read throughout; its memory is missing (no FB_RESERVED), not zero
    assert all(f["power_w"] == 412.345 and f["mem_used_bytes"] is None for _t, _e, f in rows["GPU-ccc"])
    assert "does not export DCGM_FI_DEV_FB_RESERVED" in stderr
    assert stderr.count("HTTP Error 500") == 1 and stderr.count("no DCGM GPU metric in the page") == 1
    assert "timed out" in stderr
    # the inference server is scraped beside the exporters, attributed to their GPUs
    endpoints = [wire.batch_decode(body, content_encoding="gzip").endpoints for body in bodies]
    assert {e.gpu_uuids for found in endpoints for e in found} == {("GPU-aaa", "GPU-bbb", "GPU-ccc")}


def test_the_documented_model_name_table_is_the_servers_catalog() -> None:
    # The server maps modelName (NVML's name) to a profile; the docs' table must say what it does.
    catalog = json.loads((ROOT / "accounting" / "hardware" / "catalog.json").read_text())
    expected = {name: (p["key"], p["display_name"]) for p in catalog["profiles"] for name in p["nvml_names"]}
    doc = (ROOT / "docs" / "telemetry.md").read_text()

    documented = {m[1]: (m[2], m[3]) for m in re.finditer(r"^\| `([^`]+)` \| `([^`]+)`, ([^|]+?) \|$", doc, re.M)}

    assert documented == expected


def test_values_in_go_float_notation_are_read_exactly(stub_server: StubServer) -> None:
    # client_golang writes large values as 3.1035686671e+10; the mJ must survive
    labels = '{gpu="0",UUID="GPU-go",modelName="NVIDIA L4",Hostname="n"}'
    page = "\n".join(
        [
            "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).",
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter",
            f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{labels} 3.1035686671e+10",
            f"DCGM_FI_DEV_POWER_USAGE{labels} 7.2e+01",
        ]
    )
    stub_server.default = lambda _r: (200, {"Content-Type": "text/plain"}, page.encode())

    (reading,) = backend_for(stub_server).read(TS)

    assert reading.energy_j == 31_035_686.671 and reading.power_w == 72.0 and reading.gpu.name == "NVIDIA L4"


def test_a_gpu_two_exporters_show_is_read_from_the_first_only(stub_server: StubServer, caplog) -> None:
    other = StubServer().start()
    try:
        exporter(stub_server)
        twin = DcgmExporterStandIn([StandInGpu("GPU-aaa", 0, power_w=1.0)])
        other.default = twin.answer
        with caplog.at_level(logging.WARNING):
            backend = backend_for(stub_server, other)
            readings = backend.read(TS) + backend.read(TS + 1)
    finally:
        other.stop()

    assert [r.power_w for r in readings if r.gpu.uuid == "GPU-aaa"] == [412.345, 412.345]
    assert caplog.text.count("also shows GPU-aaa") == 1


def test_mig_instance_series_are_not_taken_for_the_whole_gpu(stub_server: StubServer) -> None:
    labels = 'gpu="0",UUID="GPU-mig",modelName="NVIDIA A100-SXM4-80GB",Hostname="n"'
    gpu, instance = f"{{{labels}}}", f'{{{labels},GPU_I_PROFILE="1g.10gb",GPU_I_ID="7"}}'
    page = "\n".join(
        [
            f"DCGM_FI_DEV_FB_USED{instance} 512",
            f"DCGM_FI_DEV_FB_RESERVED{instance} 10",
            f"DCGM_FI_DEV_POWER_USAGE{gpu} 250.500000",
            f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu} 123456789",
        ]
    )
    stub_server.default = lambda _r: (200, {"Content-Type": "text/plain"}, page.encode())

    (reading,) = backend_for(stub_server).read(TS)

    assert (reading.power_w, reading.energy_j) == (250.5, 123_456.789)
    assert reading.mem_used_bytes is None  # exported per instance only: missing, not one instance's 512 MiB
