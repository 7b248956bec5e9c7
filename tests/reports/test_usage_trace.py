"""Every usage and comparison row names the sources of its figures: each grid intensity source with its
share of the row's facility kWh, and the sources of the embodied factors of the GPU models it carries.

conftest.py's hours, with the RTX site moved to zone SE-SE3: simulated hourly values (40 g/kWh) in H1 and
H2, the annual average in H3. The H100 site keeps its live 200 g/kWh (electricitymaps). Facility kWh
per hour: H100 1.8, RTX 1.32; over the three hours 9.36 kWh: 5.4 live, 2.64 simulated, 1.32 annual.
"""

from __future__ import annotations

import csv
import io

import pytest

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from grid import annual_intensity
from tests.helpers.factories import GpuFactory
from tests.helpers.reports import END, HOURS, START

pytestmark = pytest.mark.django_db
PERIOD = {"start": START.isoformat(), "end": END.isoformat()}
H100_SOURCE = "hubblo-org/gpu-calculator"  # the H100's card factor (catalog)
RTX_HOST = "greenit.fr"  # the RTX 4090's desktop host share


def test_a_row_of_both_fleets_names_every_intensity_source_with_its_share(mixed_grid, client_a):
    (row,) = client_a.get("/api/v1/reports/usage/", {**PERIOD, "granularity": "total"}).json()["results"]

    annual = annual_intensity("SE-SE3", 2026).source
    # 5.4 / 9.36 = 0.5769, 2.64 / 9.36 = 0.2821, 1.32 / 9.36 = 0.1410
    assert row["location_sources"] == f"electricitymaps=0.5769; simulated:annual-shaped=0.2821; {annual}=0.1410"
    # both models carry embodied carbon: both models' factors are named, each source once
    assert H100_SOURCE in row["embodied_sources"] and RTX_HOST in row["embodied_sources"]
    cited = row["embodied_sources"].split("; ")
    assert len(cited) == len(set(cited))


def test_a_node_hour_row_names_its_one_source_and_its_models_factors_only(mixed_grid, client_a):
    params = {**PERIOD, "granularity": "hour", "group_by": "node"}
    rows = client_a.get("/api/v1/reports/usage/", params).json()["results"]
    h100 = next(row for row in rows if row["group_label"] == "h100-a")

    assert h100["location_sources"] == "electricitymaps=1.000"
    assert H100_SOURCE in h100["embodied_sources"] and RTX_HOST not in h100["embodied_sources"]


def test_the_usage_csv_carries_the_sources(mixed_grid, client_a):
    response = client_a.get(
        "/api/v1/reports/usage/", {**PERIOD, "granularity": "total", "group_by": "fleet"}, HTTP_ACCEPT="text/csv"
    )
    table = {
        row["group_label"]: row for row in csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    }

    annual = annual_intensity("SE-SE3", 2026).source
    # the RTX fleet: 2.64 simulated and 1.32 annual of its 3.96 kWh
    assert table["consumer"]["location_sources"] == f"simulated:annual-shaped=0.6667; {annual}=0.3333"
    assert (
        RTX_HOST in table["consumer"]["embodied_sources"] and H100_SOURCE not in table["consumer"]["embodied_sources"]
    )
    assert table["enterprise"]["node_modelled_energy_share"] == "0.0"


def test_a_node_of_two_models_names_both_models_factors(mixed_grid, client_a):
    # given an RTX 4090 added to the H100 node: its lines are labelled "mixed"
    GpuFactory(node=mixed_grid.h100, index=2, name="NVIDIA GeForce RTX 4090")
    ledger_node_hours_compute(node_id=mixed_grid.h100.pk, hour_starts=HOURS)
    assert set(NodeHourLedger.objects.filter(node=mixed_grid.h100).values_list("gpu_model", flat=True)) == {"mixed"}

    params = {**PERIOD, "granularity": "total", "group_by": "node"}
    rows = {row["group_label"]: row for row in client_a.get("/api/v1/reports/usage/", params).json()["results"]}
    assert H100_SOURCE in rows["h100-a"]["embodied_sources"] and RTX_HOST in rows["h100-a"]["embodied_sources"]


