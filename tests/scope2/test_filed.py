"""Scope 2 as filed: the disclosed matching, quarters that add up to the year, the residual mix's year, the
evidence an auditor checks, Quality Criteria 5-7 and the biogenic CO2 memo. Hand-worked figures in comments."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from itertools import pairwise
from typing import Any

import pytest
from rest_framework.test import APIClient

from fleets.models import Role, Site
from scope2.allocation import Instrument, ResidualMix, SiteHour
from scope2.markets import market_boundary_check
from scope2.models import ContractualInstrument, ResidualMixFactor
from scope2.quality import Evidence, criteria_check
from scope2.residual_mixes import residual_mix_save
from scope2.year_to_date import period_allocate
from tests.helpers.factories import NodeFactory
from tests.helpers.instruments import (
    EVIDENCE,
    EVIDENCE_FIELDS,
    HOURS,
    LOAD_KWH,
    LOCATION_G_PER_KWH,
    YEAR_END,
    YEAR_START,
    ledger_hours,
    ppa_body,
    solar_profile_kwh,
)

Q1_HOURS = [hour for hour in HOURS if hour.month <= 3]  # 90 days, 2,160 h: 21,600 kWh at 10 kWh/h
QUARTERS = ["2025-Q1", "2025-Q2", "2025-Q3", "2025-Q4"]
RESIDUAL = ResidualMix(Decimal(400), "test residual mix", 2025)
GO = Instrument(
    id=1, kind="go", name="20 MWh GO", volume_kwh=Decimal(20_000), share=None, delivery_start=YEAR_START,
    delivery_end=YEAR_END, vintage_year=2025, generation_zone="DE", technology="hydro", stated_factor=None,
    evidence=replace(EVIDENCE, purchase_type="unbundled"),
)  # fmt: skip


def _quarter_bounds() -> list[tuple[datetime, datetime]]:
    starts = [datetime(2025, month, 1, tzinfo=UTC) for month in (1, 4, 7, 10)] + [YEAR_END]
    return list(pairwise(starts))


def _allocate(hours: list[SiteHour], instruments: list[Instrument], start: datetime, end: datetime, matching: str):
    return period_allocate(
        hours=hours, instruments=instruments, site_zone="DE", start=start, end=end,
        residual_of=lambda year: RESIDUAL, matching=matching,  # type: ignore[arg-type]
    )  # fmt: skip


def test_four_quarters_of_market_based_scope2_add_up_to_the_year_with_the_go_in_the_first() -> None:
    # given 21,600 kWh, all in Q1, and a 20 MWh GO for 2025: the year covers 20,000 kWh, 1,600 x 400 g = 0.64 t
    hours = [SiteHour(hour, LOAD_KWH, LOAD_KWH * LOCATION_G_PER_KWH, LOAD_KWH) for hour in Q1_HOURS]
    year = _allocate(hours, [GO], YEAR_START, YEAR_END, "annual")
    quarters = [_allocate(hours, [GO], start, end, "annual") for start, end in _quarter_bounds()]
    assert (year.instruments_kwh, year.market_co2e_g) == (20_000, 640_000)
    # then Q1 takes the GO's whole year's volume (year to date), not 90/365 of it (4,931.5 kWh, 6.67 t)
    assert (quarters[0].instruments_kwh, quarters[0].market_co2e_g) == (20_000, 640_000)
    assert [q.market_co2e_g for q in quarters[1:]] == [0, 0, 0]
    assert sum((q.market_co2e_g for q in quarters), Decimal(0)) == year.market_co2e_g


@pytest.mark.parametrize("matching", ["annual", "auto"])
def test_quarters_add_up_to_the_year_under_either_matching_with_a_ppa_and_a_go(matching: str) -> None:
    # given the worked year's flat 10 kWh/h, the solar PPA with its hourly profile and a 10 MWh GO
    hours = [SiteHour(hour, LOAD_KWH, LOAD_KWH * LOCATION_G_PER_KWH, LOAD_KWH) for hour in HOURS]
    ppa = replace(GO, id=2, kind="ppa", name="solar PPA", volume_kwh=Decimal(70_080), technology="solar",
                  profile_kwh=solar_profile_kwh(), evidence=EVIDENCE)  # fmt: skip
    go = replace(GO, volume_kwh=Decimal(10_000))
    year = _allocate(hours, [ppa, go], YEAR_START, YEAR_END, matching)
    quarters = [_allocate(hours, [ppa, go], start, end, matching) for start, end in _quarter_bounds()]
    for name in ("consumption_kwh", "instruments_kwh", "residual_mix_kwh", "market_co2e_g", "location_co2e_g"):
        summed = sum((getattr(q, name) for q in quarters), Decimal(0))
        assert summed == pytest.approx(getattr(year, name), abs=Decimal("1e-9")), name
    # annual: 70,080 + 10,000 of 87,600 covered, 7,520 x 400 g = 3.008 t; hourly: 48,180 + 10,000, 29,420 x 400
    assert year.market_co2e_g == (3_008_000 if matching == "annual" else 11_768_000)


def _q1_site(site_a: Site) -> None:
    ledger_hours(NodeFactory(fleet__organization=site_a.organization, site=site_a), Q1_HOURS,
                 facility_kwh=LOAD_KWH, location_g_per_kwh=LOCATION_G_PER_KWH)  # fmt: skip


def _go_body(site: Site, **changes: Any) -> dict[str, Any]:
    return ppa_body(site, kind="go", name="Hydro GOs 2025", volume_mwh="20", technology="hydro", hourly_profile=[],
                    purchase_type="unbundled", attributes_exclusive=None) | changes  # fmt: skip


def test_the_api_quarters_add_up_to_the_year_and_state_their_matching(
    sustainability_a: APIClient, site_a: Site, residual_de: None
) -> None:
    _q1_site(site_a)
    assert sustainability_a.post("/api/v1/instruments/", _go_body(site_a), format="json").status_code == 201
    year = sustainability_a.get("/api/v1/reports/scope2/", {"period": "2025"}).json()
    quarters = [sustainability_a.get("/api/v1/reports/scope2/", {"period": q}).json() for q in QUARTERS]
    assert year["market"] == year["market_annual_matching"] and year["market"]["matching"] == "annual"
    assert year["market"]["tco2e"] == 0.64  # 1,600 kWh x 400 g
    assert [q["market"]["tco2e"] for q in quarters] == [0.64, 0, 0, 0]
    assert sum(q["market"]["kgco2e"] for q in quarters) == year["market"]["kgco2e"]
    table = [sustainability_a.get("/api/v1/reports/scope2/ghg-table/", {"period": q}).json() for q in QUARTERS]
    assert [t["rows"][-1]["market_based_tco2e"] for t in table] == [0.64, 0, 0, 0]


def test_annual_and_hourly_are_both_shown_and_the_chosen_one_disclosed(
    sustainability_a: APIClient, year_consumed: Any, residual_de: None, ppa: dict[str, Any]
) -> None:
    shown = sustainability_a.get("/api/v1/scope2-disclosure/").json()
    assert shown["market_matching"] == "annual" and "2015" in shown["rule"]
    report = sustainability_a.get("/api/v1/reports/scope2/", {"period": "2025"}).json()
    assert (report["market_annual_matching"]["tco2e"], report["market_hourly_matching"]["tco2e"]) == (7.008, 15.768)
    assert report["market"]["tco2e"] == 7.008 and report["market_matching"] == "annual"
    esrs = {p["datapoint"]: p for p in sustainability_a.get("/api/v1/reports/scope2/esrs/", {"period": "2025"})
            .json()["datapoints"]}  # fmt: skip
    assert (esrs["E1-6.49(b)"]["value"], esrs["E1-6.49(b)"]["matching"]) == (7.008, "annual")
    assert esrs["E1-6.49(b)"]["other_matching"] == {"matching": "hourly", "value": 15.768}

    sustainability_a.put("/api/v1/scope2-disclosure/", {"market_matching": "hourly"}, format="json")
    report = sustainability_a.get("/api/v1/reports/scope2/", {"period": "2025"}).json()
    assert (report["market"]["tco2e"], report["market"]["matching"]) == (15.768, "hourly")
    assert report["market_annual_matching"]["tco2e"] == 7.008  # still shown beside it
    inventory = sustainability_a.get("/api/v1/reports/scope2/ghg-table/", {"period": "2025"}).json()["inventory"]
    assert (inventory["scope2"]["market_tco2e"], inventory["scope2"]["matching"]) == (15.768, "hourly")


def test_a_bad_matching_is_refused_and_changes_nothing(sustainability_a: APIClient, org_a: Any) -> None:
    response = sustainability_a.put("/api/v1/scope2-disclosure/", {"market_matching": "monthly"}, format="json")
    assert response.status_code == 400 and "market_matching" in response.json()
    assert sustainability_a.get("/api/v1/scope2-disclosure/").json()["market_matching"] == "annual"


def test_the_residual_mix_of_the_year_before_serves_the_report_year_and_its_year_is_disclosed(
    sustainability_a: APIClient, org_a: Any, year_consumed: Any, ppa: dict[str, Any]
) -> None:
    # given residual mixes published for 2023 and 2024 only (2025's comes out in the course of 2026)
    for year, grams in ((2023, 500), (2024, 450)):
        ResidualMixFactor.objects.create(organization=org_a, zone="DE", year=year, gco2e_per_kwh=grams,
                                         source=f"test figure {year}")  # fmt: skip
    report = sustainability_a.get("/api/v1/reports/scope2/", {"period": "2025"}).json()
    (site,) = report["sites"]
    assert (site["residual_mix_year"], site["residual_mix_gco2e_per_kwh"]) == (2024, 450)
    assert report["market"]["tco2e"] == 7.884  # 17,520 kWh x 450 g
    table = sustainability_a.get("/api/v1/reports/scope2/ghg-table/", {"period": "2025"}).json()
    assert (table["rows"][0]["residual_mix_year"], table["rows"][0]["residual_mix_source"]) == (
        2024,
        "test figure 2024",
    )
    # a figure published after the report year is not used for it
    ResidualMixFactor.objects.create(organization=org_a, zone="DE", year=2026, gco2e_per_kwh=1, source="later")
    assert (
        sustainability_a.get("/api/v1/reports/scope2/", {"period": "2025"}).json()["sites"][0]["residual_mix_year"]
        == 2024
    )


def test_an_instrument_without_its_evidence_fields_fails_the_criterion_naming_them(
    sustainability_a: APIClient, site_a: Site, year_consumed: Any, residual_de: None
) -> None:
    blank = dict.fromkeys(EVIDENCE_FIELDS, "") | {"cancellation_date": None, "consumption_period_start": None,
                                                  "consumption_period_end": None}  # fmt: skip
    body = _go_body(site_a, evidence_reference="illustrative: no contract or certificate stands behind it", **blank)
    assert sustainability_a.post("/api/v1/instruments/", body, format="json").status_code == 201
    report = sustainability_a.get("/api/v1/reports/scope2/", {"period": "2025"}).json()
    (listed,) = report["instruments"]
    failed = {c["criterion"]: c["detail"] for c in listed["criteria"] if not c["met"]}
    assert (listed["used"], list(failed)) == (False, ["evidence"])
    assert failed["evidence"].startswith(
        "missing: beneficiary, consumption_period_start, consumption_period_end, registry, certificate_id_from, "
        "certificate_id_to, cancellation_date"
    )


def test_criteria_6_and_7_are_checked_for_supplier_rates_and_direct_purchases() -> None:
    def failed(kind: str, evidence: Evidence) -> list[str]:
        results = criteria_check(kind=kind, site_zone="DE", generation_zone="DE", vintage_year=2025,
                                 reporting_year=2025, technology="mixed", stated_factor=Decimal(100),
                                 evidence=evidence)  # fmt: skip
        return [result.criterion for result in results if not result.met]

    assert failed("supplier_rate", replace(EVIDENCE, supplier_rate_delivered_basis=None)) == ["supplier_rate"]
    assert failed("supplier_rate", EVIDENCE) == []
    assert failed("ppa", replace(EVIDENCE, attributes_exclusive=None)) == ["exclusive_claim"]
    assert failed("go", replace(EVIDENCE, purchase_type="unbundled", attributes_exclusive=None)) == []
    assert failed("go", replace(EVIDENCE, purchase_type="on_site", attributes_exclusive=False)) == ["exclusive_claim"]


def test_a_norwegian_go_is_refused_for_a_german_site_and_a_swedish_se3_go_passes_on_se3() -> None:
    unnamed = market_boundary_check(site_zone="DE", generation_zone="NO")
    assert not unnamed.met and "NO has 5 bidding zones (NO-NO1, NO-NO2, NO-NO3, NO-NO4, NO-NO5)" in unnamed.detail
    oslo = market_boundary_check(site_zone="DE", generation_zone="NO-NO1")
    assert not oslo.met and "bidding zone NO-NO1 is not DE nor interconnected with it" in oslo.detail
    assert market_boundary_check(site_zone="SE-SE3", generation_zone="SE-SE3").met
    # honest about the table: NO2 has NordLink to Germany; Iceland has no interconnector at all
    assert market_boundary_check(site_zone="DE", generation_zone="NO-NO2").met
    assert not market_boundary_check(site_zone="DE", generation_zone="IS").met
    # where the product has no table, it says so and checks the market only
    texas = market_boundary_check(site_zone="US-TEX-ERCO", generation_zone="US-CAL-CISO")
    assert texas.met and "no bidding-zone table for US-CAL-CISO" in texas.detail


def test_a_norwegian_go_on_the_german_site_is_listed_unused_with_its_reason(
    sustainability_a: APIClient, site_a: Site, year_consumed: Any, residual_de: None
) -> None:
    body = _go_body(site_a, generation_zone="NO-NO1")
    assert sustainability_a.post("/api/v1/instruments/", body, format="json").status_code == 201
    (listed,) = sustainability_a.get("/api/v1/reports/scope2/", {"period": "2025"}).json()["instruments"]
    failed = [c for c in listed["criteria"] if not c["met"]]
    assert (listed["used"], [c["criterion"] for c in failed]) == (False, ["market_boundary"])
    assert "not deliverable" in failed[0]["detail"]


def test_biomass_carries_a_biogenic_co2_memo_outside_the_scopes(
    sustainability_a: APIClient, site_a: Site, year_consumed: Any, residual_de: None
) -> None:
    # given 10 MWh of biomass GOs stating 0 g direct and 1,100 g biogenic CO2 per kWh (a test figure)
    missing = _go_body(site_a, technology="biomass", volume_mwh="10")
    refused = sustainability_a.post("/api/v1/instruments/", missing, format="json")
    assert refused.status_code == 400 and "biogenic_co2_g_per_kwh" in refused.json()["detail"]
    assert ContractualInstrument.objects.count() == 0
    body = missing | {"biogenic_co2_g_per_kwh": "1100"}
    assert sustainability_a.post("/api/v1/instruments/", body, format="json").status_code == 201
    report = sustainability_a.get("/api/v1/reports/scope2/", {"period": "2025"}).json()
    memo = report["biogenic_co2_memo"]
    assert (memo["tco2"], memo["biomass_kwh"]) == (11.0, 10_000)  # 10,000 kWh x 1,100 g
    assert "outside the scopes" in memo["note"]
    assert report["market"]["tco2e"] == 31.04  # 77,600 kWh x 400 g: the memo is in no scope
    assert report["instruments"][0]["biogenic_co2_kg_memo"] == 11_000
    assert (
        sustainability_a.get("/api/v1/reports/scope2/ghg-table/", {"period": "2025"}).json()["biogenic_co2_memo"]
        == memo
    )


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"consumption_period_start": "2025-12-31", "consumption_period_end": "2025-01-01"}, "consumption_period_end"),
        ({"purchase_type": "borrowed"}, "purchase_type"),
        ({"cancellation_date": "last spring"}, "cancellation_date"),
        ({"biogenic_co2_g_per_kwh": "5"}, "only a biomass instrument"),
        ({"certificate_id_from": ""}, "certificate_id_to needs certificate_id_from"),
    ],
)
def test_bad_evidence_input_is_refused_with_a_clear_message_and_nothing_changes(
    sustainability_a: APIClient, site_a: Site, changes: dict[str, Any], says: str
) -> None:
    response = sustainability_a.post("/api/v1/instruments/", _go_body(site_a, **changes), format="json")
    assert response.status_code == 400
    assert says in response.content.decode()
    assert ContractualInstrument.objects.count() == 0


def test_the_instrument_api_returns_the_evidence_fields(sustainability_a: APIClient, site_a: Site) -> None:
    created = sustainability_a.post("/api/v1/instruments/", _go_body(site_a), format="json").json()
    assert {name: created[name] for name in EVIDENCE_FIELDS} == EVIDENCE_FIELDS
    assert (created["purchase_type"], created["biogenic_co2_g_per_kwh"]) == ("unbundled", None)


def test_the_disclosed_matching_is_audited_and_refused_over_a_locked_period(
    client_as: Callable[..., APIClient], sustainability_a: APIClient, year_consumed: Any
) -> None:
    chosen = sustainability_a.put("/api/v1/scope2-disclosure/", {"market_matching": "hourly"}, format="json")
    assert chosen.status_code == 200
    admin = client_as(Role.ADMIN)
    assert "scope2_disclosure" in {entry["subject"] for entry in admin.get("/api/v1/audit/").json()}
    lock = {"start": "2025-04-01T00:00:00Z", "end": "2025-07-01T00:00:00Z", "reason": "Q2 filed"}
    assert admin.post("/api/v1/locked-periods/", lock, format="json").status_code == 201
    refused = sustainability_a.put("/api/v1/scope2-disclosure/", {"market_matching": "annual"}, format="json")
    assert refused.status_code == 409
    assert sustainability_a.get("/api/v1/scope2-disclosure/").json()["market_matching"] == "hourly"


def test_a_residual_mix_serving_a_locked_later_year_is_refused(
    client_as: Callable[..., APIClient], sustainability_a: APIClient, org_a: Any
) -> None:
    # given 2025 is locked and holds no residual mix of its own: a 2024 figure would serve it
    lock = {"start": "2025-01-01T00:00:00Z", "end": "2026-01-01T00:00:00Z", "reason": "2025 filed"}
    assert client_as(Role.ADMIN).post("/api/v1/locked-periods/", lock, format="json").status_code == 201
    row = ResidualMixFactor(organization=org_a, zone="DE", year=2024, gco2e_per_kwh=Decimal(450), source="test")
    with pytest.raises(Exception, match="locked"):
        residual_mix_save(row=row, user=None, now=datetime(2026, 2, 1, tzinfo=UTC))
    assert not ResidualMixFactor.objects.exists()
    # while a 2024 figure is accepted where 2025 has its own figure (2025 is then served by 2025's)
    ResidualMixFactor.objects.create(organization=org_a, zone="DE", year=2025, gco2e_per_kwh=400, source="test")
    residual_mix_save(row=row, user=None, now=datetime(2026, 2, 1, tzinfo=UTC))
    assert ResidualMixFactor.objects.filter(year=2024).exists()
