"""Every figure traceable: each hour's grid intensity with its source and kind, energy methods and
intensity kinds as shares, embodied factors' sources, idle energy beside idle cost.

conftest.py's hours, changed so that every kind of grid value is there: the RTX site moves to
zone SE-SE3 with simulated hourly values (40 g/kWh) in H1 and H2 and none in H3, where the
annual average stands in. The H100 site keeps its live 200 g/kWh (electricitymaps).
Facility kWh per hour: H100 1.8, RTX 1.32.
"""

from __future__ import annotations

import csv
import io

import pytest

from grid import annual_intensity
from tests.helpers.reports import END, START

pytestmark = pytest.mark.django_db


def test_the_sustainability_export_gives_each_hours_intensity_source_and_kind(mixed_grid, client_a):
    body = client_a.get("/api/v1/reports/sustainability/", {"start": START.isoformat(), "end": END.isoformat()})
    hours = body.json()["grid_hours"]

    annual = annual_intensity("SE-SE3", 2026)  # Electricity Maps yearly, by zone
    assert [(h["zone"], h["hour_start"][:13], h["gco2e_per_kwh"], h["kind"], h["facility_kwh"]) for h in hours] == [
        ("SE-SE3", "2026-10-31T23", 40.0, "simulated", 1.32),
        ("SE-SE3", "2026-11-01T00", 40.0, "simulated", 1.32),
        ("SE-SE3", "2026-11-01T01", float(annual.gco2e_per_kwh), "annual", 1.32),
        ("US-CAL-CISO", "2026-10-31T23", 200.0, "live", 1.8),
        ("US-CAL-CISO", "2026-11-01T00", 200.0, "live", 1.8),
        ("US-CAL-CISO", "2026-11-01T01", 200.0, "live", 1.8),
    ]
    assert hours[0]["source"] == "simulated:annual-shaped" and hours[2]["source"] == annual.source


def test_the_sustainability_csv_has_a_line_per_zone_hour_and_figure(mixed_grid, client_a):
    response = client_a.get(
        "/api/v1/reports/sustainability/", {"start": START.isoformat(), "end": END.isoformat(), "format": "csv"}
    )

    values = dict(list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))[1:])
    prefix = "grid:SE-SE3:2026-11-01T00:00:00Z:simulated:annual-shaped"
    assert (values[f"{prefix}:gco2e_per_kwh"], values[f"{prefix}:kind"], values[f"{prefix}:facility_kwh"]) == (
        "40.0", "simulated", "1.32",
    )  # fmt: skip
    assert values["grid:US-CAL-CISO:2026-11-01T01:00:00Z:electricitymaps:kind"] == "live"


def test_usage_rows_per_node_hour_carry_the_intensity_and_the_shares(mixed_grid, client_a):
    params = {"start": START.isoformat(), "end": END.isoformat(), "granularity": "hour", "group_by": "node"}
    rows = client_a.get("/api/v1/reports/usage/", params).json()["results"]
    rtx = {row["period_start"][:13]: row for row in rows if row["group_label"] == "rtx-a"}

    h2, h3 = rtx["2026-11-01T00"], rtx["2026-11-01T01"]
    assert (h2["location_gco2e_per_kwh"], h2["grid_simulated_energy_share"], h2["grid_live_energy_share"]) == (
        40.0, 1.0, 0.0,
    )  # fmt: skip
    assert (h3["grid_annual_energy_share"], h3["grid_simulated_energy_share"]) == (1.0, 0.0)
    # H3's energy was integrated from power (the counter was unsupported).
    assert (h2["energy_counter_share"], h3["energy_counter_share"], h3["energy_integrated_share"]) == (1.0, 0.0, 1.0)
    assert h2["node_meter_energy_share"] == 0.0  # the GPUs' board energy, no node meter


def test_usage_rows_over_the_period_give_energy_weighted_shares(mixed_grid, client_a):
    params = {"start": START.isoformat(), "end": END.isoformat(), "granularity": "total"}
    (row,) = client_a.get("/api/v1/reports/usage/", params).json()["results"]

    # 9.36 kWh: 5.4 live, 2.64 simulated, 1.32 annual.
    assert row["grid_live_energy_share"] == round(5.4 / 9.36, 6)
    assert row["grid_simulated_energy_share"] == round(2.64 / 9.36, 6)
    assert row["grid_annual_energy_share"] == round(1.32 / 9.36, 6)
    assert (row["grid_unknown_energy_share"], row["grid_upload_energy_share"]) == (0.0, 0.0)
    # GPU energy 3 x 5.4 MJ (H100) + 3 x 4.32 MJ (RTX), of which the RTX's H3 (4.32 MJ) integrated.
    assert row["energy_counter_share"] == round((16.2 + 8.64) / 29.16, 6)


def test_comparison_and_gpu_model_rows_name_their_embodied_factors_sources(fleets, client_a):
    period = {"start": START.isoformat(), "end": END.isoformat()}
    compared = {r["gpu_model"]: r for r in client_a.get("/api/v1/reports/comparison/", period).json()["results"]}
    per_model = client_a.get("/api/v1/reports/usage/", {**period, "granularity": "total", "group_by": "gpu_model"})

    assert "hubblo-org/gpu-calculator" in compared["h100-sxm"]["embodied_sources"]
    assert compared["rtx-4090"]["embodied_sources"]
    assert {r["group_key"]: bool(r["embodied_sources"]) for r in per_model.json()["results"]} == {
        "h100-sxm": True,
        "rtx-4090": True,
    }
    # Idle energy beside idle cost, in the comparison too: the H100's idle GPU 1.2 kWh x 3 h.
    assert compared["h100-sxm"]["grid_live_energy_share"] == 1.0


def test_the_node_page_traces_each_hours_intensity_source_and_kind(mixed_grid, client_a):
    page = client_a.get(f"/nodes/{mixed_grid.rtx.pk}/?start=2026-10-31&end=2026-11-01&granularity=hour")
    html = page.content.decode()

    ledger = html[html.index('id="ledger"') :]
    assert "simulated:annual-shaped" in ledger and ">simulated<" in ledger and ">annual<" in ledger
