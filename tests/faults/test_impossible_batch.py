"""The fault harness's impossible-counter batch is well formed, and refused only for its energy counter."""

from __future__ import annotations

import pytest

from telemetry.collector import wire
from tests.faults.harness import impossible_batch

GPU = {"uuid": "GPU-0", "index": 0, "name": "NVIDIA H100 80GB HBM3", "energy_counter_supported": True, "epoch": "e"}


def test_the_batch_is_refused_422_for_its_energy_rise_and_the_same_batch_without_it_decodes() -> None:
    batch = impossible_batch("faults-h100", GPU, 1.7e9 + 0.5)
    with pytest.raises(wire.WireError) as refused:
        wire.batch_decode(wire.batch_encode(batch, compress=False))
    assert refused.value.status == 422
    assert str(refused.value).startswith("gpu_samples.energy_j[1] rises by 1.89995e+16 in 1 s"), refused.value

    batch["gpu_samples"]["energy_j"] = [5.39e11, 5.39e11 + 400.0]
    assert wire.batch_decode(wire.batch_encode(batch, compress=False)).gpu_row_count == 2
