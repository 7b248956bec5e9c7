"""The dcgm-exporter backend against a stand-in exporter on 127.0.0.1, one scenario per test."""

from __future__ import annotations

import logging
import time

import pytest

from telemetry.collector.dcgm import DcgmExporterBackend
from telemetry.collector.epochs import EpochBook
from tests.helpers.dcgm_exporter import DcgmExporterStandIn, StandInGpu
from tests.helpers.stub_server import StubServer

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
def test_a_failed_scrape_gives_missing_readings_logged_once_per_change(
    stub_server: StubServer, caplog, mode: str, logged: str
) -> None:
    stand_in = exporter(stub_server)
    backend = backend_for(stub_server)
    backend.read(TS)

    stand_in.mode = mode
    with caplog.at_level(logging.WARNING):
        failed = backend.read(TS + 1) + backend.read(TS + 2)
        stand_in.mode = "ok"
        back = backend.read(TS + 3)

    assert len(failed) == 4 and all(r.error is not None for r in failed)
    for reading in failed:
        fields = (reading.power_w, reading.energy_j, reading.util_pct, reading.mem_util_pct, reading.mem_used_bytes)
        assert (*fields, reading.temp_c) == (None,) * 6  # missing, never zero
    assert caplog.text.count(logged) == 1
    assert caplog.text.count("is readable again") == 1 + 2  # the exporter, then each GPU
    assert all(r.error is None and r.power_w is not None for r in back)


def test_an_exporter_that_times_out_costs_one_short_wait_per_tick(stub_server: StubServer) -> None:
    stand_in = exporter(stub_server)
    backend = backend_for(stub_server, timeout_s=0.3)
    stand_in.mode, stand_in.slow_s = "slow", 2.0

    started = time.monotonic()
    readings = backend.read(TS)
    took = time.monotonic() - started

    assert took < 1.5 and [r.error is not None for r in readings] == [True, True]
    assert all(r.energy_j is None for r in readings)


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
