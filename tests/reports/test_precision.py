"""Unit figures keep 4 significant digits everywhere; money amounts are rounded once to the minor unit.

A small rented node (unknown GPU model: no embodied carbon), one hour, worked by hand:
rent 0.0982 per node-hour with power included; IT energy 83,520 J = 0.0232 kWh at PUE 1.0;
grid 200 gCO2e/kWh → 4.64 g; prompts twice as long as outputs: 2,000,000 input + 1,000,000
output tokens. So:

- cost per 1M output tokens 0.0982 / 1 = 0.0982 → "0.09820" (the minor unit would say "0.10");
- cost per 1M tokens (input + output) 0.0982 / 3 = 0.032733… → "0.03273" (not "0.03");
- location-based gCO2e per 1M output tokens 4.64 → 4.64 (not "5"); with embodied carbon (per 1k or 1M tokens)
  not stated: the GPU-hour's embodied carbon is unknown;
- J per output token 0.08352, per token (input + output) 0.02784.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest

from accounting.ledger.units import significant
from accounting.models import NodePrice, SiteTariff
from accounting.node_hour_lines import ledger_node_hours_compute
from accounting.templatetags.ledger import unit
from fleets.models import Fleet
from tests.helpers.factories import GpuFactory, NodeFactory, SiteFactory
from tests.helpers.reports import H2, LONG_AGO, endpoint, endpoint_hour, gpu_hours, h100_node, hour_usage, live_grid

pytestmark = pytest.mark.django_db
PERIOD = {"start": "2026-11-01T00:00:00Z", "end": "2026-11-01T01:00:00Z"}


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("0.0982", "0.09820"),
        ("4.64", "4.640"),
        ("0.0140", "0.01400"),
        ("3.693333", "3.693"),
        ("12345.67", "12350"),
        ("9.99996", "10.00"),
        ("0.000012344", "0.00001234"),
        ("0", "0"),
    ],
)
def test_significant_keeps_four_digits_in_plain_notation(value, shown):
    assert f"{significant(Decimal(value)):f}" == shown


def test_the_unit_filter_shows_four_significant_digits_with_the_currency():
    assert unit(Decimal("0.0982"), "USD") == "0.09820 USD"
    assert unit(4.64) == "4.640"
    assert unit(12345.67) == "12,350"
    assert unit(None) == "—"


@pytest.fixture
def cheap_node(org_a):
    live_grid(hours=(H2,))
    site = SiteFactory(organization=org_a, name="home", grid_zone="US-CAL-CISO", country="US", pue=Decimal("1.0"))
    fleet = Fleet.objects.create(organization=org_a, name="owned-consumer")
    node = NodeFactory(fleet=fleet, site=site, hostname="x1", tenure="rented", commissioned_at=LONG_AGO)
    GpuFactory(node=node, index=0, name="Acme X1")  # no hardware profile: no embodied carbon
    NodePrice.objects.create(
        fleet=fleet, kind="rented", rate_per_h=Decimal("0.0982"), rate_per="node", includes_power=True,
        valid_from=LONG_AGO,
    )  # fmt: skip
    hour_usage(
        node, H2, energies_j=(83_520.0,), utils=(60.0,), tokens=(2_000_000, 1_000_000), serving_gpus=1
    )  # fmt: skip
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H2])
    return node


def test_a_sub_cent_unit_cost_keeps_four_significant_digits_in_json(cheap_node, client_a):
    usage = client_a.get("/api/v1/reports/usage/", {**PERIOD, "granularity": "total"}).json()["results"][0]
    compared = client_a.get("/api/v1/reports/comparison/", PERIOD).json()["results"][0]

    assert usage["cost"] == "0.10"  # an amount: rounded once to the minor unit
    # Per GPU-hour: 0.0982 over one GPU-hour; power is in the rent: 0 per kWh.
    assert (usage["cost_per_gpu_h"], usage["electricity_cost_per_kwh"]) == ("0.09820", "0")
    assert (usage["cost_per_1m_output_tokens"], usage["cost_per_1m_tokens"]) == ("0.09820", "0.03273")
    # Carbon per token with embodied carbon in it: not stated, its GPU-hour's embodied carbon unknown.
    assert (usage["gco2e_per_1k_output_tokens"], usage["gco2e_per_1k_tokens"], usage["embodied_unknown_gpu_h"]) == (
        None, None, 1.0,
    )  # fmt: skip
    assert (compared["cost_per_1m_output_tokens"], compared["cost_per_1m_tokens"]) == ("0.09820", "0.03273")
    assert compared["location_gco2e_per_1m_output_tokens"] == 4.64
    assert (compared["gco2e_per_1m_output_tokens"], compared["gco2e_per_1m_tokens"]) == (None, None)
    # 83,520 J over 1M output tokens and over 3M tokens.
    assert (compared["it_j_per_output_token"], compared["it_j_per_token"]) == (0.08352, 0.02784)


def test_a_sub_cent_unit_cost_keeps_four_significant_digits_in_csv(cheap_node, client_a):
    response = client_a.get("/api/v1/reports/comparison/", {**PERIOD, "format": "csv"})

    (row,) = csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    assert (row["cost_per_1m_output_tokens"], row["cost_per_1m_tokens"]) == ("0.09820", "0.03273")
    assert (row["location_gco2e_per_1m_output_tokens"], row["gco2e_per_1m_output_tokens"]) == ("4.64", "")


def test_a_sub_cent_unit_cost_keeps_four_significant_digits_on_the_pages(cheap_node, client_a):
    query = "?start=2026-11-01&end=2026-11-01&granularity=hour&columns=all"  # per token (input + output) too
    compare = client_a.get(f"/compare/{query}").content.decode()
    finance = client_a.get(f"/finance/{query}").content.decode()

    assert "0.09820 USD" in compare and "0.03273 USD" in compare
    assert "0.08352" in compare and "0.02784" in compare  # J per output token, per token
    assert "not stated: embodied coverage incomplete: 1 GPU-hours" in compare
    assert "0.10 USD" not in compare
    assert "0.09820 USD" in finance and "0.03273 USD" in finance


def test_the_charts_plot_unrounded_unit_figures(cheap_node, client_a):
    page = client_a.get("/finance/?start=2026-11-01&end=2026-11-01&granularity=hour")

    chart = next(c for c in page.context["charts"] if "chart-cost-per-token" in c)
    assert '"y":[0.0982]' in chart.replace(" ", "")


def test_the_finance_pages_total_with_site_charges_is_the_exact_sum_rounded_once(org_a, client_a):
    # given: a node-hour costing 5.545 (rent 5.005 + electricity 0.54) and a fixed site charge of 0.005 for the
    # day (0.15 a month): each rounds up on its own (5.55 + 0.01), their exact sum is 5.550
    live_grid(hours=(H2,))
    node = h100_node(org_a)
    NodePrice.objects.filter(node=node).update(rate_per_h=Decimal("2.5025"))
    SiteTariff.objects.filter(site=node.site).update(fixed_per_month=Decimal("0.15"))
    gpu_hours(node, H2, (1_800_000.0, 3_600_000.0), (80.0, 60.0))
    endpoint_hour(endpoint(node, "llama-8b", "vllm"), H2, prompt_tokens=1, generation_tokens=1, requests=1)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H2])

    page = client_a.get("/finance/", {"start": "2026-11-01", "end": "2026-11-01"})

    # then: the total with site charges is 5.55, not the rounded parts re-added (5.56)
    assert page.context["site_charges"]["cost_with_site_charges"] == Decimal("5.55")
    assert 'id="split-total"' in page.content.decode() and "5.55" in page.content.decode()
