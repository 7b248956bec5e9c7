"""The sustainability report: Scope 2, embodied, energy, PUE, SCI and data quality, by hand."""

from __future__ import annotations

import csv
import io
from decimal import ROUND_HALF_UP, Decimal

import pytest

from accounting.ledger.units import significant
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Fleet
from grid import annual_intensity
from grid.annual import EM_ATTRIBUTION, EM_LICENCE
from grid.models import GridIntensity
from telemetry.models import GpuHourUsage
from tests.helpers.factories import GpuFactory, NodeFactory
from tests.helpers.reports import H2, H3, H100_EMBODIED_G_PER_H, HOURS, LONG_AGO, RTX_EMBODIED_G_PER_H, hour_usage

URL = "/api/v1/reports/sustainability/"
pytestmark = pytest.mark.django_db


def places(value: Decimal, digits: int = 6) -> float:
    return float(value.quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP))


def report(client, **params):
    response = client.get(URL, {"period": "2026-Q4", **params})
    assert response.status_code == 200, response.content
    return response.json()


def test_scope_2_embodied_energy_and_sci_by_hand(fleets, client_a):
    body = report(client_a)

    assert (body["organization"], body["start"], body["end"]) == (
        "org-a",
        "2026-10-01T00:00:00Z",
        "2027-01-01T00:00:00Z",
    )
    # Location: 3 x 1.8 kWh x 200 g + 3 x 1.32 kWh x 200 g = 1,872 g.
    assert (body["location_kgco2e"], body["location_tco2e"]) == (1.872, 0.001872)
    # Market, to disclose: no instrument and no residual mix held, so the location factor stands in, labelled.
    assert (body["market_kgco2e"], body["market_tco2e"], body["market_unknown_facility_kwh"]) == (1.872, 0.001872, 0)
    assert body["market_basis"] == "scope2_instruments"
    # Site factors (internal): only sjc-1 has one (50 g/kWh x 5.4 kWh); sjc-2's 3.96 kWh are unknown, not zero.
    site_factors = [f"market_site_factors_{name}" for name in ("kgco2e", "tco2e", "unknown_facility_kwh")]
    assert tuple(body[name] for name in site_factors) == (0.27, 0.00027, 3.96)
    embodied_g = 3 * (H100_EMBODIED_G_PER_H + RTX_EMBODIED_G_PER_H)
    assert body["embodied_kgco2e_central"] == places(embodied_g / 1000)
    assert body["embodied_tco2e_central"] == places(embodied_g / 1_000_000, 9)
    assert body["embodied_kgco2e_low"] < body["embodied_kgco2e_central"] < body["embodied_kgco2e_high"]
    # IT 4.5 + 3.6 = 8.1 kWh; facility 5.4 + 3.96 = 9.36 kWh; PUE energy-weighted 9.36 / 8.1.
    assert (body["it_kwh"], body["facility_kwh"], body["pue"]) == (8.1, 9.36, 1.1556)
    assert body["tokens"] == 7_200_000
    assert body["sci_gco2e_per_1k_tokens"] == float(significant((1872 + embodied_g) / 7_200_000 * 1000))
    # per output token: 1.5M + 0.9M generation tokens
    assert body["sci_gco2e_per_1k_output_tokens"] == float(significant((1872 + embodied_g) / 2_400_000 * 1000))


def test_data_quality_all_measured(fleets, client_a):
    body = report(client_a)

    # GPU energy: 3 x 5.4 MJ (H100) + 2 x 4.32 MJ (RTX) by the counter, 4.32 MJ integrated (RTX, H3).
    assert body["energy_counter_share"] == places(Decimal("24.84") / Decimal("29.16"))
    assert body["energy_integrated_share"] == places(Decimal("4.32") / Decimal("29.16"))
    assert (body["grid_hourly_energy_share"], body["grid_annual_energy_share"], body["grid_unknown_energy_share"]) == (
        1.0,
        0.0,
        0.0,
    )
    assert (body["grid_hourly_h"], body["held_h"], body["observed_h"], body["missing_h"], body["coverage"]) == (
        6.0,
        6.0,
        6.0,
        0.0,
        1.0,
    )
    assert (body["hardware_unpriced_h"], body["electricity_unpriced_h"], body["unknown_model_gpu_h"]) == (0.0, 0.0, 0.0)
    assert body["factors"] == [
        {
            "scope": "location",
            "source": "electricitymaps",
            "origin": "live",
            "licence": "Electricity Maps API terms (the organization's account)",
            "attribution": "Electricity Maps (electricitymaps.com)",
            "facility_kwh": 9.36,
            "held_h": 6.0,
        },
        {
            "scope": "market",
            "source": "contract:PPA-7",
            "origin": "market",
            "licence": "not applicable (the organization's own figure)",
            "attribution": "site market factor entered by the organization (contract:PPA-7)",
            "facility_kwh": 5.4,
            "held_h": 3.0,
        },
    ]


