from telemetry.collector.units import (
    energy_j_from_nvml_mj,
    nvml_mj_from_energy_j,
    nvml_mw_from_power_w,
    power_w_from_nvml_mw,
)


def test_power_from_nvml_milliwatts_to_watts() -> None:
    assert power_w_from_nvml_mw(412_345) == 412.345
    assert power_w_from_nvml_mw(0) == 0.0


def test_energy_from_nvml_millijoules_to_joules() -> None:
    assert energy_j_from_nvml_mj(123_456_789) == 123_456.789
    assert energy_j_from_nvml_mj(18_446_744_073_709_551_615) > 1.8e16  # NVML's uint64 at its top


def test_conversions_to_nvml_resolution_round_trip() -> None:
    assert nvml_mw_from_power_w(power_w_from_nvml_mw(70_123)) == 70_123
    assert nvml_mj_from_energy_j(energy_j_from_nvml_mj(987_654_321)) == 987_654_321
