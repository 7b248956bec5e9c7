"""The sustainability headline's market-based figure is the Scope 2 report's figure to disclose, on the page and
in the API; the site-factor figure stays beside it, labelled internal."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db.models import F
from django.test import Client
from rest_framework.test import APIClient

from accounting.models import NodeHourLedger
from accounting.site_hours import site_hours_rebuild
from tests.helpers.factories import MembershipFactory

pytestmark = pytest.mark.django_db
YEAR = {"start": "2025-01-01", "end": "2025-12-31"}  # the page's dates, both inclusive
API_YEAR = {"period": "2025"}


def _tile(html: str, tile_id: str) -> tuple[str, str]:
    found = re.search(rf'<div class="tile" id="{tile_id}" data-basis="([^"]*)">.*?data-value="([^"]*)"', html, re.S)
    assert found is not None, tile_id
    return found.group(1), found.group(2)


def test_sustainability_headline_market_figure_equals_the_scope2_disclosed_figure(
    client: Client, sustainability_a: APIClient, org_a: Any, year_consumed: Any, residual_de: None, ppa: Any
) -> None:
    # given site factors of 100 g/kWh on the ledger lines, which the instruments do not reflect
    NodeHourLedger.objects.update(market_co2e_g=F("facility_kwh") * 100, market_source="supplier:test")
    site_hours_rebuild()  # lines written by hand: their site-hours summed again
    disclosed = sustainability_a.get("/api/v1/reports/scope2/", API_YEAR).json()["market"]
    # when
    body = sustainability_a.get("/api/v1/reports/sustainability/", API_YEAR).json()
    client.force_login(MembershipFactory(organization=org_a, role="viewer").user)
    html = client.get("/sustainability/", YEAR).content.decode()
    # then the API's top-level figure and the page's headline tile are the one to disclose, named by its basis
    assert (
        (body["market_kgco2e"], body["market_tco2e"])
        == (disclosed["kgco2e"], disclosed["tco2e"])
        == (
            7_008.0,
            7.008,
        )
    )
    assert body["market_basis"] == "scope2_instruments"
    assert _tile(html, "tile-market") == ("scope2_instruments", "7008.0")
    assert "Scope 2, market-based (instruments, to disclose)" in html
    # and the site-factor figure is its own field and tile, labelled internal
    assert (body["market_site_factors_kgco2e"], body["market_site_factors_basis"]) == (8_760.0, "site_market_factors")
    assert _tile(html, "tile-market-site-factors") == ("site_market_factors", "8760.0")


def test_the_csv_export_carries_both_market_figures(sustainability_a: APIClient, year_consumed: Any) -> None:
    response = sustainability_a.get("/api/v1/reports/sustainability/", {**API_YEAR, "format": "csv"})
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert "market_basis,scope2_instruments" in lines
    assert "market_site_factors_basis,site_market_factors" in lines
