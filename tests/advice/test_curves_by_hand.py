"""A load curve worked by hand from ledger lines and endpoint-hours written directly.

Fleet "alpha" (H100 SXM, USD), hours H1 and H2:

- node A (one vLLM endpoint of llama-8b, and a second one that served nothing: no share):
  H1 7,200 requests, 720,000 output tokens, TTFT [60, 30, 10] on (0.1, 0.5 s]; its line
  2 GPU-h, cost 6, IT 1.5 kWh, facility 1.8 kWh, 360 g location, 40 g embodied.
  H2 720 requests, 72,000 tokens, TTFT [8.0, 2, 0] (a float count); line alike but with no known intensity.
- node B (llama-8b on vLLM, finer buckets (0.1, 0.25, 0.5 s]): H1 7,200 requests, 720,000
  tokens, TTFT [50, 20, 20, 10]; line as A's in H1.
- node C (1 GPU): llama-8b on TGI (a lower bound of TTFT) 2,700 requests, 300,000 tokens, and
  qwen-14b on vLLM 900 requests, 100,000 tokens: the line (1 GPU-h, cost 4, IT 0.8, facility
  0.96, 192 g, 20 g) is shared 3/4 : 1/4 by output tokens.
- node D served llama-8b in H1 but has no ledger line: left out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from accounting.models import NodeHourLedger
from accounting.site_hours import site_hours_rebuild
from fleets.models import Fleet
from reports.curves import load_curve_rows, load_curves
from telemetry.models import EndpointHourUsage, ServingEndpoint
from tests.helpers.curves import curves_from_lines
from tests.helpers.factories import NodeFactory, SiteFactory

H1 = datetime(2026, 11, 2, 10, tzinfo=UTC)
H2 = H1 + timedelta(hours=1)
START, END = H1, H2 + timedelta(hours=1)

pytestmark = pytest.mark.django_db


def line(node, hour, *, gpu_h, cost, it_kwh, location_g, embodied_g, tokens, electricity_status="included"):
    """A ledger line; ``tokens``: its output tokens, its endpoint-hours' (the shares' denominator)."""
    it = Decimal(it_kwh)
    NodeHourLedger.objects.create(
        node=node, hour_start=hour, organization=node.fleet.organization, fleet=node.fleet, site=node.site,
        gpu_model="h100-sxm", currency="USD", held_h=1, observed_s=3600, gpu_count=int(Decimal(gpu_h)),
        gpu_h=Decimal(gpu_h), it_kwh=it, facility_kwh=it * Decimal("1.2"), pue=Decimal("1.20"),
        hardware_cost=Decimal(cost), cost=Decimal(cost),
        location_co2e_g=None if location_g is None else Decimal(location_g),
        embodied_co2e_g_low=Decimal(embodied_g), embodied_co2e_g_central=Decimal(embodied_g),
        embodied_co2e_g_high=Decimal(embodied_g), embodied_unknown_gpu_h=0, prompt_tokens=0, generation_tokens=tokens,
        idle_gpu_h=0, idle_cost=0, idle_facility_kwh=0, energy_method="gpu_sum", energy_counter_j=0.0,
        energy_integrated_j=0.0, electricity_status=electricity_status, location_is_fallback=False,
        amortization="rented",
    )  # fmt: skip
    site_hours_rebuild()  # lines written by hand: their site-hours summed again


def served(node, model, kind, hour, *, requests, tokens, bounds, counts, url="http://127.0.0.1:8000/metrics"):
    endpoint, _ = ServingEndpoint.objects.get_or_create(node=node, url=url, model_name=model, kind=kind)
    EndpointHourUsage.objects.create(
        endpoint=endpoint, hour_start=hour, prompt_tokens=0, generation_tokens=tokens, requests=requests,
        ttft_bucket_bounds_s=bounds, ttft_bucket_counts=counts, observed_s=3600.0, reset_count=0, computed_at=hour,
    )  # fmt: skip


@pytest.fixture
def alpha(org_a):
    fleet = Fleet.objects.create(organization=org_a, name="alpha")
    site = SiteFactory(organization=org_a)
    a, b, c, d = (NodeFactory(fleet=fleet, site=site, hostname=name) for name in "abcd")
    served(a, "llama-8b", "vllm", H1, requests=7200, tokens=720_000, bounds=[0.1, 0.5], counts=[60, 30, 10])
    served(a, "llama-8b", "vllm", H2, requests=720, tokens=72_000, bounds=[0.1, 0.5], counts=[8.0, 2, 0])
    served(a, "llama-8b", "vllm", H1, requests=0, tokens=0, bounds=[0.1], counts=[0, 0], url="http://127.0.0.1:9/")
    served(b, "llama-8b", "vllm", H1, requests=7200, tokens=720_000, bounds=[0.1, 0.25, 0.5], counts=[50, 20, 20, 10])
    served(c, "llama-8b", "tgi", H1, requests=2700, tokens=300_000, bounds=[0.1], counts=[25, 5])
    served(c, "qwen-14b", "vllm", H1, requests=900, tokens=100_000, bounds=[0.2], counts=[9, 1])
    served(d, "llama-8b", "vllm", H1, requests=5000, tokens=500_000, bounds=[0.1], counts=[50, 0])
    for node in (a, b):
        line(node, H1, gpu_h="2", cost="6", it_kwh="1.5", location_g="360", embodied_g="40", tokens=720_000)
    line(a, H2, gpu_h="2", cost="6", it_kwh="1.5", location_g=None, embodied_g="40", tokens=72_000)
    line(c, H1, gpu_h="1", cost="4", it_kwh="0.8", location_g="192", embodied_g="20", tokens=400_000)
    return fleet


def figures(band):
    return (band.hours, band.requests, band.generation_tokens, band.gpu_h, band.cost, band.it_kwh,
            band.facility_kwh, band.operational_co2e_g, band.embodied_co2e_g)  # fmt: skip


def ttft(band):
    """The band's merged histogram: its bounds, counts and basis."""
    assert band.ttft is not None
    return band.ttft.bounds_s, band.ttft.counts, band.ttft_basis


