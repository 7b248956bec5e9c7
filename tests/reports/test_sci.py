"""The SCI block, SCI = ((E x I) + M) per R, worked by hand: per request, per 1k tokens, per 1k output tokens."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest

from accounting.ledger import LedgerTotals
from accounting.ledger.units import significant
from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from reports.metrics import LedgerSums
from reports.sci import INTENSITY_BASIS, sci_block
from telemetry.models import EndpointHourUsage
from tests.helpers.reports import (
    END,
    H100_EMBODIED_G_PER_H,
    HOURS,
    RTX_EMBODIED_G_PER_H,
    START,
    endpoint,
    endpoint_hour,
    no_intensity_in_h3,
)

METHOD = {"amortization": "time", "amortization_in_lines": ["time"], "lives_years": {"h100-sxm": 4.0}}
URL = "/api/v1/reports/sustainability/"
USAGE = "/api/v1/reports/usage/"


def _sums(**totals: object) -> LedgerSums:
    # E = 10 kWh at I = 300 g/kWh: E x I = 3,000 g; M = 600 g (amortized, central); R below.
    figures = dict(
        it_kwh=Decimal(8), facility_kwh=Decimal(10), location_co2e_g=Decimal(3000),
        embodied_co2e_g_low=Decimal(240), embodied_co2e_g_central=Decimal(600), embodied_co2e_g_high=Decimal(960),
        prompt_tokens=800_000, generation_tokens=400_000,
    )  # fmt: skip
    return LedgerSums(
        totals=LedgerTotals(**(figures | totals)),  # type: ignore[arg-type]
        location_known=True,
        node_metered_kwh=Decimal(2),
        node_modelled_kwh=Decimal(4),
    )


def test_sci_per_request_per_1k_tokens_and_per_1k_output_tokens_is_e_times_i_plus_m_over_r() -> None:
    block = sci_block(sums=_sums(), requests=100, method=METHOD)

    # (3,000 + 600) g = 3,600 g: / 100 requests = 36; / 1,200 k tokens = 3; / 400 k output tokens = 9.
    assert (block["status"], block["reason"]) == ("complete", None)
    assert block["gco2e_per_request"] == 36.0
    assert block["gco2e_per_1k_tokens"] == 3.0
    assert block["gco2e_per_1k_output_tokens"] == 9.0
    assert block["functional_units"]["request"] | {"definition": None} == {
        "r": 100.0, "gco2e_per_unit": 36.0, "definition": None,
    }  # fmt: skip
    assert (block["functional_units"]["1k_tokens"]["r"], block["functional_units"]["1k_output_tokens"]["r"]) == (
        1200.0, 400.0,
    )  # fmt: skip
    terms = block["terms"]
    assert (terms["e_facility_kwh"], terms["i_gco2e_per_kwh"], terms["operational_gco2e"]) == (10.0, 300.0, 3000.0)
    assert (terms["m_embodied_gco2e"], terms["sci_numerator_gco2e"]) == (600.0, 3600.0)
    assert block["formula"] == "SCI = ((E x I) + M) per R"


def test_the_block_states_its_boundary_intensity_basis_and_amortization() -> None:
    block = sci_block(sums=_sums(), requests=100, method=METHOD)

    # IT 8 kWh: 2 metered at the node, 4 with the host modelled, 2 at the GPU boards only.
    assert block["boundary"]["energy_boundary_shares"] == {
        "node_metered": 0.25, "node_modelled": 0.5, "gpu_boards_only": 0.25,
    }  # fmt: skip
    assert any("training" in item for item in block["boundary"]["excluded"])
    assert any("PUE" in item for item in block["boundary"]["included"])
    assert block["intensity_basis"] == INTENSITY_BASIS == "lifecycle"
    assert block["amortization"]["amortization"] == "time" and block["amortization"]["lives_years"] == {"h100-sxm": 4}
    assert block["amortization"]["rule"].startswith("time: embodied x hours held / life")


def test_sci_is_null_with_its_reason_where_some_kwh_have_no_intensity() -> None:
    # 2 of the 10 kWh have no grid intensity: their carbon is missing while their tokens and requests are not.
    block = sci_block(sums=_sums(location_unknown_facility_kwh=Decimal(2)), requests=100, method=METHOD)

    assert block["status"] == "incomplete"
    assert block["reason"] == "intensity coverage incomplete: 2 of 10 facility kWh have no grid intensity"
    assert block["gco2e_per_request"] is block["gco2e_per_1k_tokens"] is block["gco2e_per_1k_output_tokens"] is None
    assert all(unit["gco2e_per_unit"] is None for unit in block["functional_units"].values())


def test_sci_is_null_where_gpu_hours_have_no_embodied_figure() -> None:
    block = sci_block(sums=_sums(embodied_unknown_gpu_h=Decimal(1)), requests=100, method=METHOD)

    assert block["gco2e_per_1k_tokens"] is None
    assert "embodied coverage incomplete: 1 GPU-hours" in block["reason"]


def test_no_requests_no_sci_per_request() -> None:
    block = sci_block(sums=_sums(), requests=0, method=METHOD)

    assert (block["gco2e_per_request"], block["gco2e_per_1k_tokens"]) == (None, 3.0)


@pytest.mark.django_db
def test_the_sustainability_export_carries_the_sci_block_by_hand(fleets, client_a, org_a):
    # given 400 requests in each of Org A's six endpoint-hours (Org B's are not its own), their lines computed
    # again as the ledger does when usage is rewritten (it holds each node-hour's requests)
    EndpointHourUsage.objects.filter(endpoint__node__fleet__organization=org_a).update(requests=400)
    for node in (fleets.h100, fleets.rtx):
        ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)

    body = client_a.get(URL, {"period": "2026-Q4"}).json()

    # E x I: 9.36 kWh x 200 g = 1,872 g; M: 3 hours of both nodes' amortized embodied carbon; R: 2,400 requests.
    numerator_g = 1872 + 3 * (H100_EMBODIED_G_PER_H + RTX_EMBODIED_G_PER_H)
    sci = body["sci"]
    assert sci["status"] == "complete"
    assert sci["gco2e_per_request"] == float(significant(numerator_g / 2400))
    assert sci["gco2e_per_1k_tokens"] == float(significant(numerator_g / 7_200_000 * 1000))
    assert sci["gco2e_per_1k_output_tokens"] == float(significant(numerator_g / 2_400_000 * 1000))
    assert sci["gco2e_per_1k_tokens"] == body["sci_gco2e_per_1k_tokens"]  # one rule, one figure
    assert sci["functional_units"]["request"]["r"] == 2400
    assert sci["amortization"]["lives_years"] == {"h100-sxm": 4.0, "rtx-4090": 4.0}


@pytest.mark.django_db
def test_the_export_nulls_sci_with_a_reason_where_a_site_has_no_grid_intensity(fleets, client_a):
    # given the RTX site in a zone with neither hourly nor annual intensity: its 3.96 kWh are unknown
    site = fleets.rtx.site
    site.grid_zone = "XX-NOWHERE"
    site.save()
    ledger_node_hours_compute(node_id=fleets.rtx.pk, hour_starts=HOURS)

    body = client_a.get(URL, {"period": "2026-Q4"}).json()

    sci = body["sci"]
    assert sci["status"] == "incomplete"
    assert sci["reason"] == "intensity coverage incomplete: 3.96 of 9.36 facility kWh have no grid intensity"
    assert sci["gco2e_per_1k_tokens"] is sci["gco2e_per_request"] is body["sci_gco2e_per_1k_tokens"] is None
    assert sci["terms"]["e_unknown_intensity_facility_kwh"] == pytest.approx(3.96)


@pytest.mark.django_db
def test_the_sci_block_is_in_the_csv(fleets, client_a):
    response = client_a.get(URL, {"period": "2026-Q4", "format": "csv"})

    text = b"".join(response.streaming_content).decode()
    assert "sci.gco2e_per_request," in text and "sci.intensity_basis,lifecycle" in text
    assert "sci.boundary.energy_boundary_shares.gpu_boards_only," in text


@pytest.mark.django_db
def test_each_line_holds_the_requests_its_node_hour_s_endpoints_answered(fleets, client_a):
    # given: a second LLM model on the H100 node answering 50 requests in the first hour
    qwen = endpoint(fleets.h100, "qwen-14b", "vllm")
    endpoint_hour(qwen, HOURS[0], prompt_tokens=1000, generation_tokens=500, requests=50)

    ledger_node_hours_compute(node_id=fleets.h100.pk, hour_starts=HOURS)

    for line in NodeHourLedger.objects.filter(node=fleets.h100):
        answered = EndpointHourUsage.objects.filter(node=fleets.h100, hour_start=line.hour_start)
        assert line.requests == sum(answered.values_list("requests", flat=True)) > 0
    first = NodeHourLedger.objects.get(node=fleets.h100, hour_start=HOURS[0])
    assert first.requests == EndpointHourUsage.objects.get(endpoint=qwen).requests + sum(
        EndpointHourUsage.objects.filter(node=fleets.h100, hour_start=HOURS[0])
        .exclude(endpoint=qwen)
        .values_list("requests", flat=True)
    )
    body = client_a.get(URL, {"period": "2026-Q4"}).json()
    in_lines = sum(NodeHourLedger.objects.filter(node__in=[fleets.h100, fleets.rtx]).values_list("requests", flat=True))
    assert body["sci"]["functional_units"]["request"]["r"] == in_lines


@pytest.mark.django_db
def test_sci_per_1k_tokens_is_one_answer_when_an_hour_has_no_intensity(fleets, client_a, org_a):
    # given the H100 site with no grid intensity in H3 (nor an annual average): 1.8 of its 5.4 kWh unknown
    no_intensity_in_h3(fleets.h100)
    asked = {"start": START.isoformat(), "end": END.isoformat(), "organization": org_a.slug}

    sustainability = client_a.get(URL, asked).json()
    (usage,) = client_a.get(USAGE, {**asked, "granularity": "total"}).json()["results"]

    # then the usage report withholds the per-token carbon as SCI does, the unknown kWh beside it
    assert usage["location_unknown_facility_kwh"] == pytest.approx(1.8)
    assert usage["gco2e_per_1k_tokens"] == sustainability["sci_gco2e_per_1k_tokens"] is None
    assert usage["gco2e_per_1k_output_tokens"] == sustainability["sci_gco2e_per_1k_output_tokens"] is None
    assert sustainability["sci"]["reason"] == (
        "intensity coverage incomplete: 1.8 of 9.36 facility kWh have no grid intensity"
    )
    # the totals keep their rule: the known kWh's carbon, the unknown kWh beside it
    assert usage["location_kgco2e"] == pytest.approx((3.6 * 200 + 3.96 * 200) / 1000)


@pytest.mark.django_db
def test_usage_csv_leaves_a_withheld_per_token_carbon_empty(fleets, client_a, org_a):
    no_intensity_in_h3(fleets.h100)
    asked = {"start": START.isoformat(), "end": END.isoformat(), "granularity": "total", "format": "csv"}

    response = client_a.get(USAGE, asked)

    (row,) = csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    per_1k = next(value for name, value in row.items() if name.startswith("gco2e_per_1k_tokens"))
    assert per_1k == ""
