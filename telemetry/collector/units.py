"""Unit conversions, done once at the edge, each with a name that states both units."""

from __future__ import annotations

MW_PER_W = 1_000  # NVML reports power in milliwatts
MJ_PER_J = 1_000  # and energy in millijoules
S_PER_HOUR = 3_600
S_PER_DAY = 86_400


def power_w_from_nvml_mw(power_mw: int) -> float:
    """NVML's ``nvmlDeviceGetPowerUsage`` (mW) to watts."""
    return power_mw / MW_PER_W


def energy_j_from_nvml_mj(energy_mj: int) -> float:
    """NVML's ``nvmlDeviceGetTotalEnergyConsumption`` (mJ since the driver loaded) to joules."""
    return energy_mj / MJ_PER_J


def nvml_mw_from_power_w(power_w: float) -> int:
    """Watts to NVML's milliwatt resolution (the simulator reports what NVML would)."""
    return round(power_w * MW_PER_W)


def nvml_mj_from_energy_j(energy_j: float) -> int:
    """Joules to NVML's millijoule resolution."""
    return round(energy_j * MJ_PER_J)
