"""The simulated backend: plausible physics, an exact energy counter, determinism, resets."""

from __future__ import annotations

import itertools
import math

import pytest

from telemetry.collector.simulated import MODELS, SimulatedBackend, parse_simulate_spec

DAY_START = 1_764_374_400.0  # 2025-11-29T00:00:00Z


def make(spec: str = "h100-sxm:2", **kwargs: object) -> SimulatedBackend:
    return SimulatedBackend(parse_simulate_spec(spec), hostname="node-1", **kwargs)  # type: ignore[arg-type]


def test_spec_expands_models_in_index_order_with_real_nvml_names() -> None:
    models = parse_simulate_spec("h100-sxm:2, rtx-4090:1")

    assert [m.nvml_name for m in models] == ["NVIDIA H100 80GB HBM3"] * 2 + ["NVIDIA GeForce RTX 4090"]
    assert (MODELS["h100-sxm"].tdp_w, MODELS["h100-sxm"].idle_w) == (700, 70)
    assert (MODELS["rtx-4090"].tdp_w, MODELS["rtx-4090"].idle_w) == (450, 25)
    assert MODELS["h100-pcie"].tdp_w == 350 and MODELS["rtx-3090"].tdp_w == 350


@pytest.mark.parametrize("spec", ["h200:1", "h100-sxm", "h100-sxm:0", "h100-sxm:x", "", "h100-sxm:65"])
def test_bad_specs_are_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_simulate_spec(spec)


def test_same_seed_same_samples_in_any_order_and_another_seed_differs() -> None:
    stamps = [DAY_START + 3600 * h + 0.5 for h in range(0, 24, 5)]
    one, two, other_seed = make(seed=7), make(seed=7), make(seed=8)
    first = [one.read(ts) for ts in stamps]
    second = [two.read(ts) for ts in reversed(stamps)][::-1]
    other = [other_seed.read(ts) for ts in stamps]

    assert first == second
    assert [r.power_w for rs in first for r in rs] != [r.power_w for rs in other for r in rs]
    assert first[0][0].gpu.uuid != other[0][0].gpu.uuid


@pytest.mark.parametrize("key", sorted(MODELS))
def test_power_stays_between_idle_and_tdp_and_follows_the_daily_load(key: str) -> None:
    backend = make(f"{key}:2")
    model = MODELS[key]
    readings = [r for minute in range(0, 24 * 60, 7) for r in backend.read(DAY_START + 60 * minute)]

    assert all(model.idle_w <= r.power_w <= model.tdp_w for r in readings if r.power_w is not None)
    night = sum(r.power_w or 0 for r in backend.read(DAY_START + 4 * 3600))
    afternoon = sum(r.power_w or 0 for r in backend.read(DAY_START + 16 * 3600))
    # per GPU, 0.15 ** 0.2 = 0.68 of the span at night and 0.85 ** 0.2 = 0.97 in the afternoon, noise aside
    assert afternoon > night + 2 * 0.1 * (model.tdp_w - model.idle_w)
    assert all(0 <= (r.util_pct or 0) <= 100 and (r.temp_c or 0) < 90 for r in readings)


def test_energy_counter_is_the_exact_integral_of_power() -> None:
    backend = make()
    gpu = backend.gpus[0]
    start, seconds, step = DAY_START + 12_345.25, 120, 0.01

    fine = sum(
        (backend.power_w(gpu, start + i * step) + backend.power_w(gpu, start + (i + 1) * step)) / 2 * step
        for i in range(round(seconds / step))
    )
    delta = backend.energy_j(gpu, start + seconds) - backend.energy_j(gpu, start)

    assert delta == pytest.approx(fine, abs=1e-3)


def test_energy_deltas_between_1hz_samples_equal_the_trapezoid_of_their_power() -> None:
    backend = make()
    readings = [backend.read(DAY_START + 7200 + s)[1] for s in range(61)]

    trapezoid = sum((a.power_w + b.power_w) / 2 for a, b in itertools.pairwise(readings))  # type: ignore[operator]

    assert readings[-1].energy_j - readings[0].energy_j == pytest.approx(trapezoid, abs=0.05)  # type: ignore[operator]


def test_energy_counter_grows_and_is_reported_at_nvml_resolution() -> None:
    backend = make()
    values = [backend.read(DAY_START + s)[0].energy_j for s in range(0, 600, 10)]

    assert all(b > a for a, b in itertools.pairwise(values))  # type: ignore[operator]
    assert all(round(v, 3) == v for v in values)  # type: ignore[arg-type]


def test_resets_restart_the_counter_and_change_the_epoch_at_the_driver_reload() -> None:
    backend = make(resets_every_s=3600)
    reload_at = backend.driver_loaded_at(DAY_START + 7200)
    before = backend.read(reload_at - 1)[0]
    after = backend.read(reload_at + 1)[0]

    assert before.energy_j > after.energy_j  # type: ignore[operator]
    assert after.energy_j == pytest.approx(backend.energy_j(backend.gpus[0], reload_at + 1), abs=1e-3)
    assert after.energy_j < MODELS["h100-sxm"].tdp_w * 1.01  # one second since the reload
    assert before.gpu.epoch != after.gpu.epoch and after.gpu.epoch.endswith(f"@{reload_at}")
    assert before.gpu.uuid == after.gpu.uuid


def test_without_resets_the_epoch_never_changes() -> None:
    backend = make()

    epochs = {backend.read(DAY_START + d * 86_400)[0].gpu.epoch for d in range(0, 400, 30)}

    assert len(epochs) == 1


def test_load_integral_matches_summed_knots() -> None:
    backend = make()
    gpu = backend.gpus[1]
    start = math.floor(DAY_START) - 3

    stepped = sum((backend.load_at(gpu, start + k) + backend.load_at(gpu, start + k + 1)) / 2 for k in range(500))

    # (the stepped reference interpolates at ~1.8e9 s, where a float holds ~1e-7 s: 1e-10 is its own precision)
    assert backend.load_integral(gpu, start, start + 500) == pytest.approx(stepped, rel=1e-10)


def test_the_spare_pattern_is_idle_at_night_and_on_sunday_morning_and_serves_in_the_afternoon() -> None:
    backend = make("rtx-4090:2", pattern="spare")
    saturday_03, sunday_10, monday_03 = DAY_START + 3 * 3600, DAY_START + 34 * 3600, DAY_START + 51 * 3600
    monday_16 = DAY_START + 64 * 3600

    for moment in (saturday_03, sunday_10, monday_03):
        readings = backend.read(moment)
        assert [(r.power_w, r.util_pct) for r in readings] == [(25, 0), (25, 0)]  # idle draw, nothing served
        assert backend.load_integral(backend.gpus[0], moment - 1800, moment + 1800) == 0
    assert all(r.util_pct > 60 and r.power_w > 300 for r in backend.read(monday_16))  # type: ignore[operator]


def test_the_office_pattern_is_quieter_at_weekends() -> None:
    backend = make("h100-pcie:1", pattern="office")
    gpu = backend.gpus[0]
    saturday = backend.load_integral(gpu, DAY_START, DAY_START + 86_400)
    monday = backend.load_integral(gpu, DAY_START + 2 * 86_400, DAY_START + 3 * 86_400)

    assert 0.35 < saturday / monday < 0.55  # 45 % of a weekday, give or take the noise
    assert min(backend.load_at(gpu, DAY_START + s) for s in range(0, 86_400, 600)) > 0  # never idle
