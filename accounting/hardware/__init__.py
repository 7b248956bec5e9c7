"""GPU hardware profiles shipped as data (``catalog.json``), and matching NVML names to them.

Pure Python, no Django. Each profile carries its TDP and typical idle power (W),
memory (GB), class, embodied kgCO2e of the card as a low/central/high range, a
default host share (kgCO2e per GPU), an expected life (years), and the sources
of each figure. ``catalog.json`` explains how the figures were chosen.

Matching NVML names (``profile_for_nvml_name``):

1. the name exactly as NVML reports it (``"NVIDIA H100 80GB HBM3"``);
2. else both sides normalised: whitespace collapsed, case folded, a leading
   ``"NVIDIA "`` dropped (older drivers report ``"GeForce RTX 3090"``).

Nothing fuzzier: ``"NVIDIA H100 NVL"`` or ``"NVIDIA GeForce RTX 3090 Ti"`` are
other products and return ``None``. The caller shows "unknown model" and never
prices or weighs an unknown GPU as zero.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

from accounting.ledger.inputs import EmbodiedAsset, EmbodiedKg
from accounting.ledger.units import ZERO, h_from_years

CATALOG_PATH = Path(__file__).with_name("catalog.json")
REQUIRED_SOURCES = frozenset({"tdp_w", "idle_w", "embodied_kgco2e", "host_embodied_kgco2e_per_gpu", "lifetime_years"})


class CatalogError(ValueError):
    """The catalog file is malformed: a missing field or source, a duplicate key or NVML name."""


class GpuClass(enum.StrEnum):
    ENTERPRISE = "enterprise"
    CONSUMER = "consumer"


@dataclass(frozen=True)
class Source:
    """Where a figure comes from: ``what`` names the field it supports."""

    what: str
    title: str
    url: str | None
    year: int | None
    note: str | None = None


@dataclass(frozen=True)
class HardwareProfile:
    """One GPU model. Power W, memory GB, embodied kgCO2e per card, host kgCO2e per GPU, life in years."""

    key: str
    display_name: str
    nvml_names: tuple[str, ...]
    tdp_w: int
    idle_w: int
    memory_gb: int
    gpu_class: GpuClass
    embodied_kgco2e: EmbodiedKg
    host_embodied_kgco2e_per_gpu: Decimal
    lifetime_years: Decimal
    sources: tuple[Source, ...]
    # The host's power as modelled where the node has no meter: idle + per GPU carried, W. Optional,
    # and then cited in ``sources`` ("host_power_w"); without them a line stays at the GPU boundary.
    host_idle_w: Decimal | None = None
    host_per_gpu_w: Decimal | None = None

    def host_power_w(self, gpu_count: int) -> Decimal | None:
        """Modelled host power (W, beyond the GPU boards) of a node carrying ``gpu_count`` of these GPUs."""
        if self.host_idle_w is None or self.host_per_gpu_w is None:
            return None
        return self.host_idle_w + self.host_per_gpu_w * gpu_count

    @property
    def expected_life_h(self) -> Decimal:
        """Expected service life from new, in hours (years of 8760 h)."""
        return h_from_years(self.lifetime_years)

    def gpu_asset(self, prior_use_h: Decimal = ZERO, own_life_h: Decimal | None = None) -> EmbodiedAsset:
        """The card as a ledger asset; ``prior_use_h`` > 0 for a second-hand card."""
        return EmbodiedAsset(self.embodied_kgco2e, self.expected_life_h, prior_use_h, own_life_h)

    def host_asset(self, gpu_count: int, prior_use_h: Decimal = ZERO) -> EmbodiedAsset:
        """The default host share of a node carrying ``gpu_count`` of these GPUs (a point value)."""
        kg = self.host_embodied_kgco2e_per_gpu * gpu_count
        return EmbodiedAsset(EmbodiedKg(kg, kg, kg), self.expected_life_h, prior_use_h)


def _source(raw: dict[str, Any]) -> Source:
    return Source(raw["what"], raw["title"], raw.get("url"), raw.get("year"), raw.get("note"))


def _embodied(raw: dict[str, Any]) -> EmbodiedKg:
    return EmbodiedKg(Decimal(raw["low"]), Decimal(raw["central"]), Decimal(raw["high"]))


def _profile(raw: dict[str, Any]) -> HardwareProfile:
    try:
        profile = HardwareProfile(
            key=raw["key"],
            display_name=raw["display_name"],
            nvml_names=tuple(raw["nvml_names"]),
            tdp_w=int(raw["tdp_w"]),
            idle_w=int(raw["idle_w"]),
            memory_gb=int(raw["memory_gb"]),
            gpu_class=GpuClass(raw["class"]),
            embodied_kgco2e=_embodied(raw["embodied_kgco2e"]),
            host_embodied_kgco2e_per_gpu=Decimal(raw["host_embodied_kgco2e_per_gpu"]),
            lifetime_years=Decimal(raw["lifetime_years"]),
            sources=tuple(_source(source) for source in raw["sources"]),
            host_idle_w=_optional_decimal(raw.get("host_idle_w")),
            host_per_gpu_w=_optional_decimal(raw.get("host_per_gpu_w")),
        )
    except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
        raise CatalogError(f"catalog entry {raw.get('key', '?')!r}: {exc!r}") from exc
    _check_sources(profile)
    return profile


def _optional_decimal(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _check_sources(profile: HardwareProfile) -> None:
    required = REQUIRED_SOURCES | ({"host_power_w"} if profile.host_idle_w is not None else set())
    missing = required - {source.what for source in profile.sources}
    if missing:
        raise CatalogError(f"{profile.key}: no source for {sorted(missing)}")
    if not profile.nvml_names:
        raise CatalogError(f"{profile.key}: no NVML names")


def parse_catalog(document: dict[str, Any]) -> tuple[HardwareProfile, ...]:
    """Profiles from a parsed catalog document; raises ``CatalogError`` on duplicates or gaps."""
    profiles = tuple(_profile(raw) for raw in document["profiles"])
    keys = [profile.key for profile in profiles]
    if len(set(keys)) != len(keys):
        raise CatalogError(f"duplicate keys in {keys}")
    names = [normalize_nvml_name(name) for profile in profiles for name in profile.nvml_names]
    if len(set(names)) != len(names):
        raise CatalogError("an NVML name maps to two profiles")
    return profiles


@lru_cache(maxsize=4)
def load_catalog(path: Path = CATALOG_PATH) -> tuple[HardwareProfile, ...]:
    """The hardware profiles in ``path`` (the shipped catalog by default), read once."""
    with path.open(encoding="utf-8") as handle:
        return parse_catalog(json.load(handle))


def normalize_nvml_name(name: str) -> str:
    """Whitespace collapsed, case folded, leading ``"nvidia "`` removed."""
    return " ".join(name.split()).casefold().removeprefix("nvidia ")


@lru_cache(maxsize=4)
def _indexes(
    profiles: tuple[HardwareProfile, ...],
) -> tuple[dict[str, HardwareProfile], dict[str, HardwareProfile]]:
    exact = {name: profile for profile in profiles for name in profile.nvml_names}
    normalized = {normalize_nvml_name(name): profile for name, profile in exact.items()}
    return exact, normalized


def profile_for_nvml_name(name: str, profiles: tuple[HardwareProfile, ...] | None = None) -> HardwareProfile | None:
    """The profile for an NVML device name: exact match first, then normalised; ``None`` if unknown."""
    exact, normalized = _indexes(profiles if profiles is not None else load_catalog())
    return exact.get(name) or normalized.get(normalize_nvml_name(name))


def profile_for_key(key: str, profiles: tuple[HardwareProfile, ...] | None = None) -> HardwareProfile | None:
    """The profile with catalog key ``key`` (e.g. ``"h100-sxm"``), ``None`` if there is none."""
    return next((p for p in (profiles if profiles is not None else load_catalog()) if p.key == key), None)