def test_the_curve_by_hand(org_a, alpha):
    llama, qwen = load_curves(organization_ids=[org_a.pk], start=START, end=END)
    assert (llama.key.llm_model, llama.fleet_name, llama.gpu_class, llama.currency) == (
        "llama-8b", "alpha", "enterprise", "USD",
    )  # fmt: skip
    # Busiest hour H1: 2 + 2 + 3/4 GPU-h = 4.75 GPUs; qwen's 1/4 of the shared node's GPU: 0.25 (not rounded to 0).
    assert (llama.gpu_count, qwen.gpu_count, llama.first_hour, llama.last_hour) == (4.75, 0.25, H1, H2)
    quiet, busy = llama.bands
    # H2: 720 requests / (2 GPU-h x 3600 s) = 0.1 req/s per GPU; its line has no intensity: operational unknown.
    assert (quiet.low_rps_per_gpu, quiet.high_rps_per_gpu, quiet.max_rps_per_gpu) == (0.0, 0.25, 0.1)
    assert figures(quiet) == (1, 720, 72_000, 2, 6, Decimal("1.5"), Decimal("1.8"), None, 40)
    assert ttft(quiet) == ((0.1, 0.5), (8, 2, 0), "measured")
    assert {type(count) for count in ttft(quiet)[1]} == {int}  # a count stored as 8.0 is read as 8
    # H1: A + B + 3/4 of C = 17,100 requests over 4.75 GPU-h x 3600 s = 1.0 req/s per GPU.
    assert (busy.low_rps_per_gpu, busy.high_rps_per_gpu, busy.max_rps_per_gpu) == (1.0, 2.0, 1.0)
    assert figures(busy) == (
        1, 17_100, 1_740_000, Decimal("4.75"), 15, Decimal("3.6"), Decimal("4.32"), 864, 95
    )  # fmt: skip
    # Measured: A's [60, 30, 10] + B's [50, 20 + 20, 10] on the bounds they share (0.1, 0.5); C's TGI
    # queue time is only a lower bound, left out while measured TTFT exists.
    assert ttft(busy) == ((0.1, 0.5), (110, 70, 20), "measured")
    # P50: rank 100 of 200 lies 100/110 into (0, 0.1 s].
    assert busy.ttft_quantile_s(0.5) == pytest.approx(0.1 * 100 / 110)
    (only,) = qwen.bands
    # 900 requests / (0.25 GPU-h x 3600 s) = 1.0 req/s per GPU; a quarter of C's line.
    assert (only.low_rps_per_gpu, only.max_rps_per_gpu) == (1.0, 1.0)
    assert figures(only) == (1, 900, 100_000, Decimal("0.25"), 1, Decimal("0.2"), Decimal("0.24"), 48, 5)
    assert ttft(only) == ((0.2,), (9, 1), "measured")


