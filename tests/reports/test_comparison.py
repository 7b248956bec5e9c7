"""Fleet comparison: H100 (rented) vs RTX 4090 (owned), worked by hand from conftest.py's three hours."""

from __future__ import annotations

import csv
import io
from decimal import ROUND_HALF_UP, Decimal

import pytest

from accounting.ledger.units import significant
from accounting.models import NodePrice
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Fleet
from reports.selectors import fleet_comparison
from tests.helpers.factories import GpuFactory, NodeFactory
from tests.helpers.reports import END, H100_EMBODIED_G_PER_H, HOURS, LONG_AGO, RTX_EMBODIED_G_PER_H, START, hour_usage

URL = "/api/v1/reports/comparison/"
pytestmark = pytest.mark.django_db


def places(value: Decimal, digits: int) -> float:
    return float(value.quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP))


def compare(client, **params):
    response = client.get(URL, {"start": START.isoformat(), "end": END.isoformat(), **params})
    assert response.status_code == 200, response.content
    return response.json()


def test_h100_against_rtx_4090_by_hand(fleets, client_a):
    body = compare(client_a, baseline=fleets.enterprise.pk)

    assert body["baseline_fleet_id"] == fleets.enterprise.pk
    consumer, enterprise = body["results"]  # ordered by fleet name
    assert (enterprise["fleet_name"], enterprise["gpu_model"], enterprise["gpu_class"]) == (
        "enterprise",
        "h100-sxm",
        "enterprise",
    )
    assert (consumer["fleet_name"], consumer["gpu_model"], consumer["gpu_class"]) == (
        "consumer",
        "rtx-4090",
        "consumer",
    )
    # Throughput: 4.5M tokens (1.5M output) over 3 served hours; 2.7M (0.9M output) for the RTX fleet.
    # Unit figures keep 4 significant digits: 416.666... → 416.7, 138.888... → 138.9.
    assert (enterprise["serving_h"], enterprise["tokens_per_s"], enterprise["generation_tokens_per_s"]) == (
        3.0,
        416.7,
        138.9,
    )
    assert (consumer["tokens_per_s"], consumer["generation_tokens_per_s"]) == (250.0, 83.33)
    # TTFT from merged histograms: H100 [120, 150, 24, 6, 0, 0] on (25, 50, 100, 250, 500 ms):
    # P50 rank 150 is 30/150 into (25, 50] → 30 ms; P90 rank 270 is 150/150 into (25, 50] → 50 ms;
    # P99 rank 297 is 3/6 into (100, 250] → 175 ms.
    assert enterprise["ttft_basis"] == "measured"
    assert (enterprise["ttft_requests"], enterprise["ttft_p50_ms"], enterprise["ttft_p99_ms"]) == (300, 30.0, 175.0)
    assert [enterprise[f"ttft_p50_bucket_{end}_ms"] for end in ("low", "high")] == [25.0, 50.0]
    assert [enterprise["ttft_p90_ms"], enterprise["ttft_p90_bucket_low_ms"], enterprise["ttft_p90_bucket_high_ms"]] == [
        50.0, 25.0, 50.0,
    ]  # fmt: skip
    assert [enterprise[f"ttft_p99_bucket_{end}_ms"] for end in ("low", "high")] == [100.0, 250.0]
    # RTX: two layouts coarsened onto (100, 250, 500, 1000 ms): [30, 200, 55, 15, 0]:
    # P50 rank 150 is 120/200 into (100, 250] → 190 ms; P90 rank 270 is 40/55 into (250, 500] → 431.818 ms;
    # P99 rank 297 is 12/15 into (500, 1000] → 900 ms.
    assert (consumer["ttft_requests"], consumer["ttft_p50_ms"], consumer["ttft_p99_ms"]) == (300, 190.0, 900.0)
    assert (consumer["ttft_p90_ms"], consumer["ttft_p90_bucket_low_ms"], consumer["ttft_p90_bucket_high_ms"]) == (
        431.818, 250.0, 500.0,
    )  # fmt: skip
    assert (consumer["ttft_p99_bucket_low_ms"], consumer["ttft_p99_bucket_high_ms"]) == (500.0, 1000.0)
    # Cost: 16.62 / 1.5M output tokens = 11.08 per 1M output tokens; / 4.5M tokens = 3.69333 → "3.693".
    assert (enterprise["cost"], enterprise["cost_per_1m_output_tokens"], enterprise["cost_per_1m_tokens"]) == (
        "16.62", "11.08", "3.693",
    )  # fmt: skip
    # 4.392 / 0.9M = 4.88 → "4.880" (4 significant digits); / 2.7M = 1.62667 → "1.627".
    assert (consumer["cost"], consumer["cost_per_1m_output_tokens"], consumer["cost_per_1m_tokens"]) == (
        "4.39", "4.880", "1.627",
    )  # fmt: skip
    # IT energy 16.2 MJ / 1.5M output tokens = 10.8 J; / 4.5M = 3.6 J. RTX 12.96 MJ: 14.4 and 4.8 J.
    assert (enterprise["it_j_per_output_token"], enterprise["it_j_per_token"]) == (10.8, 3.6)
    assert (consumer["it_j_per_output_token"], consumer["it_j_per_token"]) == (14.4, 4.8)
    h100_g_per_1m = (1080 + 3 * H100_EMBODIED_G_PER_H) / Decimal("4.5")
    rtx_g_per_1m = (792 + 3 * RTX_EMBODIED_G_PER_H) / Decimal("2.7")
    assert enterprise["gco2e_per_1m_tokens"] == float(significant(h100_g_per_1m))
    assert consumer["gco2e_per_1m_tokens"] == float(significant(rtx_g_per_1m))
    assert enterprise["gco2e_per_1m_output_tokens"] == float(significant(h100_g_per_1m * 3))  # a third are output
    assert consumer["gco2e_per_1m_output_tokens"] == float(significant(rtx_g_per_1m * 3))
    assert (enterprise["mean_util_pct"], consumer["mean_util_pct"]) == (41.0, 67.75)  # (80 + 2) / 2; (3 x 90 + 1) / 4
    assert (enterprise["idle_share"], consumer["idle_share"]) == (0.5, 0.25)

    ratios = {key: value for key, value in consumer.items() if key.endswith("_vs_baseline")}
    cost_ratio = places((Decimal("4.392") / Decimal("16.62")) * Decimal("4.5") / Decimal("2.7"), 4)
    assert ratios == {
        "tokens_per_s_vs_baseline": 0.6,
        "generation_tokens_per_s_vs_baseline": 0.6,
        "ttft_p50_vs_baseline": 6.3333,  # 190 / 30
        "ttft_p90_vs_baseline": 8.6364,  # 431.818 / 50
        "ttft_p99_vs_baseline": 5.1429,  # 900 / 175
        "cost_per_1m_output_tokens_vs_baseline": cost_ratio,  # both fleets serve prompt : output = 2 : 1
        "cost_per_1m_tokens_vs_baseline": cost_ratio,
        "it_j_per_output_token_vs_baseline": 1.3333,
        "it_j_per_token_vs_baseline": 1.3333,
        "gco2e_per_1m_output_tokens_vs_baseline": places(rtx_g_per_1m / h100_g_per_1m, 4),
        "gco2e_per_1m_tokens_vs_baseline": places(rtx_g_per_1m / h100_g_per_1m, 4),
        # Location-based: 792 g / 0.9M output tokens = 880 against 1080 g / 1.5M = 720.
        "location_gco2e_per_1m_output_tokens_vs_baseline": 1.2222,
        # Embodied (central): 3 h x RTX's per hour / 0.9M against 3 h x H100's / 1.5M.
        "embodied_gco2e_per_1m_output_tokens_vs_baseline": places(
            (RTX_EMBODIED_G_PER_H / Decimal("0.9")) / (H100_EMBODIED_G_PER_H / Decimal("1.5")), 4
        ),
        "ttft_mean_vs_baseline": None,  # these hours carry no TTFT sum: no mean
        "mean_util_vs_baseline": 1.6524,  # 67.75 / 41
        "idle_share_vs_baseline": 0.5,
    }
    assert {key: value for key, value in enterprise.items() if key.endswith("_vs_baseline")} == dict.fromkeys(
        ratios, 1.0
    ) | {"ttft_mean_vs_baseline": None}


