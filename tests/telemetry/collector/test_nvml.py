"""The NVML backend against a fake pynvml, one scenario per test."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from telemetry.collector.epochs import EpochBook
from telemetry.collector.nvml import NvmlBackend, NvmlUnavailable, load_pynvml, read_boot_id
from tests.helpers.fake_pynvml import FakeGpu, fake_pynvml

BOOT = "6f1e2d3c-0000-4000-8000-000000000001"
TS = 1_764_400_000.0


def backend_for(*gpus: FakeGpu, book: EpochBook | None = None, **kwargs: str) -> NvmlBackend:
    return NvmlBackend(nvml=fake_pynvml(list(gpus), **kwargs), book=book, boot_id=BOOT)


def test_basic_reading_converts_nvml_units_and_keys_gpus_by_uuid() -> None:
    backend = backend_for(FakeGpu("GPU-aaa"), FakeGpu("GPU-bbb", name=b"NVIDIA GeForce RTX 4090", power_mw=20_000))

    first, second = backend.read(TS)

    assert first.gpu.uuid == "GPU-aaa" and first.gpu.index == 0 and first.gpu.name == "NVIDIA H100 80GB HBM3"
    assert first.power_w == 412.345  # mW -> W
    assert first.energy_j == 123_456.789  # mJ -> J
    assert (first.util_pct, first.mem_util_pct, first.temp_c) == (97, 41, 61)
    assert first.mem_used_bytes == 68_719_476_736
    assert first.ts == TS and first.error is None
    assert first.gpu.energy_counter_supported is True
    assert first.gpu.epoch == f"{BOOT}/550.54.15"
    assert second.gpu.name == "NVIDIA GeForce RTX 4090" and second.power_w == 20.0


def test_unsupported_fields_are_none_and_energy_support_is_per_gpu() -> None:
    old = FakeGpu("GPU-old", energy_mj="NotSupported", temp_c="NotSupported", util="NoPermission")
    backend = backend_for(old, FakeGpu("GPU-new"))

    old_reading, new_reading = backend.read(TS)

    assert old_reading.gpu.energy_counter_supported is False
    assert (old_reading.energy_j, old_reading.temp_c, old_reading.util_pct, old_reading.mem_util_pct) == (None,) * 4
    assert old_reading.power_w == 412.345 and old_reading.error is None
    assert new_reading.gpu.energy_counter_supported is True and new_reading.energy_j is not None


def test_an_unexpected_nvml_error_on_one_field_is_none_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    backend = backend_for(FakeGpu("GPU-aaa", power_mw="Unknown"))

    with caplog.at_level(logging.WARNING):
        (reading,) = backend.read(TS)
        backend.read(TS + 1)

    assert reading.power_w is None and reading.energy_j == 123_456.789
    assert len([r for r in caplog.records if "nvmlDeviceGetPowerUsage" in r.message]) == 1  # once, not per sample


def test_a_lost_gpu_is_reported_and_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    flaky = FakeGpu("GPU-bbb")
    backend = backend_for(FakeGpu("GPU-aaa"), flaky)
    flaky.lost = True

    with caplog.at_level(logging.WARNING):
        healthy, lost = backend.read(TS)
        backend.read(TS + 1)
        flaky.lost = False
        _, back = backend.read(TS + 2)

    assert healthy.power_w == 412.345 and healthy.error is None
    assert lost.gpu.uuid == "GPU-bbb" and lost.error is not None and "GpuIsLost" in lost.error
    assert (lost.power_w, lost.energy_j, lost.util_pct, lost.temp_c, lost.mem_used_bytes) == (None,) * 5
    assert back.error is None and back.power_w == 412.345
    messages = [r.message for r in caplog.records]
    assert sum("failed" in m and "GPU-bbb" in m for m in messages) == 1  # reported once, not every second
    assert any("readable again" in m for m in messages)


def test_a_gpu_lost_at_discovery_is_left_out_and_the_rest_are_read() -> None:
    backend = backend_for(FakeGpu("GPU-aaa", lost=True), FakeGpu("GPU-bbb"))

    (reading,) = backend.read(TS)

    assert reading.gpu.uuid == "GPU-bbb" and reading.gpu.index == 1


def test_energy_counter_reset_starts_a_new_epoch_even_across_a_collector_restart(tmp_path: Path) -> None:
    gpu = FakeGpu("GPU-aaa", energy_mj=900_000_000)
    book = EpochBook(tmp_path / "epochs.json")
    (before,) = backend_for(gpu, book=book).read(TS)
    book.save()

    gpu.energy_mj = 5_000  # the driver reloaded while the collector was down
    restarted = EpochBook(tmp_path / "epochs.json")
    (after,) = backend_for(gpu, book=restarted).read(TS + 60)
    (later,) = backend_for(gpu, book=restarted).read(TS + 61)

    assert before.gpu.epoch == f"{BOOT}/550.54.15"
    assert after.gpu.epoch == f"{BOOT}/550.54.15@{int(TS + 60)}"
    assert after.energy_j == 5.0  # sent raw: the server takes the new value as the increase
    assert later.gpu.epoch == after.gpu.epoch


def test_a_collector_restart_without_a_reset_keeps_the_epoch(tmp_path: Path) -> None:
    gpu = FakeGpu("GPU-aaa", energy_mj=900_000_000)
    book = EpochBook(tmp_path / "epochs.json")
    (before,) = backend_for(gpu, book=book).read(TS)
    book.save()
    gpu.energy_mj = 900_100_000

    (after,) = backend_for(gpu, book=EpochBook(tmp_path / "epochs.json")).read(TS + 60)

    assert after.gpu.epoch == before.gpu.epoch


def test_a_new_boot_or_driver_is_a_new_epoch() -> None:
    gpu = FakeGpu("GPU-aaa")
    book = EpochBook()
    (old,) = backend_for(gpu, book=book).read(TS)
    (new,) = backend_for(gpu, book=book, driver="570.133.20").read(TS + 1)

    assert old.gpu.epoch != new.gpu.epoch and new.gpu.epoch == f"{BOOT}/570.133.20"


@pytest.mark.parametrize("error", ["LibraryNotFound", "DriverNotLoaded"])
def test_nvml_not_loadable_is_a_clear_error(error: str) -> None:
    with pytest.raises(NvmlUnavailable, match="NVIDIA driver installed"):
        backend_for(FakeGpu("GPU-aaa"), init_error=error)


def test_missing_pynvml_module_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError

    with pytest.raises(NvmlUnavailable, match=r"nvidia-ml-py|requirements"):
        load_pynvml()


def test_close_shuts_nvml_down() -> None:
    nvml = fake_pynvml([FakeGpu("GPU-aaa")])
    backend = NvmlBackend(nvml=nvml, boot_id=BOOT)

    backend.close()

    assert nvml.shutdown is True


def test_boot_id_is_read_from_proc_or_stands_in(tmp_path: Path) -> None:
    (tmp_path / "boot_id").write_text("abc-123\n")

    assert read_boot_id(tmp_path / "boot_id") == "abc-123"
    assert read_boot_id(tmp_path / "missing") == "unknown-boot"
