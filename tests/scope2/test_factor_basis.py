"""Scope 2 on direct factors, the upstream part as Scope 3 Category 3, worked by hand through the API.

Org A, an owned node with one H100 card at each site (PUE 1.00), each serving 2026-04-01 10:00 with 1 kWh of
GPU energy: 1 kWh facility per site. The organization uploads its supplier's hourly figures as CSV.

- fra-1 (DE): the hour has direct 10 g/kWh and lifecycle 35 g/kWh. Scope 2 location-based: 1 kWh x 10 g =
  0.010 kg; Category 3: 1 kWh x (35 - 10) g = 0.025 kg; SCI and the per-token figures keep 1 kWh x 35 g =
  0.035 kg (operational_location_kgco2e). Market-based (no instrument, no residual mix): the location fallback,
  on the direct basis too: 0.010 kg.
- par-1 (FR): nothing stored for the hour, so the shipped annual average stands in: lifecycle 31 g/kWh (2025,
  the nearest year) with the direct figure of France's generation mix beside it (31 x 37.81 / 66.81 = 17.544 g,
  grid/data/direct-annual-2021.json): Scope 2 takes the direct figure, Category 3 the difference.
- stdenis-1 (RE): the annual average of a zone whose country has no generation mix (Réunion, lifecycle only):
  Scope 2 takes it, flagged, and those kWh are lifecycle_basis_kwh; no Category 3 for them.
- lon-1 (GB): a direct-only figure (12 g/kWh, basis direct, as the UK Carbon Intensity API gives): Scope 2
  0.012 kg; its Category 3 is not known (not_known_kwh).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Node, Organization, Role, Site
from grid.annual import annual_intensity
from telemetry.models import GpuHourUsage
from tests.helpers.factories import GpuFactory, NodeFactory, NodePriceFactory, SiteFactory, SiteTariffFactory

pytestmark = pytest.mark.django_db

HOUR = datetime(2026, 4, 1, 10, tzinfo=UTC)
YEAR = {"period": "2026"}
UPLOAD = "/api/v1/grid/intensity.csv?organization=org-a&source_name=supplier"


def _owned_node(site: Site) -> Node:
    node = NodeFactory(fleet__organization=site.organization, site=site, hostname=f"{site.name}-n1", tenure="owned",
                       commissioned_at=datetime(2026, 1, 1, tzinfo=UTC))  # fmt: skip
    gpu = GpuFactory(node=node, index=0, uuid=f"GPU-{site.name}", name="NVIDIA H100 80GB HBM3")
    NodePriceFactory(node=node, includes_power=False)
    GpuHourUsage.objects.create(
        gpu=gpu, hour_start=HOUR, energy_j=3_600_000.0, energy_counter_j=3_600_000.0, energy_integrated_j=0.0,
        energy_method="counter", observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0, mean_util_pct=80.0,
        reset_count=0, computed_at=HOUR,
    )  # fmt: skip
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[HOUR])
    return node


def _site(org: Organization, name: str, zone: str) -> Site:
    site = SiteFactory(organization=org, name=name, grid_zone=zone, pue=Decimal("1.00"))
    SiteTariffFactory(site=site)
    return site


@pytest.fixture
def sustainability_a(client_as: Callable[..., APIClient]) -> APIClient:
    return client_as(Role.SUSTAINABILITY)


def _upload(client: APIClient, body: str) -> None:
    response = client.generic("POST", UPLOAD, body.encode(), content_type="text/csv")
    assert response.status_code == 201, response.content


@pytest.fixture
def de_hour(sustainability_a: APIClient, org_a: Organization) -> Node:
    _upload(sustainability_a, "zone,hour_start,gco2e_per_kwh,direct_gco2e_per_kwh\nDE,2026-04-01T10:00:00Z,35,10\n")
    return _owned_node(_site(org_a, "fra-1", "DE"))


def test_an_hour_with_direct_10_g_and_lifecycle_35_g_is_scope_2_at_10_and_category_3_at_25(
    sustainability_a: APIClient, de_hour: Node
) -> None:
    # given: the ledger line keeps both
    line = NodeHourLedger.objects.get(node=de_hour)
    assert (line.facility_kwh, line.location_basis) == (1, "lifecycle")
    assert (line.location_co2e_g, line.location_direct_co2e_g, line.location_direct_gco2e_per_kwh) == (35, 10, 10)
    # when
    report = sustainability_a.get("/api/v1/reports/sustainability/", YEAR).json()
    # then: Scope 2 at 10 g/kWh x 1 kWh, Category 3 at 25 g/kWh x 1 kWh
    scope2, scope3 = report["inventory"]["scope2"], report["inventory"]["scope3"]
    assert (scope2["facility_kwh"], scope2["location_kgco2e"], scope2["location_basis"]) == (1, 0.01, "direct")
    assert (scope2["market_kgco2e"], scope2["market_location_fallback_basis"]) == (0.01, "direct")
    assert scope2["basis_coverage"]["direct_kwh"] == 1 and scope2["basis_coverage"]["lifecycle_basis_kwh"] == 0
    category_3 = scope3["category_3"]
    assert (category_3["status"], category_3["kgco2e"], category_3["facility_kwh"]) == ("reported", 0.025, 1)
    assert category_3["basis"] == "lifecycle_minus_direct" and "activity C" in category_3["not_covered"]
    # Scope 3 adds it to Category 2 (the card and host share, in service at commissioning, 2026: 509.5 kg)
    assert scope3["category_2"]["kgco2e_central"] == 509.5 and scope3["kgco2e"] == 509.525
    assert report["inventory"]["totals"]["location_kgco2e"] == 509.535  # 0.010 + 0.025 + 509.5: no double count
    # the report's own figures: Scope 2 direct, SCI's weighing lifecycle, each named
    assert (report["location_kgco2e"], report["location_basis"]) == (0.01, "direct")
    assert (report["operational_location_kgco2e"], report["operational_location_basis"]) == (0.035, "lifecycle")
    scope2_report = sustainability_a.get("/api/v1/reports/scope2/", YEAR).json()
    assert (scope2_report["location_kgco2e"], scope2_report["location_basis"]) == (0.01, "direct")
    assert scope2_report["sites"][0]["location_basis"] == "direct"
    # and in the CSV, each figure's basis as its own metric line
    response = sustainability_a.get("/api/v1/reports/sustainability/", YEAR | {"format": "csv"})
    metrics = {row["metric"]: row["value"] for row in csv.DictReader(io.StringIO(
        b"".join(response.streaming_content).decode()))}  # fmt: skip
    assert (metrics["location_basis"], metrics["operational_location_basis"]) == ("direct", "lifecycle")
    assert metrics["inventory.scope2.location_basis"] == "direct"
    assert metrics["inventory.scope3.category_3.kgco2e"] == "0.025"
    assert metrics["inventory.scope3.category_3.basis"] == "lifecycle_minus_direct"


def test_the_ghg_table_and_esrs_export_name_the_basis_of_each_figure(
    sustainability_a: APIClient, de_hour: Node
) -> None:
    table = sustainability_a.get("/api/v1/reports/scope2/ghg-table/", YEAR).json()
    site, total = table["rows"]
    assert (site["location_based_gco2e_per_kwh"], site["basis"], total["basis"]) == (10, "direct", "direct")
    scopes = {row["site"]: row for row in table["inventory_rows"]}
    fuel = scopes["SCOPE 3 CATEGORY 3"]
    assert (fuel["location_based_tco2e"], fuel["market_based_tco2e"], fuel["basis"]) == (
        0.000025, 0.000025, "lifecycle_minus_direct",
    )  # fmt: skip
    assert "basis" in table["columns"]
    response = sustainability_a.get("/api/v1/reports/scope2/ghg-table/", YEAR | {"format": "csv"})
    lines = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert next(line for line in lines if line["site"] == "fra-1")["basis"] == "direct"
    assert next(line for line in lines if line["site"] == "SCOPE 3 CATEGORY 3")["basis"] == "lifecycle_minus_direct"

    esrs = sustainability_a.get("/api/v1/reports/scope2/esrs/", YEAR).json()
    points = {point["datapoint"]: point for point in esrs["datapoints"]}
    assert (points["E1-6.49(a)"]["value"], points["E1-6.49(a)"]["basis"]) == (0.00001, "direct")
    assert points["E1-6.49(b)"]["basis"] == "direct"
    by_category = {category["category"]: category for category in points["E1-6.51"]["categories"]}
    assert (by_category[3]["value"], by_category[3]["basis"]) == (0.000025, "lifecycle_minus_direct")
    assert "status" not in by_category[3]


def test_hours_without_a_direct_factor_stand_on_lifecycle_flagged_and_direct_only_hours_have_no_category_3(
    sustainability_a: APIClient, de_hour: Node, org_a: Organization
) -> None:
    # given: stdenis-1 on the annual fallback of a zone without a country mix (lifecycle only), lon-1 with a
    # direct-only figure
    _upload(sustainability_a, "zone,hour_start,gco2e_per_kwh,basis\nGB,2026-04-01T10:00:00Z,12,direct\n")
    _owned_node(_site(org_a, "stdenis-1", "RE"))
    _owned_node(_site(org_a, "lon-1", "GB"))
    fr = annual_intensity("RE", 2026)
    assert fr is not None and fr.basis == "lifecycle" and fr.direct_gco2e_per_kwh is None
    # when
    report = sustainability_a.get("/api/v1/reports/sustainability/", YEAR).json()
    inventory = report["inventory"]
    # then: the lines' own figures are lifecycle (DE, RE) and direct (GB), as SCI weighs them
    assert report["operational_location_basis"] == "mixed"
    # and: 0.010 (DE, direct) + RE's annual lifecycle figure (flagged) + 0.012 (GB, direct)
    scope2 = inventory["scope2"]
    assert scope2["location_kgco2e"] == float(Decimal("0.022") + fr.gco2e_per_kwh / 1000)
    assert scope2["location_basis"] == "mixed"
    coverage = scope2["basis_coverage"]
    assert (coverage["direct_kwh"], coverage["lifecycle_basis_kwh"]) == (2, 1)
    assert coverage["lifecycle_basis_note"] == (
        "lifecycle basis: includes upstream (Scope 3 Cat 3) emissions; direct factor unavailable"
    )
    assert coverage["lifecycle_basis_sources"] == [fr.source]
    category_3 = inventory["scope3"]["category_3"]
    assert (category_3["kgco2e"], category_3["facility_kwh"]) == (0.025, 1)  # DE only
    assert (category_3["inside_scope2_kwh"], category_3["not_known_kwh"]) == (1, 1)  # RE, GB


def test_an_hour_on_the_annual_fallback_takes_the_direct_figure_of_its_country_mix_and_category_3_the_rest(
    sustainability_a: APIClient, de_hour: Node, org_a: Organization
) -> None:
    # given: par-1 (FR) with nothing stored for the hour: the 2025 yearly figure, 31 g/kWh lifecycle
    _owned_node(_site(org_a, "par-1", "FR"))
    fr = annual_intensity("FR", 2026)
    assert fr is not None and (fr.source, fr.gco2e_per_kwh) == ("electricitymaps-yearly-2025", 31)
    # France's 2021 mix: direct 37.81 g/kWh, lifecycle 66.81 g/kWh (grid/data/direct-annual-2021.json)
    assert fr.direct_gco2e_per_kwh == Decimal("17.544")  # 31 x 37.81 / 66.81 = 17.5440...
    # when
    inventory = sustainability_a.get("/api/v1/reports/sustainability/", YEAR).json()["inventory"]
    # then: Scope 2 = 0.010 (DE, direct) + 0.017544 (FR, direct of the fallback), on the direct basis throughout
    scope2 = inventory["scope2"]
    assert scope2["location_kgco2e"] == 0.027544
    assert scope2["location_basis"] == "direct"
    coverage = scope2["basis_coverage"]
    assert (coverage["direct_kwh"], coverage["lifecycle_basis_kwh"]) == (2, 0)
    # Category 3: 0.025 (DE) + (31 - 17.544) g = 0.013456 kg (FR)
    category_3 = inventory["scope3"]["category_3"]
    assert (category_3["kgco2e"], category_3["facility_kwh"]) == (0.038456, 2)


def test_per_token_figures_stay_on_the_lifecycle_figure(sustainability_a: APIClient, de_hour: Node) -> None:
    line = NodeHourLedger.objects.get(node=de_hour)
    report: dict[str, Any] = sustainability_a.get("/api/v1/reports/sustainability/", YEAR).json()
    # SCI weighs the ledger's location figure (35 g), not the Scope 2 one (10 g)
    assert line.location_co2e_g == 35
    assert report["operational_location_kgco2e"] == 0.035
