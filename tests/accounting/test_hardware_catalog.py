"""The shipped GPU catalog: every entry loads with sources, real NVML names find their profile."""

from __future__ import annotations

import json
from decimal import Decimal as D
from typing import Any

import pytest

from accounting.hardware import (
    CATALOG_PATH,
    REQUIRED_SOURCES,
    CatalogError,
    GpuClass,
    HardwareProfile,
    load_catalog,
    normalize_nvml_name,
    parse_catalog,
    profile_for_key,
    profile_for_nvml_name,
)
from accounting.ledger import embodied_rate_g_per_h

PROFILES = load_catalog()


def raw_catalog() -> dict[str, Any]:
    return json.loads(CATALOG_PATH.read_text(encoding="utf-8"))


def test_catalog_has_the_models_the_fleets_run() -> None:
    keys = {profile.key for profile in PROFILES}

    assert keys >= {
        "h100-sxm",
        "h100-pcie",
        "h200-sxm",
        "a100-sxm4-40gb",
        "a100-sxm4-80gb",
        "a100-pcie-40gb",
        "a100-pcie-80gb",
        "l40s",
        "l4",
        "rtx-4090",
        "rtx-3090",
    }


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.key)
def test_every_entry_is_complete_and_cites_a_source_for_each_figure(profile: HardwareProfile) -> None:
    cited = {source.what for source in profile.sources}

    assert cited >= REQUIRED_SOURCES
    for source in profile.sources:
        assert source.title
        assert source.url is None or source.url.startswith(("https://", "http://"))
        assert source.url or source.note, f"{profile.key}: {source.title} needs a URL or a note"
        assert source.year is None or 2000 <= source.year <= 2030
        assert source.year is not None or source.note
    assert 0 < profile.idle_w < profile.tdp_w
    assert profile.memory_gb > 0
    assert 0 < profile.embodied_kgco2e.low <= profile.embodied_kgco2e.central <= profile.embodied_kgco2e.high
    assert profile.host_embodied_kgco2e_per_gpu > 0
    assert profile.lifetime_years == 4


@pytest.mark.parametrize(
    ("key", "tdp_w", "memory_gb", "gpu_class"),
    [
        ("h100-sxm", 700, 80, GpuClass.ENTERPRISE),
        ("h100-pcie", 350, 80, GpuClass.ENTERPRISE),
        ("h200-sxm", 700, 141, GpuClass.ENTERPRISE),
        ("a100-sxm4-40gb", 400, 40, GpuClass.ENTERPRISE),
        ("a100-sxm4-80gb", 400, 80, GpuClass.ENTERPRISE),
        ("a100-pcie-40gb", 250, 40, GpuClass.ENTERPRISE),
        ("a100-pcie-80gb", 300, 80, GpuClass.ENTERPRISE),
        ("l40s", 350, 48, GpuClass.ENTERPRISE),
        ("l4", 72, 24, GpuClass.ENTERPRISE),
        ("rtx-4090", 450, 24, GpuClass.CONSUMER),
        ("rtx-3090", 350, 24, GpuClass.CONSUMER),
    ],
)
def test_datasheet_power_and_memory(key: str, tdp_w: int, memory_gb: int, gpu_class: GpuClass) -> None:
    profile = profile_for_key(key)

    assert profile is not None
    assert (profile.tdp_w, profile.memory_gb, profile.gpu_class) == (tdp_w, memory_gb, gpu_class)


@pytest.mark.parametrize(
    ("nvml_name", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
        ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ],
)
def test_real_nvml_names_map_to_their_profile(nvml_name: str, key: str) -> None:
    profile = profile_for_nvml_name(nvml_name)

    assert profile is not None
    assert profile.key == key


@pytest.mark.parametrize(
    ("nvml_name", "key"),
    [
        ("GeForce RTX 3090", "rtx-3090"),  # older drivers leave out the vendor
        ("nvidia h100 pcie", "h100-pcie"),
        ("  NVIDIA   L40S ", "l40s"),
    ],
)
def test_names_match_after_documented_normalisation(nvml_name: str, key: str) -> None:
    profile = profile_for_nvml_name(nvml_name)

    assert profile is not None
    assert profile.key == key


@pytest.mark.parametrize(
    "nvml_name",
    ["NVIDIA H100 NVL", "NVIDIA H200 NVL", "NVIDIA GeForce RTX 3090 Ti", "NVIDIA L40", "Tesla T4", "NVIDIA", ""],
)
def test_unknown_names_return_none(nvml_name: str) -> None:
    assert profile_for_nvml_name(nvml_name) is None


def test_normalisation() -> None:
    assert normalize_nvml_name("  NVIDIA  GeForce RTX 4090\n") == "geforce rtx 4090"