def test_data_quality_with_fallback_gaps_unpriced_and_unknown_models(fleets, client_a, org_a):
    # H3 loses its live grid value: the annual average stands in (1.8 + 1.32 kWh of 9.36).
    GridIntensity.objects.filter(hour_start=H3).delete()
    # The RTX node was observed half of H2 only.
    GpuHourUsage.objects.filter(gpu__node=fleets.rtx, hour_start=H2).update(observed_s=1800.0)
    for node in (fleets.h100, fleets.rtx):
        ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)
    # An unpriced node with a GPU of no known model, for H2.
    lab = Fleet.objects.create(organization=org_a, name="lab")
    mystery = NodeFactory(fleet=lab, site=fleets.h100.site, hostname="lab-1", commissioned_at=LONG_AGO)
    GpuFactory(node=mystery, index=0, name="NVIDIA Mystery 9000")
    hour_usage(mystery, H2, energies_j=(0.0,), utils=(0.0,), tokens=(0, 0), serving_gpus=0)
    ledger_node_hours_compute(node_id=mystery.pk, hour_starts=[H2])

    body = report(client_a)

    annual = annual_intensity("US-CAL-CISO", 2026)
    assert body["grid_annual_energy_share"] == places(Decimal("3.12") / Decimal("9.36"))
    assert body["grid_hourly_energy_share"] == places(Decimal("6.24") / Decimal("9.36"))
    assert (body["grid_hourly_h"], body["grid_annual_h"]) == (5.0, 2.0)  # the lab node's H2 is live too
    # Scope 2 takes the annual average's direct figure (its country's mix: grid/data/direct-annual-2021.json)
    assert annual.direct_gco2e_per_kwh == Decimal("169.386")  # 208 x 307.90 / 378.09, the US mix
    assert body["location_kgco2e"] == places(
        (Decimal("6.24") * 200 + Decimal("3.12") * annual.direct_gco2e_per_kwh) / 1000
    )
    assert (body["held_h"], body["observed_h"], body["missing_h"]) == (7.0, 6.5, 0.5)
    assert body["coverage"] == places(Decimal("6.5") / 7)
    assert (body["hardware_unpriced_h"], body["unknown_model_gpu_h"]) == (1.0, 1.0)
    annual_factor = next(f for f in body["factors"] if f["origin"] == "annual")
    assert annual_factor == {
        "scope": "location",
        "source": annual.source,
        "origin": "annual",
        "licence": EM_LICENCE,
        "attribution": EM_ATTRIBUTION,
        "facility_kwh": 3.12,
        "held_h": 2.0,
    }


def test_csv_is_metric_value_lines(fleets, client_a):
    response = client_a.get(URL, {"period": "2026", "format": "csv"})

    table = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert response.status_code == 200
    assert table[0] == ["metric", "value"]
    values = dict(table[1:])
    assert (values["location_tco2e"], values["facility_kwh"], values["pue"]) == ("0.001872", "9.36", "1.1556")
    assert values["factor:location:electricitymaps:origin"] == "live"
    assert values["factor:market:contract:PPA-7:facility_kwh"] == "5.4"


def test_an_empty_period_has_nulls_where_undefined(fleets, client_a):
    body = report(client_a, period="2026-Q2")

    assert (body["location_kgco2e"], body["pue"], body["sci_gco2e_per_1k_tokens"], body["coverage"]) == (
        None,
        None,
        None,
        None,
    )
    assert (body["it_kwh"], body["tokens"], body["factors"]) == (0.0, 0, [])
