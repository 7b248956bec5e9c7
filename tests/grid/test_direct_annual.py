"""The direct figure beside the shipped yearly figures, worked by hand from grid/data/direct-annual-2021.json.

Poland's 2021 generation mix (Our World in Data, from Ember and the BP Statistical Review), as the shipped
file gives it: coal 70.339 %, gas 9.691 %, oil 2.836 %, biomass 4.630 %, hydro 1.319 %, wind 8.972 %,
solar 2.213 %, nothing else. With Electricity Maps' per-mode factors (direct / lifecycle, g/kWh: coal
760 / 820, gas 370 / 490, oil 406 / 650, biomass 0 / 230, hydro 0 / 24, wind 0 / 11, solar 0 / 45):

    direct    = 0.70339 x 760 + 0.09691 x 370 + 0.02836 x 406                                     = 581.95 g/kWh
    lifecycle = 0.70339 x 820 + 0.09691 x 490 + 0.02836 x 650 + 0.04630 x 230 + 0.01319 x 24
                + 0.08972 x 11 + 0.02213 x 45                                                      = 655.65 g/kWh

Electricity Maps' 2021 yearly figure for PL is 851 g/kWh (lifecycle); its direct part is taken in the mix's
proportion: 851 x 581.95 / 655.65 = 755.341 g/kWh, inside the 650-780 g/kWh of Poland's published direct
grid factors for 2021. Sweden: 27 x 5.77 / 43.19 = 3.607 g/kWh (hydro, nuclear, wind, biomass: near zero at
the stack); France: 60 x 37.81 / 66.81 = 33.956 g/kWh (nuclear).
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from grid import annual_intensity
from grid.annual import DATA_DIR, DIRECT_MIX_FILE

SHIPPED = json.loads((DATA_DIR / DIRECT_MIX_FILE).read_text(encoding="utf-8"))


def test_poland_by_hand_from_the_shipped_mix() -> None:
    poland = SHIPPED["countries"]["POL"]
    assert (poland["country"], poland["year"]) == ("Poland", 2021)
    shares = {mode: Decimal(share) for mode, share in poland["shares"].items() if Decimal(share)}
    assert shares == {
        "coal": Decimal("0.70339"), "gas": Decimal("0.09691"), "oil": Decimal("0.02836"),
        "biomass": Decimal("0.04630"), "hydro": Decimal("0.01319"), "wind": Decimal("0.08972"),
        "solar": Decimal("0.02213"),
    }  # fmt: skip
    direct = Decimal("0.70339") * 760 + Decimal("0.09691") * 370 + Decimal("0.02836") * 406
    assert round(direct, 2) == Decimal(poland["direct_gco2_per_kwh"]) == Decimal("581.95")
    lifecycle = (
        Decimal("0.70339") * 820 + Decimal("0.09691") * 490 + Decimal("0.02836") * 650 + Decimal("0.04630") * 230
        + Decimal("0.01319") * 24 + Decimal("0.08972") * 11 + Decimal("0.02213") * 45
    )  # fmt: skip
    assert round(lifecycle, 2) == Decimal(poland["lifecycle_gco2_per_kwh"]) == Decimal("655.65")

    value = annual_intensity("PL", 2021)
    assert value is not None and (value.gco2e_per_kwh, value.basis) == (Decimal(851), "lifecycle")
    assert value.direct_gco2e_per_kwh == Decimal("755.341")  # 851 x 581.95 / 655.65


@pytest.mark.parametrize(
    ("zone", "direct", "low", "high"),
    [
        ("PL", "755.341", 650, 780),  # coal and lignite
        ("SE", "3.607", 0, 15),  # hydro, nuclear, wind
        ("SE-SE3", "3.206", 0, 15),  # a bidding zone: Sweden's mix (24 x 5.77 / 43.19)
        ("FR", "33.956", 20, 60),  # nuclear
        ("DE", "350.605", 300, 420),  # 439 x 288.95 / 361.80
    ],
)
def test_direct_figures_of_2021_are_those_a_reader_knows(zone: str, direct: str, low: int, high: int) -> None:
    value = annual_intensity(zone, 2021)
    assert value is not None and value.direct_gco2e_per_kwh == Decimal(direct)
    assert low <= value.direct_gco2e_per_kwh <= high
    assert value.direct_gco2e_per_kwh < value.gco2e_per_kwh  # the upstream part is Scope 3 Category 3


def test_every_shipped_mix_adds_up_and_keeps_direct_within_lifecycle() -> None:
    factors = SHIPPED["_about"]["factors_gco2_per_kwh"]
    for iso3, entry in SHIPPED["countries"].items():
        shares = {mode: Decimal(share) for mode, share in entry["shares"].items()}
        assert abs(sum(shares.values()) - 1) <= Decimal("0.0001"), iso3
        direct = sum(share * factors[mode]["direct"] for mode, share in shares.items())
        lifecycle = sum(share * factors[mode]["lifecycle"] for mode, share in shares.items())
        assert round(direct, 2) == Decimal(entry["direct_gco2_per_kwh"]), iso3
        assert round(lifecycle, 2) == Decimal(entry["lifecycle_gco2_per_kwh"]), iso3
        assert 0 <= direct <= lifecycle, iso3


def test_a_zone_whose_country_has_no_mix_has_no_direct_figure() -> None:
    reunion = annual_intensity("RE", 2024)
    assert reunion is not None and reunion.direct_gco2e_per_kwh is None


def test_the_mix_ships_with_its_sources_and_licences() -> None:
    readme = (DATA_DIR / "README.md").read_text(encoding="utf-8")
    for needed in (DIRECT_MIX_FILE, "Our World in Data", "CC BY 4.0", "electricitymaps-contrib", "MIT"):
        assert needed in readme
    about = SHIPPED["_about"]
    assert about["licence"] == "CC-BY-4.0" and "owid/energy-data" in about["mix"]
