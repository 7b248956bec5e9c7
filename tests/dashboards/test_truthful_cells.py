"""Cells that say what they mean: electricity in the rent reads "in rent", one unit per tile, every licence said."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from fleets.models import Role
from reports.factors import location_factor_source, market_factor_source
from tests.helpers.dashboard_data import build_fleet, two_fleets
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory

H100_RENT = {"kind": "rented", "rate_per_h": Decimal("3.00"), "rate_per": "gpu", "includes_power": True}


@pytest.fixture
def organization(db):
    return OrganizationFactory(name="Acme AI", slug="acme-ai")


@pytest.fixture
def signed_in(client, organization):
    user = UserFactory(username="fiona")
    MembershipFactory(user=user, organization=organization, role=Role.FINANCE)
    client.force_login(user)
    return client


def _cell(html: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}">(.*?)</div></div>', html, re.S)
    assert match, element_id
    return re.sub(r"<[^>]+>", " ", match.group(1))


def _by_fleet_rows(html: str) -> list[list[str]]:
    body = re.search(r'<table id="by-fleet">.*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    return [re.findall(r"<td>([^<]*)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def test_electricity_in_the_rent_reads_in_rent_on_the_finance_page_never_zero(signed_in, organization):
    build_fleet(
        organization, name="enterprise", gpu_name="NVIDIA H100 80GB HBM3", gpus=8, zone="US-CAL-CISO",
        price=H100_RENT, energy_j=2_000_000.0, tokens=1000, ttft_counts=[1, 0, 0, 0, 0, 0],
    )  # fmt: skip

    html = signed_in.get("/finance/").content.decode()

    assert "in rent" in _cell(html, "tile-electricity")
    assert "0.00 USD" not in _cell(html, "tile-electricity")
    assert [cells[3] for cells in _by_fleet_rows(html)] == ["in rent"]  # fleet, cost, hardware, electricity


def test_a_mix_says_which_part_is_in_the_rent(signed_in, organization):
    two_fleets(organization)  # enterprise: power in the rent; consumer: owned, on a tariff

    html = signed_in.get("/finance/").content.decode()

    tile = _cell(html, "tile-electricity")
    assert "USD" in tile and "plus power in the rent of some nodes" in tile
    electricity = {cells[0]: cells[3] for cells in _by_fleet_rows(html)}
    assert electricity["enterprise"] == "in rent"
    assert electricity["consumer"].endswith(" USD") and electricity["consumer"] != "0.00 USD"


def test_the_embodied_tile_speaks_one_unit(signed_in, organization):
    two_fleets(organization)

    tile = _cell(signed_in.get("/sustainability/").content.decode(), "tile-embodied")

    assert tile.count("tCO2e") == 2
    assert "kgCO2e" not in tile


def test_every_factor_says_its_licence_or_why_there_is_none():
    assert location_factor_source("simulated:annual-shaped").licence == "not applicable (simulated)"
    assert location_factor_source("simulated:annual-shaped").origin == "simulated"
    assert market_factor_source("contract:PPA-7").licence == "not applicable (the organization's own figure)"
    assert location_factor_source("electricitymaps-yearly-2024").licence == "ODbL-1.0"