def test_without_baseline_the_ratios_are_null(fleets, client_a):
    body = compare(client_a)

    assert body["baseline_fleet_id"] is None
    assert {row[key] for row in body["results"] for key in row if key.endswith("_vs_baseline")} == {None}


def test_by_gpu_model_splits_a_mixed_fleet_and_compares_to_the_whole_baseline(fleets, client_a):
    # An RTX 4090 node joins the enterprise fleet: the fleet row says "mixed".
    node = NodeFactory(fleet=fleets.enterprise, site=fleets.rtx.site, hostname="rtx-b", commissioned_at=LONG_AGO)
    for index in range(4):
        GpuFactory(node=node, index=index, name="NVIDIA GeForce RTX 4090")
    NodePrice.objects.create(
        fleet=fleets.enterprise, node=node, kind="owned", capex=Decimal("35040"), lifetime_years=Decimal(4),
        valid_from=LONG_AGO, depreciation_method="hour",  # 1.00 an hour
    )  # fmt: skip
    for hour in HOURS:
        hour_usage(
            node, hour, energies_j=(1_080_000.0,) * 4, utils=(50.0,) * 4, tokens=(300_000, 0), serving_gpus=4
        )  # fmt: skip
    ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)

    per_fleet = compare(client_a, fleet=fleets.enterprise.pk)["results"]
    per_model = compare(client_a, by="gpu_model", baseline=fleets.enterprise.pk)["results"]

    assert [(r["gpu_model"], r["gpu_class"], r["tokens"]) for r in per_fleet] == [("mixed", None, 5_400_000)]
    assert [(r["fleet_name"], r["gpu_model"], r["tokens"]) for r in per_model] == [
        ("consumer", "rtx-4090", 2_700_000),
        ("enterprise", "h100-sxm", 4_500_000),
        ("enterprise", "rtx-4090", 900_000),
    ]
    h100_row = per_model[1]
    # The baseline is the enterprise fleet as a whole: 5.4M tokens over 6 serving hours = 250 tokens/s.
    assert h100_row["tokens_per_s_vs_baseline"] == places(Decimal("416.6666666667") / 250, 4)
    assert h100_row["ttft_p50_ms"] == 30.0  # the new node has no histogram: only the H100's counts