def test_a_model_filter_keeps_each_model_its_share_of_a_shared_node_hour(org_a, alpha):
    (llama,) = load_curves(organization_ids=[org_a.pk], start=START, end=END, llm_models=["llama-8b"])
    # qwen is filtered out after the shares: C's hour stays 3/4 llama's, as in the unfiltered curve
    # (17,100 requests / 4.75 GPU-h), not all of it (which gave 5 GPU-h and 0.95 req/s per GPU).
    quiet, busy = llama.bands
    assert (busy.low_rps_per_gpu, busy.max_rps_per_gpu) == (1.0, 1.0)
    assert figures(busy) == (
        1, 17_100, 1_740_000, Decimal("4.75"), 15, Decimal("3.6"), Decimal("4.32"), 864, 95
    )  # fmt: skip
    assert ttft(busy) == ((0.1, 0.5), (110, 70, 20), "measured")
    assert figures(quiet)[:4] == (1, 720, 72_000, 2)
    assert llama.gpu_count == 4.75
    (qwen,) = load_curves(organization_ids=[org_a.pk], start=START, end=END, llm_models=["qwen-14b"])
    # qwen alone: its quarter of C's line (0.25 GPU-h, cost 1), as unfiltered
    assert figures(qwen.bands[0]) == (1, 900, 100_000, Decimal("0.25"), 1, Decimal("0.2"), Decimal("0.24"), 48, 5)
    assert ttft(qwen.bands[0]) == ((0.2,), (9, 1), "measured")


def test_unknown_intensity_keeps_the_known_part_and_unpriced_hours_are_counted(org_a, alpha):
    node_b, node_c = (NodeHourLedger.objects.get(node__hostname=name, hour_start=H1) for name in "bc")
    node_b.location_co2e_g = None  # B's H1: no intensity (1.8 facility kWh)
    node_b.electricity_status = "unpriced"
    # the columns changed named: on Citus an UPDATE may not set the line's distribution column (its node)
    node_b.save(update_fields=["location_co2e_g", "electricity_status"])
    node_c.electricity_status = "unpriced"  # the shared node-hour: unpriced for both models
    node_c.save(update_fields=["electricity_status"])
    site_hours_rebuild()  # lines changed by hand: their site-hours summed again
    llama, qwen = load_curves(organization_ids=[org_a.pk], start=START, end=END)
    quiet, busy = llama.bands
    # H1 known: A's 360 g + 3/4 of C's 192 g = 504 g over 1.8 + 0.72 of 4.32 facility kWh
    assert (busy.operational_co2e_g, busy.unknown_intensity_kwh) == (504, Decimal("1.8"))
    assert busy.operational_coverage == pytest.approx(2.52 / 4.32)
    # per 1M output tokens: withheld, as every report's carbon per token is with kWh of no intensity
    assert busy.operational_gco2e_per_1m_output_tokens is busy.gco2e_per_1m_output_tokens is None
    assert busy.embodied_gco2e_per_1m_output_tokens is not None  # every GPU-hour has its embodied figure
    # H2 (A alone, no intensity): nothing known
    assert (quiet.operational_co2e_g, quiet.operational_coverage) == (None, 0.0)
    assert (busy.unpriced_node_hours, quiet.unpriced_node_hours, qwen.bands[0].unpriced_node_hours) == (2, 0, 1)
    rows = load_curve_rows([llama])
    assert [(r["operational_coverage"], r["unpriced_node_hours"]) for r in rows] == [
        (Decimal(0), 0), (Decimal("0.5833"), 2),
    ]  # fmt: skip
    assert [(r["gco2e_per_1m_output_tokens"], r["carbon_per_token_note"]) for r in rows] == [
        (None, "intensity coverage incomplete: 1.8 of 1.8 facility kWh have no grid intensity"),
        (None, "intensity coverage incomplete: 1.8 of 4.32 facility kWh have no grid intensity"),
    ]


def test_a_fleet_filter_and_another_organization_see_nothing_else(org_a, org_b, alpha):
    other = Fleet.objects.create(organization=org_a, name="other")
    assert load_curves(organization_ids=[org_a.pk], start=START, end=END, fleet_ids=[other.pk]) == []
    assert load_curves(organization_ids=[org_b.pk], start=START, end=END) == []
    assert len(load_curves(organization_ids=[org_a.pk], start=START, end=END, fleet_ids=[alpha.pk])) == 2


@pytest.mark.parametrize(
    "filters", [{}, {"llm_models": ["llama-8b"]}, {"llm_models": ["qwen-14b"]}, {"fleet": True}], ids=repr
)
def test_the_served_site_hours_give_the_curves_of_the_lines(monkeypatch, org_a, alpha, filters):
    """Every case of the fixture (a second endpoint without output tokens, a shared node-hour, a float count, a
    TGI lower bound, finer buckets, a node-hour without a line) reads the same from either."""
    asked = {"organization_ids": [org_a.pk], "start": START, "end": END, **filters}
    if asked.pop("fleet", False):
        asked["fleet_ids"] = [alpha.pk]
    stored = load_curves(**asked)
    assert stored == curves_from_lines(monkeypatch, **asked)  # the by-hand figures add up exactly on SQLite too
    assert stored  # not two empty lists
