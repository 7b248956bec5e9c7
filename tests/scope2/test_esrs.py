"""ESRS E1-5 energy mix and E1-6 totals in the ESRS export, worked by hand; every datapoint keyed and versioned.

The export's year is ``worked.py``'s (``test_scope2_report``): 87.6 MWh at fra-1 (DE), a PPA (solar) covering
70.08 MWh matched annually (the disclosed matching by default; 48.18 MWh hourly), DE's residual mix 400 g/kWh:
Scope 2 location-based 26.28 t, market-based 7.008 t (annual).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from fleets.models import Site
from scope2.energy_mix import GridMix, energy_mix, grid_mix
from scope2.esrs import STANDARD_VERSION

pytestmark = pytest.mark.django_db

YEAR = {"period": "2025"}
SCOPE1 = {"activity": "generator", "start": "2025-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z",
          "co2e_kg": "1500", "description": "diesel genset tests"}  # fmt: skip


def test_instruments_count_renewable_first_and_the_rest_takes_the_grids_mix() -> None:
    # given 10 MWh, 4 MWh covered by renewable instruments, a grid 50 % renewable and 20 % nuclear (70 % carbon-free)
    grid = GridMix(renewable_share=Decimal("0.5"), carbon_free_share=Decimal("0.7"), source="test")

    # when
    mix = energy_mix(consumption_kwh=Decimal(10_000), renewable_instruments_kwh=Decimal(4_000), grid=grid)

    # then renewable 4 + 6 x 0.5 = 7 MWh (70 %), nuclear 6 x 0.2 = 1.2 MWh, fossil 6 x 0.3 = 1.8 MWh
    assert (mix.renewable_kwh, mix.nuclear_kwh, mix.fossil_kwh, mix.unknown_kwh) == (7000, 1200, 1800, 0)
    assert (mix.share(mix.renewable_kwh), mix.share(mix.nuclear_kwh), mix.share(mix.fossil_kwh)) == (
        Decimal("0.7"), Decimal("0.12"), Decimal("0.18"),
    )  # fmt: skip


def test_a_zone_without_a_grid_mix_leaves_the_rest_unknown_not_guessed() -> None:
    mix = energy_mix(consumption_kwh=Decimal(10), renewable_instruments_kwh=Decimal(4), grid=None)

    assert (mix.renewable_kwh, mix.nuclear_kwh, mix.fossil_kwh, mix.unknown_kwh) == (4, 0, 0, 6)
    assert grid_mix(zone="XX-NOWHERE", year=2025) is None


def test_the_grid_mix_is_read_from_the_shipped_yearly_file() -> None:
    mix = grid_mix(zone="DE", year=2025)

    assert mix is not None  # DE 2025: renewableEnergy 60 %, carbonFreeEnergy 64 %
    assert (mix.renewable_share, mix.nuclear_share, mix.fossil_share) == (
        Decimal("0.6"), Decimal("0.04"), Decimal("0.36"),
    )  # fmt: skip
    assert mix.source == "electricitymaps-yearly-2025 renewableEnergy, carbonFreeEnergy"


def _esrs(client: APIClient) -> dict[str, Any]:
    response = client.get("/api/v1/reports/scope2/esrs/", YEAR)
    assert response.status_code == 200, response.content
    return response.json()


def test_e1_5_gives_fossil_nuclear_and_renewable_with_shares(
    sustainability_a: APIClient, year_consumed: Any, residual_de: None, ppa: dict[str, Any]
) -> None:
    points = {point["id"]: point for point in _esrs(sustainability_a)["datapoints"]}

    # 70.08 MWh solar (PPA, annual matching), then DE 2025 (60 % renewable, 4 % nuclear, 36 % fossil) for 17.52 MWh.
    assert points["E1-5.37"]["value"] == 87.6
    assert points["E1-5.37(c)"]["value"] == points["E1-5.37(c)(ii)"]["value"] == 80.592  # 70.08 + 10.512
    assert points["E1-5.37(c)(ii)"]["from_instruments_mwh"] == 70.08
    assert points["E1-5.37(b)"]["value"] == 0.7008  # 17.52 x 0.04
    assert points["E1-5.37(a)"]["value"] == 6.3072  # 17.52 x 0.36
    assert (points["E1-5.AR34.renewable_share"]["value"], points["E1-5.AR34.nuclear_share"]["value"]) == (92.0, 0.8)
    assert points["E1-5.AR34.fossil_share"]["value"] == 7.2
    assert points["E1-5.AR34.renewable_share"]["unit"] == "%"
    assert points["E1-5.37(c)(i)"]["status"] == points["E1-5.37(c)(iii)"]["status"] == "not_applicable"
    assert points["E1-5.37(a)"]["grid_mix_sources"] == ["electricitymaps-yearly-2025 renewableEnergy, carbonFreeEnergy"]


def test_e1_6_totals_are_scope_1_2_and_3_under_each_scope_2_method(
    sustainability_a: APIClient, year_consumed: Any, residual_de: None, ppa: dict[str, Any], site_a: Site
) -> None:
    response = sustainability_a.post("/api/v1/scope1-emissions/", SCOPE1 | {"site": site_a.pk}, format="json")
    assert response.status_code == 201, response.content

    points = {point["id"]: point for point in _esrs(sustainability_a)["datapoints"]}

    scope1, scope3 = points["E1-6.48(a)"]["value"], points["E1-6.51"]["value"]
    location, market = points["E1-6.49(a)"]["value"], points["E1-6.49(b)"]["value"]
    assert (scope1, location, market) == (1.5, 26.28, 7.008)
    # ESRS E1 para. 52 and AR 47: a total per Scope 2 method, Scope 1 + Scope 2 + Scope 3.
    assert points["E1-6.52(a)"]["value"] == pytest.approx(scope1 + location + scope3)
    assert points["E1-6.52(b)"]["value"] == pytest.approx(scope1 + market + scope3)
    assert points["E1-6.52(b)"]["value"] == pytest.approx(8.508 + scope3)


def test_every_datapoint_carries_its_id_and_standard_version(
    sustainability_a: APIClient, year_consumed: Any, residual_de: None, ppa: dict[str, Any]
) -> None:
    esrs = _esrs(sustainability_a)

    ids = [point["id"] for point in esrs["datapoints"]]
    assert len(ids) == len(set(ids))
    assert {"E1-5.37", "E1-5.37(a)", "E1-5.37(b)", "E1-5.37(c)", "E1-6.48(a)", "E1-6.49(a)", "E1-6.49(b)",
            "E1-6.51", "E1-6.52(a)", "E1-6.52(b)"} <= set(ids)  # fmt: skip
    for point in esrs["datapoints"]:
        assert point["id"] == point["datapoint"] and point["id"].startswith(("E1-5.", "E1-6."))
        assert point["standard_version"] == STANDARD_VERSION == "ESRS 2023 (Delegated Regulation (EU) 2023/2772)"
        assert point["unit"] and point["label"]
    assert esrs["standard_version"] == STANDARD_VERSION and "not confirmed" in esrs["id_scheme"]


def test_every_datapoint_names_its_efrag_ig3_id_beside_its_paragraph(
    sustainability_a: APIClient, year_consumed: Any, residual_de: None, ppa: dict[str, Any]
) -> None:
    points = {point["id"]: point["efrag_ig3_id"] for point in _esrs(sustainability_a)["datapoints"]}
    assert {key: points[key] for key in ("E1-5.37", "E1-5.37(a)", "E1-5.37(b)", "E1-5.37(c)", "E1-6.48(a)",
            "E1-6.49(a)", "E1-6.49(b)", "E1-6.51", "E1-6.52(a)", "E1-6.52(b)")} == {
        "E1-5.37": "E1-5_01", "E1-5.37(a)": "E1-5_02", "E1-5.37(b)": "E1-5_03", "E1-5.37(c)": "E1-5_05",
        "E1-6.48(a)": "E1-6_07", "E1-6.49(a)": "E1-6_09", "E1-6.49(b)": "E1-6_10", "E1-6.51": "E1-6_11",
        "E1-6.52(a)": "E1-6_12", "E1-6.52(b)": "E1-6_13",
    }  # fmt: skip
    assert all(ig3 is not None for ig3 in points.values())  # every exported paragraph has its IG 3 id
    assert len(set(points.values())) == len(points)