def test_comparison_rows_name_their_intensity_sources_and_a_mixed_fleets_factors(mixed_grid, client_a):
    GpuFactory(node=mixed_grid.h100, index=2, name="NVIDIA GeForce RTX 4090")
    ledger_node_hours_compute(node_id=mixed_grid.h100.pk, hour_starts=HOURS)
    compared = {r["fleet_name"]: r for r in client_a.get("/api/v1/reports/comparison/", PERIOD).json()["results"]}

    annual = annual_intensity("SE-SE3", 2026).source
    assert compared["consumer"]["location_sources"] == f"simulated:annual-shaped=0.6667; {annual}=0.3333"
    # the enterprise fleet's one node now carries both models: both are named
    enterprise = compared["enterprise"]
    assert enterprise["location_sources"] == "electricitymaps=1.000"
    assert H100_SOURCE in enterprise["embodied_sources"] and RTX_HOST in enterprise["embodied_sources"]


def test_the_sustainability_page_names_each_models_embodied_factors(mixed_grid, client_a, org_a):
    page = client_a.get("/sustainability/", {"organization": org_a.slug, "start": "2026-10-31", "end": "2026-11-01"})
    html = page.content.decode()

    table = html[html.index('id="embodied-factors"') :]
    h100 = table[table.index('data-model="h100-sxm"') :]
    rtx = table[table.index('data-model="rtx-4090"') :]
    assert H100_SOURCE in h100[: h100.index("</tr>")] and RTX_HOST in rtx[: rtx.index("</tr>")]
    # 3 h x (2 x 197 + 2 x 312.5) kg / 35,040 h = 87.24 g
    assert "0.087 kgCO2e" in h100[: h100.index("</tr>")]


def test_the_finance_page_says_which_boundary_its_energy_per_token_has(mixed_grid, client_a, org_a):
    page = client_a.get("/finance/", {"organization": org_a.slug, "start": "2026-10-31", "end": "2026-11-01"})
    note = page.content.decode().split('id="energy-boundary"')[1].split("</p>")[0]
    assert "node boundary" in note and "GPU boundary" in note and "modelled" in note


def test_idle_energy_stands_beside_idle_cost_on_the_finance_and_sustainability_pages(fleets, client_a, org_a):
    # idle facility kWh: the H100's idle GPU 1.2 kWh x 3 h = 3.6, the RTX's 0.3 kWh x 1.1 x 3 h = 0.99; 4.59 in all
    period = {"organization": org_a.slug, "start": "2026-10-31", "end": "2026-11-01"}
    finance = client_a.get("/finance/", period).content.decode()
    tile = finance[finance.index('id="tile-idle"') :]
    assert 'class="idle-kwh" data-value="4.59"' in tile[: tile.index("</div></div>")]
    table = finance[finance.index('id="by-fleet"') :]
    enterprise = table[table.index("<td>enterprise</td>") :]
    # idle cost 2.86 x 3 = 8.58 beside its 3.6 kWh
    assert (
        "8.58" in enterprise[: enterprise.index("</tr>")] and "<td>3.6</td>" in enterprise[: enterprise.index("</tr>")]
    )

    sustainability = client_a.get("/sustainability/", period).content.decode()
    assert 'id="idle-kwh" data-value="4.59"' in sustainability


def test_the_sustainability_export_names_each_models_embodied_factors(fleets, client_a):
    report = client_a.get("/api/v1/reports/sustainability/", PERIOD).json()
    used = {row["gpu_model"]: row for row in report["embodied_factors"]}

    # 3 h x (2 x 197 + 2 x 312.5) kg / 35,040 h = 87.243 g; 3 h x (4 x 150 + 4 x 87.5) kg / 35,040 h = 81.336 g
    assert (used["h100-sxm"]["embodied_kgco2e_central"], used["rtx-4090"]["embodied_kgco2e_central"]) == (
        0.087243, 0.081336,
    )  # fmt: skip
    assert H100_SOURCE in used["h100-sxm"]["sources"] and RTX_HOST in used["rtx-4090"]["sources"]

    response = client_a.get("/api/v1/reports/sustainability/", {**PERIOD, "format": "csv"})
    values = dict(list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))[1:])
    assert values["embodied:h100-sxm:embodied_kgco2e_central"] == "0.087243"
    assert RTX_HOST in values["embodied:rtx-4090:sources"]
