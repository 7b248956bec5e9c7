from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from grid import AnnualProvider, annual_intensity, marginal_intensity
from grid.annual import DATA_DIR, load_annual_data


@pytest.mark.parametrize(
    ("zone", "grams"),
    [("DE", "341"), ("SE", "23"), ("SE-SE3", "21"), ("PL", "581"), ("US-CAL-CISO", "229")],
)
def test_electricity_maps_2024_values(zone: str, grams: str) -> None:
    value = annual_intensity(zone, 2024)
    assert value is not None
    assert (value.zone, value.year, value.gco2e_per_kwh) == (zone, 2024, Decimal(grams))
    assert (value.kind, value.source, value.licence) == ("average", "electricitymaps-yearly-2024", "ODbL-1.0")
    assert "Electricity Maps" in value.attribution


def test_values_match_the_shipped_file() -> None:
    shipped = json.loads((DATA_DIR / "electricitymaps-yearly-2024.json").read_text())
    value = annual_intensity("DE", 2024)
    assert value is not None and value.gco2e_per_kwh == Decimal(shipped["DE"]["carbonIntensity"]["value"])


def test_zone_keys_are_case_insensitive() -> None:
    value = annual_intensity(" us-cal-ciso ", 2021)
    assert value is not None and (value.zone, value.gco2e_per_kwh) == ("US-CAL-CISO", Decimal(278))


@pytest.mark.parametrize(("asked", "used", "grams"), [(2031, 2025, "342"), (2019, 2021, "439"), (2022, 2022, "475")])
def test_nearest_year_is_used(asked: int, used: int, grams: str) -> None:
    value = annual_intensity("DE", asked)
    assert value is not None
    assert (value.year, value.source, value.gco2e_per_kwh) == (used, f"electricitymaps-yearly-{used}", Decimal(grams))


def test_zone_missing_from_electricity_maps_falls_back_to_ember_by_country() -> None:
    # Ukraine has no Electricity Maps yearly zone; Ember's UKR figure is from 2022.
    value = annual_intensity("UA", 2024)
    assert value is not None
    assert (value.year, value.gco2e_per_kwh, value.source) == (2022, Decimal("250.470"), "ember-2022")
    assert (value.licence, value.kind) == ("CC-BY-SA-4.0", "average")
    assert "Ember" in value.attribution


def test_subzone_unknown_to_electricity_maps_uses_its_country() -> None:
    value = annual_intensity("GB-REGION-13", 2024)
    assert value is not None and (value.source, value.gco2e_per_kwh) == ("ember-2024", Decimal("215.790"))


@pytest.mark.parametrize("zone", ["ZZ", "XX-NOWHERE", "", "World"])
def test_unknown_zone_is_none_never_zero(zone: str) -> None:
    assert annual_intensity(zone, 2024) is None


def test_marginal_is_the_unfccc_operating_margin_of_the_country() -> None:
    value = marginal_intensity("US-CAL-CISO")
    assert value is not None
    assert (value.kind, value.gco2e_per_kwh, value.source, value.year) == (
        "marginal",
        Decimal(416),
        "unfccc-ifi-2021",
        2021,
    )


def test_marginal_data_quirks() -> None:
    # The UNFCCC file labels Cayman Islands "CY"; Cyprus keeps CY, Cayman gets KY.
    cyprus, cayman = marginal_intensity("CY"), marginal_intensity("KY")
    assert cyprus is not None and cyprus.gco2e_per_kwh == Decimal(751)
    assert cayman is not None and cayman.gco2e_per_kwh == Decimal(753)
    # "0" in the file means no published factor, not a zero-carbon grid.
    assert marginal_intensity("AL") is None
    assert marginal_intensity("ZZ") is None


def test_every_electricity_maps_year_has_every_zone() -> None:
    data = load_annual_data()
    assert sorted(data.electricitymaps) == [2021, 2022, 2023, 2024, 2025]
    assert {len(zones) for zones in data.electricitymaps.values()} == {352}


def test_annual_provider_gives_each_hour_its_years_average() -> None:
    hours = AnnualProvider().fetch("DE", datetime(2024, 12, 31, 23, tzinfo=UTC), datetime(2025, 1, 1, 1, tzinfo=UTC))
    assert [(h.hour_start.year, h.gco2e_per_kwh, h.source, h.is_estimated) for h in hours] == [
        (2024, Decimal(341), "electricitymaps-yearly-2024", True),
        (2025, Decimal(342), "electricitymaps-yearly-2025", True),
    ]
    assert AnnualProvider().fetch("ZZ", datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)) == []


def test_data_ships_with_its_licences() -> None:
    readme = (DATA_DIR / "README.md").read_text()
    for needed in ("Open Database License", "CC BY-SA 4.0", "Ember", "UNFCCC", "CO2.js"):
        assert needed in readme


def test_package_imports_without_django() -> None:
    code = "import sys, grid; assert 'django' not in sys.modules, sorted(sys.modules)"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)
