"""The hand-worked year through the API: register the PPA, read Scope 2 both ways (``worked.py``).

Org A enters a residual mix of 400 gCO2e/kWh for DE 2025 (a test input, not a published figure).
Location-based: 87,600 kWh x 300 = 26.28 t.
Market-based, hourly matching (the PPA has an hourly profile): 55 % covered, 39,420 kWh x 400 = 15.768 t.
Market-based, annual matching: 80 % covered, 17,520 kWh x 400 = 7.008 t.
24/7 CFE (DE 2025 grid carbon-free share 64 %, Electricity Maps yearly):
hourly (48,180 + 0.64 x 39,420) / 87,600 = 0.838; annual (70,080 + 0.64 x 17,520) / 87,600 = 0.928.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from rest_framework.test import APIClient

from fleets.models import Site
from tests.helpers.instruments import ppa_body

pytestmark = pytest.mark.django_db

YEAR = {"period": "2025"}


def test_dual_reporting_with_a_ppa_hourly_and_annually_matched(
    sustainability_a: APIClient, year_consumed: Any, residual_de: None, ppa: dict[str, Any]
) -> None:
    assert ppa["hourly_profile_hours"] == 14 * 365
    report = sustainability_a.get("/api/v1/reports/scope2/", YEAR).json()

    assert report["facility_kwh"] == 87_600
    assert report["location_tco2e"] == 26.28
    hourly, annual = report["market_hourly_matching"], report["market_annual_matching"]
    assert report["market_matching"] == "annual" and report["market"] == annual  # disclosed: the 2015 default
    assert (hourly["matching"], annual["matching"]) == ("hourly", "annual")
    assert (hourly["instruments_share"], hourly["residual_mix_share"]) == (0.55, 0.45)
    assert (hourly["residual_mix_kwh"], hourly["tco2e"]) == (39_420, 15.768)
    assert (annual["instruments_share"], annual["residual_mix_share"]) == (0.8, 0.2)
    assert annual["tco2e"] == 7.008
    assert (hourly["location_fallback_kwh"], hourly["unknown_kwh"]) == (0, 0)
    (site,) = report["sites"]
    assert (site["residual_mix_gco2e_per_kwh"], site["residual_mix_source"], site["residual_mix_year"]) == (
        400, "test figure", 2025,
    )  # fmt: skip
    assert site["cfe_score_hourly"] == pytest.approx(0.838, abs=1e-6)
    assert site["cfe_score_annual_matching"] == pytest.approx(0.928, abs=1e-6)
    (used,) = report["instruments"]
    assert (used["matching"], used["matched_kwh"], used["unused_kwh"]) == ("annual", 70_080, 0)
    assert (used["matched_kwh_annual_matching"], used["matched_kwh_hourly_matching"]) == (70_080, 48_180)
    assert all(criterion["met"] for criterion in used["criteria"])


def test_without_a_residual_mix_the_rest_takes_the_location_factor_labelled(
    sustainability_a: APIClient, year_consumed: Any, ppa: dict[str, Any]
) -> None:
    report = sustainability_a.get("/api/v1/reports/scope2/", YEAR).json()
    assert report["market"]["residual_mix_kwh"] == 0
    assert report["market"]["location_fallback_kwh"] == 17_520
    assert report["market"]["tco2e"] == 5.256  # 17,520 kWh x 300 g (annual matching, disclosed)
    assert report["market_hourly_matching"]["tco2e"] == 11.826  # 39,420 kWh x 300 g
    assert report["sites"][0]["residual_mix_source"] is None


def test_an_instrument_failing_a_quality_criterion_is_listed_with_the_reason_and_not_used(
    sustainability_a: APIClient, site_a: Site, year_consumed: Any, residual_de: None
) -> None:
    body = ppa_body(site_a, kind="rec", name="US wind RECs", generation_zone="US-TEX-ERCO", hourly_profile=[])
    assert sustainability_a.post("/api/v1/instruments/", body, format="json").status_code == 201
    report = sustainability_a.get("/api/v1/reports/scope2/", YEAR).json()
    (listed,) = report["instruments"]
    assert (listed["used"], listed["matched_kwh"]) == (False, 0)
    failed = [c for c in listed["criteria"] if not c["met"]]
    assert [c["criterion"] for c in failed] == ["market_boundary"]
    assert "US-CA" in failed[0]["detail"]
    assert report["market"]["residual_mix_share"] == 1


def test_over_allocated_certificate_is_refused_and_changes_nothing(sustainability_a: APIClient, site_a: Site) -> None:
    go = ppa_body(
        site_a, kind="go", name="GO batch, part 1", volume_mwh="60", certificate_ref="NO-GO-2025-0042",
        certificate_mwh="100", generation_zone="NO", technology="hydro", hourly_profile=[],
    )  # fmt: skip
    assert sustainability_a.post("/api/v1/instruments/", go, format="json").status_code == 201
    second = go | {"name": "GO batch, part 2", "volume_mwh": "50", "certificate_mwh": None}
    response = sustainability_a.post("/api/v1/instruments/", second, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "over-allocated: certificate 'NO-GO-2025-0042' holds 100.000000 MWh; already claimed: "
        "'GO batch, part 1' 60.000000 MWh; 50.000000 MWh more for 'GO batch, part 2' would claim 110.000000 MWh"
    )
    assert len(sustainability_a.get("/api/v1/instruments/").json()) == 1


def test_a_profile_delivering_more_than_the_volume_is_refused(sustainability_a: APIClient, site_a: Site) -> None:
    response = sustainability_a.post("/api/v1/instruments/", ppa_body(site_a, volume_mwh="70"), format="json")
    assert response.status_code == 400
    assert "delivers 70.080000 MWh, more than its volume of 70.000000 MWh" in response.json()["detail"]


def test_csv_escapes_cells_a_spreadsheet_would_run(
    sustainability_a: APIClient, site_a: Site, year_consumed: Any
) -> None:
    # No residual mix: 17,520 kWh uncovered x the location-based 300 g = 5.256 t.
    body = ppa_body(site_a, name='=HYPERLINK("http://x")', hourly_profile=[])
    assert sustainability_a.post("/api/v1/instruments/", body, format="json").status_code == 201
    response = sustainability_a.get("/api/v1/reports/scope2/", YEAR | {"format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    names = {row["instrument"] for row in rows if row["level"] == "instrument"}
    assert names == {'\'=HYPERLINK("http://x")'}
    assert {"level": "total", "site": "", "instrument": "", "metric": "market.tco2e", "value": "5.256"} in rows


def test_ghg_table_and_esrs_datapoints(
    sustainability_a: APIClient, year_consumed: Any, residual_de: None, ppa: dict[str, Any]
) -> None:
    # given the organization discloses hourly matching (the revision's proposal; the default is annual)
    chosen = sustainability_a.put("/api/v1/scope2-disclosure/", {"market_matching": "hourly"}, format="json")
    assert chosen.status_code == 200, chosen.content
    table = sustainability_a.get("/api/v1/reports/scope2/ghg-table/", YEAR).json()
    site, total = table["rows"]
    assert table["market_matching"] == site["market_based_matching"] == total["market_based_matching"] == "hourly"
    assert (site["site"], site["electricity_mwh"], site["ppa_mwh"], site["residual_mix_mwh"]) == (
        "fra-1", 87.6, 48.18, 39.42,
    )  # fmt: skip
    assert (site["location_based_tco2e"], site["market_based_tco2e"]) == (26.28, 15.768)
    assert site["market_based_gco2e_per_kwh"] == 180  # 15.768 t / 87,600 kWh
    assert total["site"] == "TOTAL" and total["market_based_tco2e"] == 15.768

    esrs = {p["datapoint"]: p for p in sustainability_a.get("/api/v1/reports/scope2/esrs/", YEAR).json()["datapoints"]}
    assert (esrs["E1-5.37"]["value"], esrs["E1-5.37"]["unit"]) == (87.6, "MWh")
    # Renewable: the PPA's 48.18 MWh, then DE 2025's grid mix (60 % renewable) of the other 39.42 MWh.
    renewable = esrs["E1-5.37(c)(ii)"]
    assert (renewable["value"], renewable["from_instruments_mwh"]) == (71.832, 48.18)
    assert (esrs["E1-6.49(a)"]["value"], esrs["E1-6.49(b)"]["value"]) == (26.28, 15.768)
    assert esrs["E1-6.49(b)"]["matching"] == "hourly"
    assert esrs["E1-6.49(b)"]["other_matching"] == {"matching": "annual", "value": 7.008}
    assert esrs["E1-6.AR45(d)"]["value"] == 0.55 and esrs["E1-6.AR45(d)"]["instrument_types"] == ["ppa"]
