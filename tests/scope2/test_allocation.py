"""Market-based allocation over the hand-worked year (``tests/helpers/instruments.py``), no database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from scope2.allocation import Instrument, ResidualMix, SiteHour, site_allocate
from scope2.claims import OverAllocationError
from tests.helpers.instruments import (
    EVIDENCE,
    HOURS,
    LOAD_KWH,
    LOCATION_G_PER_KWH,
    PPA_KWH,
    YEAR_END,
    YEAR_START,
    solar_profile_kwh,
)

CONSUMPTION = [SiteHour(hour, LOAD_KWH, LOAD_KWH * LOCATION_G_PER_KWH, LOAD_KWH) for hour in HOURS]
RESIDUAL = ResidualMix(Decimal(400), "test residual mix")
PPA = Instrument(
    id=1,
    kind="ppa",
    name="solar PPA",
    volume_kwh=PPA_KWH,
    share=None,
    delivery_start=YEAR_START,
    delivery_end=YEAR_END,
    vintage_year=2025,
    generation_zone="DE",
    technology="solar",
    stated_factor=None,
    evidence=EVIDENCE,
    profile_kwh=solar_profile_kwh(),
)


def allocate(*instruments: Instrument, residual: ResidualMix | None = RESIDUAL, matching: str = "auto"):
    return site_allocate(
        hours=CONSUMPTION,
        instruments=instruments,
        site_zone="DE",
        start=YEAR_START,
        end=YEAR_END,
        residual=residual,
        matching=matching,  # type: ignore[arg-type]
    )


def test_ppa_covers_80_percent_annually_matched_and_the_rest_takes_the_residual_mix() -> None:
    allocation = allocate(PPA, matching="annual")
    (use,) = allocation.uses
    assert allocation.consumption_kwh == 87_600
    assert (use.matching, use.matched_kwh, use.unused_kwh) == ("annual", 70_080, 0)
    assert use.matched_kwh / allocation.consumption_kwh == Decimal("0.8")
    assert allocation.residual_mix_kwh == 17_520
    assert allocation.market_co2e_g == 17_520 * 400  # 7.008 t; the PPA's solar is 0 g/kWh
    assert allocation.location_co2e_g == 87_600 * 300


def test_ppa_with_an_hourly_profile_covers_55_percent_hourly_matched() -> None:
    allocation = allocate(PPA)
    (use,) = allocation.uses
    assert use.matching == "hourly"
    assert use.matched_kwh == 132 * 365
    assert use.matched_kwh / allocation.consumption_kwh == Decimal("0.55")
    assert use.unused_kwh == 60 * 365  # the midday surplus is not carried to the night
    assert allocation.residual_mix_kwh == 108 * 365
    assert allocation.market_co2e_g == 108 * 365 * 400  # 15.768 t
    assert allocation.hourly_carbon_free_kwh[datetime(2025, 6, 1, 12, tzinfo=UTC)] == 10
    assert allocation.hourly_carbon_free_kwh[datetime(2025, 6, 1, 6, tzinfo=UTC)] == 6
    assert allocation.hourly_carbon_free_kwh[datetime(2025, 6, 1, 2, tzinfo=UTC)] == 0


def test_without_a_residual_mix_the_location_factor_stands_in_labelled() -> None:
    allocation = allocate(PPA, residual=None)
    assert allocation.residual_mix_source is None
    assert allocation.location_fallback_kwh == 108 * 365
    assert allocation.market_co2e_g == 108 * 365 * 300
    assert allocation.unknown_kwh == 0


def test_a_guarantee_of_origin_from_another_market_or_an_old_vintage_is_not_used() -> None:
    norwegian = replace(
        PPA, id=2, kind="go", name="NO hydro", profile_kwh=None, generation_zone="US-CAL-CISO", technology="hydro"
    )
    old = replace(norwegian, id=3, name="2022 hydro", generation_zone="DE", vintage_year=2022)
    allocation = allocate(norwegian, old)
    assert [use.matching for use in allocation.uses] == ["not_used", "not_used"]
    assert [r.criterion for r in allocation.uses[0].criteria if not r.met] == ["market_boundary"]
    assert [r.criterion for r in allocation.uses[1].criteria if not r.met] == ["vintage"]
    assert allocation.residual_mix_kwh == 87_600


def test_a_german_guarantee_of_origin_adds_to_the_ppa_annually() -> None:
    go = replace(
        PPA, id=2, kind="go", name="DE hydro", profile_kwh=None, technology="hydro", volume_kwh=Decimal(10_000)
    )
    allocation = allocate(PPA, go)
    assert [(use.matching, use.matched_kwh) for use in allocation.uses] == [("hourly", 132 * 365), ("annual", 10_000)]
    assert allocation.residual_mix_kwh == 108 * 365 - 10_000


def test_a_supplier_rate_covers_its_share_of_what_is_left_at_its_factor() -> None:
    tariff = replace(
        PPA,
        id=5,
        kind="supplier_rate",
        name="green tariff",
        volume_kwh=None,
        share=Decimal("0.5"),
        profile_kwh=None,
        technology="mixed",
        stated_factor=Decimal(100),
    )
    allocation = allocate(tariff)
    assert allocation.uses[0].matched_kwh == 43_800
    assert allocation.market_co2e_g == 43_800 * 100 + 43_800 * 400


def test_shares_above_100_percent_of_a_site_are_refused() -> None:
    first = replace(
        PPA,
        id=5,
        kind="supplier_rate",
        volume_kwh=None,
        share=Decimal("0.7"),
        profile_kwh=None,
        stated_factor=Decimal(100),
    )
    second = replace(first, id=6, name="second tariff", share=Decimal("0.4"))
    with pytest.raises(OverAllocationError, match="would cover 110 %"):
        allocate(first, second)
