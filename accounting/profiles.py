"""Which hardware profile (and so which embodied figures) applies to a GPU."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import prefetch_related_objects

from accounting.hardware import (
    GpuClass,
    HardwareProfile,
    Source,
    load_catalog,
    profile_for_key,
    profile_for_nvml_name,
)
from accounting.ledger import EmbodiedAsset, EmbodiedKg, h_from_years
from accounting.ledger.embodied import own_life_h
from accounting.models import GpuAsset
from accounting.models import HardwareProfile as HardwareProfileRow
from fleets.models import Gpu

UNKNOWN_MODEL = "unknown"


def hardware_profiles(*, organization_id: int) -> tuple[HardwareProfile, ...]:
    """The shipped catalog followed by the organization's own profiles (later entries win a match)."""
    own = tuple(_profile(row) for row in HardwareProfileRow.objects.filter(organization_id=organization_id))
    overridden = {profile.key for profile in own}
    return tuple(p for p in load_catalog() if p.key not in overridden) + own


def _profile(row: HardwareProfileRow) -> HardwareProfile:
    return HardwareProfile(
        key=row.key,
        display_name=row.display_name,
        nvml_names=tuple(row.nvml_names),
        tdp_w=row.tdp_w,
        idle_w=row.idle_w,
        memory_gb=row.memory_gb,
        gpu_class=GpuClass(row.gpu_class),
        embodied_kgco2e=EmbodiedKg(
            Decimal(row.embodied_low_kgco2e), Decimal(row.embodied_central_kgco2e), Decimal(row.embodied_high_kgco2e)
        ),
        host_embodied_kgco2e_per_gpu=Decimal(row.host_embodied_kgco2e_per_gpu),
        lifetime_years=Decimal(row.lifetime_years),
        sources=tuple(
            Source(s.get("what", ""), s.get("title", ""), s.get("url"), s.get("year"), s.get("note"))
            for s in row.sources
        ),
        host_idle_w=None if row.host_idle_w is None else Decimal(row.host_idle_w),
        host_per_gpu_w=None if row.host_per_gpu_w is None else Decimal(row.host_per_gpu_w),
    )


def profile_for_gpu(gpu: Gpu, profiles: tuple[HardwareProfile, ...]) -> HardwareProfile | None:
    """The asset's explicit profile key if set, else a match on the NVML name; ``None`` when unknown."""
    asset = gpu_asset_row(gpu)
    if asset is not None and asset.profile_key:
        return profile_for_key(asset.profile_key, profiles)
    return profile_for_nvml_name(gpu.name, profiles)


def gpu_profiles(gpus: list[Gpu], *, organization_id: int) -> list[tuple[Gpu, HardwareProfile | None]]:
    """Each GPU with its hardware profile (``profile_for_gpu``), ``None`` for a model no profile matches."""
    prefetch_related_objects(gpus, "asset")  # an explicit profile on the card's asset wins: one query
    profiles = hardware_profiles(organization_id=organization_id)
    return [(gpu, profile_for_gpu(gpu, profiles)) for gpu in gpus]


def unknown_gpu_models(pairs: Iterable[tuple[Gpu, HardwareProfile | None]]) -> list[str]:
    """The GPU model names (as NVML or dcgm-exporter reported them) that no hardware profile matches, sorted."""
    return sorted({gpu.name for gpu, profile in pairs if profile is None})


def gpu_embodied_asset(gpu: Gpu, profile: HardwareProfile | None) -> EmbodiedAsset | None:
    """The card's embodied asset over its own life (second-hand cards: the remaining life)."""
    if profile is None:
        return None
    asset = gpu_asset_row(gpu)
    return profile.gpu_asset() if asset is None else profile.gpu_asset(*_asset_hours(asset))


def _asset_hours(asset: GpuAsset) -> tuple[Decimal, Decimal | None]:
    """Prior use and our own expected use of the card, in hours."""
    own_h = h_from_years(Decimal(asset.expected_own_years)) if asset.expected_own_years else None
    return h_from_years(Decimal(asset.prior_use_years)), own_h


def gpu_embodied_until(gpu: Gpu, profile: HardwareProfile | None, in_service_from: datetime | None) -> datetime | None:
    """When the card's own life ends: its in-service instant (``accounting.assets.card_in_service_at``: the asset
    row's date, else its owned price's in-service date, else the node's commissioning or the card's first
    sample; a card that joined the node later, not before its own installation) plus its own life. After it,
    its embodied carbon is fully allocated (GHG Protocol Scope 3 / SCI: an asset is counted once, over its life,
    never after); the hour it ends in carries only its part before the end."""
    embodied = gpu_embodied_asset(gpu, profile)
    if embodied is None or in_service_from is None:
        return None
    return in_service_from + timedelta(hours=float(own_life_h(embodied)))


def host_embodied_until(profile: HardwareProfile | None, in_service_from: datetime | None) -> datetime | None:
    """When the node's host share (chassis, CPUs, memory, disks) is fully allocated: in service plus its life.

    The host has no asset row of its own: its life is the GPU profile's, from the node's in-service instant
    (``accounting.assets.host_in_service_at``: its owned price's, else its commissioning, else its first
    sample); the hour it ends in carries only its part before the end."""
    if profile is None or in_service_from is None:
        return None
    return in_service_from + timedelta(hours=float(profile.expected_life_h))


def gpu_asset_row(gpu: Gpu) -> GpuAsset | None:
    """The card's asset row, if it has one (prefetch ``asset`` to read it without a query)."""
    # A missing reverse one-to-one raises RelatedObjectDoesNotExist, an AttributeError.
    asset: GpuAsset | None = getattr(gpu, "asset", None)
    return asset