def test_csv_has_one_line_per_fleet(fleets, client_a):
    response = client_a.get(URL, {"period": "2026-Q4", "baseline": fleets.enterprise.pk}, HTTP_ACCEPT="text/csv")

    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert response.status_code == 200
    assert [
        (row["fleet_name"], row["currency"], row["cost_per_1m_output_tokens"], row["cost_per_1m_tokens"])
        for row in table
    ] == [("consumer", "USD", "4.880", "1.627"), ("enterprise", "USD", "11.08", "3.693")]
    assert {"ttft_p99_ms", "gco2e_per_1m_tokens", "tokens_per_s_vs_baseline"} <= set(table[0])


def test_cost_is_not_compared_across_currencies(fleets, client_a, org_a):
    fleets.rtx.site.currency = "EUR"
    fleets.rtx.site.save()
    ledger_node_hours_compute(node_id=fleets.rtx.pk, hour_starts=HOURS)

    consumer = compare(client_a, baseline=fleets.enterprise.pk)["results"][0]

    assert (consumer["currency"], consumer["cost_per_1m_tokens"]) == ("EUR", "1.627")
    assert consumer["cost_per_1m_tokens_vs_baseline"] is None
    assert consumer["tokens_per_s_vs_baseline"] == 0.6


def test_a_baseline_without_data_gives_null_ratios(fleets, client_a, org_a):
    empty = Fleet.objects.create(organization=org_a, name="empty")

    rows = compare(client_a, baseline=empty.pk)["results"]

    assert len(rows) == 2
    assert {row["tokens_per_s_vs_baseline"] for row in rows} == {None}


def test_selector_returns_unrounded_figures(fleets, org_a, django_assert_max_num_queries):
    # 9: with the trace's (each row's intensity sources and embodied factors' sources) query and profiles
    with django_assert_max_num_queries(9):
        rows = fleet_comparison(
            organization_ids=[org_a.pk], start=START, end=END, baseline_fleet_id=fleets.enterprise.pk
        )

    consumer = rows[0]
    assert consumer.stats.cost_per_1m_tokens == Decimal("4.392") / Decimal("2.7")
    assert consumer.stats.ttft_p50_s == pytest.approx(0.19)
    assert consumer.vs_baseline["tokens_per_s"] == pytest.approx(0.6)