def test_profiles_become_ledger_assets() -> None:
    # H100: 197 kg over 4 x 8760 = 35,040 h; host 312.5 kg per GPU x 8
    h100 = profile_for_key("h100-sxm")
    assert h100 is not None

    assert h100.expected_life_h == D(35040)
    assert embodied_rate_g_per_h(h100.gpu_asset()).central == D(197_000) / D(35040)
    assert h100.host_asset(8).embodied_kgco2e.central == D(2500)
    assert h100.gpu_asset(prior_use_h=D(8760)).prior_use_h == D(8760)


def test_duplicate_keys_or_names_and_missing_sources_are_refused() -> None:
    document = raw_catalog()
    duplicated = {"profiles": [*document["profiles"], document["profiles"][0]]}
    renamed = {"profiles": [*document["profiles"], {**document["profiles"][0], "key": "copy"}]}
    unsourced = {"profiles": [{**document["profiles"][0], "sources": []}]}
    broken = {"profiles": [{**document["profiles"][0], "tdp_w": None}]}

    for bad in (duplicated, renamed, unsourced, broken):
        with pytest.raises(CatalogError):
            parse_catalog(bad)


def test_modelled_host_power_needs_its_own_source_and_is_idle_plus_per_gpu() -> None:
    shipped = raw_catalog()["profiles"][0]
    uncited = [source for source in shipped["sources"] if source["what"] != "host_power_w"]
    entry = {**shipped, "host_idle_w": "400", "host_per_gpu_w": "150", "sources": uncited}
    with pytest.raises(CatalogError, match="host_power_w"):
        parse_catalog({"profiles": [entry]})

    cited = {**entry, "sources": [*uncited, {"what": "host_power_w", "title": "a wall-meter survey"}]}
    (profile,) = parse_catalog({"profiles": [cited]})
    assert profile.host_power_w(8) == D(400 + 8 * 150)
    without = {key: value for key, value in entry.items() if key not in {"host_idle_w", "host_per_gpu_w"}}
    assert parse_catalog({"profiles": [without]})[0].host_power_w(8) is None


@pytest.mark.parametrize(
    ("key", "host_8_gpus_w"),
    [
        # DGX H100/H200: 10,200 W max - 8 x 700 W boards = 4,600 W beyond the boards (400 W idle + 8 x 525 W)
        ("h100-sxm", D(4600)),
        ("h200-sxm", D(4600)),
        # DGX A100: 6,500 W max - 8 x 400 W = 3,300 W (400 W idle + 8 x 362.5 W)
        ("a100-sxm4-80gb", D(3300)),
        # a PCIe server: 250 W idle + 8 x the supply's loss on 350 W at 92 % (30.4 W)
        ("h100-pcie", D("493.2")),
        # a desktop host: 60 W idle + 8 x the loss on 450 W at 92 % (39.1 W)
        ("rtx-4090", D("372.8")),
    ],
)
def test_the_shipped_host_power_is_cited_and_worked_from_its_sources(key: str, host_8_gpus_w: D) -> None:
    profile = next(p for p in PROFILES if p.key == key)
    assert profile.host_power_w(8) == host_8_gpus_w
    cited = [source for source in profile.sources if source.what == "host_power_w"]
    assert any(source.url for source in cited)  # a published figure, with its address
    assert any(source.title == "Wattledger assumption" for source in cited)  # the assumption named as such


def test_every_shipped_profile_models_its_host() -> None:
    assert all(profile.host_power_w(1) is not None for profile in PROFILES)


def _first_source(key: str, what: str) -> Any:
    profile = next(p for p in PROFILES if p.key == key)
    return next(source for source in profile.sources if source.what == what)


def test_the_manufacturers_footprint_is_cited_first_where_it_applies_and_the_ranges_stay() -> None:
    hgx = _first_source("h100-sxm", "embodied_kgco2e")
    assert hgx.title.startswith("NVIDIA, HGX H100 Product Carbon Footprint") and hgx.url
    assert hgx.note is not None and "cradle-to-gate" in hgx.note and "no figure is taken from it yet" in hgx.note
    for key in ("rtx-4090", "rtx-3090"):
        host = _first_source(key, "host_embodied_kgco2e_per_gpu")
        assert host.title.startswith("Dell Technologies, Product carbon footprints") and host.url
        assert host.note is not None and "no number is taken from it yet" in host.note
    # the figures and ranges are those of the sources already read, until the PCF figures are entered
    h100 = next(p for p in PROFILES if p.key == "h100-sxm")
    assert (h100.embodied_kgco2e.low, h100.embodied_kgco2e.central, h100.embodied_kgco2e.high) == (
        D("78.8"), D("197"), D("315.2"),
    )  # fmt: skip
    assert next(p for p in PROFILES if p.key == "rtx-4090").host_embodied_kgco2e_per_gpu == D("87.5")
