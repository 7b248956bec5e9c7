"""TTFT quantiles with their bucket's bounds, and TGI's lower bound never merged with measured TTFT.

conftest.py's enterprise node serves vLLM (TTFT measured). Here it also runs a TGI endpoint,
and a third fleet runs TGI only. TGI's histogram is its queue duration (before the prefill):
per hour [50, 40, 10, 0] on (10, 50, 100 ms), so [150, 120, 30, 0] over the three hours:
P50 rank 150 fills (0, 10] → 10 ms; P90 rank 270 fills (10, 50] → 50 ms; P99 rank 297 is
27/30 into (50, 100] → 95 ms. Each is a lower bound of TTFT.
"""

from __future__ import annotations

import pytest

from accounting.site_hours import site_hours_rebuild
from fleets.models import Fleet
from telemetry.models import EndpointHourUsage, ServingEndpoint
from tests.helpers.factories import GpuFactory, NodeFactory
from tests.helpers.reports import END, HOURS, LONG_AGO, START

pytestmark = pytest.mark.django_db
TGI_BOUNDS = [0.01, 0.05, 0.1]
TGI_PER_HOUR = [50, 40, 10, 0]


def tgi_endpoint(node):
    endpoint = ServingEndpoint.objects.create(node=node, url="http://127.0.0.1:3000/metrics", kind="tgi")
    endpoint.gpus.set(node.gpus.all())
    for hour in HOURS:
        EndpointHourUsage.objects.create(
            endpoint=endpoint, hour_start=hour, prompt_tokens=1000, generation_tokens=500, requests=100,
            observed_s=3600.0, ttft_bucket_bounds_s=TGI_BOUNDS, ttft_bucket_counts=TGI_PER_HOUR, reset_count=0,
            computed_at=hour,
        )  # fmt: skip
    site_hours_rebuild()  # endpoint-hours written by hand after the ledger: its serving days summed again


@pytest.fixture
def with_tgi(fleets, org_a):
    tgi_endpoint(fleets.h100)  # beside its vLLM endpoint
    fleet = Fleet.objects.create(organization=org_a, name="tgi-only")
    node = NodeFactory(fleet=fleet, site=fleets.h100.site, hostname="tgi-a", commissioned_at=LONG_AGO)
    GpuFactory(node=node, index=0, name="NVIDIA H100 80GB HBM3")
    tgi_endpoint(node)
    return fleets


def rows(client):
    response = client.get("/api/v1/reports/comparison/", {"start": START.isoformat(), "end": END.isoformat()})
    assert response.status_code == 200, response.content
    return {row["fleet_name"]: row for row in response.json()["results"]}


def test_tgi_beside_vllm_is_left_out_of_measured_ttft_and_counted(with_tgi, client_a):
    enterprise = rows(client_a)["enterprise"]

    # The vLLM histogram alone, as without TGI (test_comparison): P50 30 ms in (25, 50], P99 175 ms in (100, 250].
    assert enterprise["ttft_basis"] == "measured"
    assert (enterprise["ttft_requests"], enterprise["ttft_lower_bound_requests_left_out"]) == (300, 300)
    assert (enterprise["ttft_p50_ms"], enterprise["ttft_p50_bucket_low_ms"], enterprise["ttft_p50_bucket_high_ms"]) == (
        30.0, 25.0, 50.0,
    )  # fmt: skip
    assert (enterprise["ttft_p99_ms"], enterprise["ttft_p99_bucket_low_ms"], enterprise["ttft_p99_bucket_high_ms"]) == (
        175.0, 100.0, 250.0,
    )  # fmt: skip


def test_a_tgi_only_fleet_reports_a_labelled_lower_bound(with_tgi, client_a):
    tgi = rows(client_a)["tgi-only"]

    assert tgi["ttft_basis"] == "lower_bound"
    assert (tgi["ttft_requests"], tgi["ttft_lower_bound_requests_left_out"]) == (300, 0)
    assert [tgi[f"ttft_{q}_ms"] for q in ("p50", "p90", "p99")] == [10.0, 50.0, 95.0]
    assert [(tgi[f"ttft_{q}_bucket_low_ms"], tgi[f"ttft_{q}_bucket_high_ms"]) for q in ("p50", "p90", "p99")] == [
        (0.0, 10.0), (10.0, 50.0), (50.0, 100.0),
    ]  # fmt: skip


def test_the_comparison_page_labels_the_lower_bound_and_shows_the_buckets(with_tgi, client_a):
    page = client_a.get("/compare/?start=2026-10-31&end=2026-11-01&granularity=hour").content.decode()

    tgi_row = page[page.index('data-fleet="tgi-only"') :].split("</tr>")[0]
    enterprise_row = page[page.index('data-fleet="enterprise"') :].split("</tr>")[0]
    assert "≥ 95" in tgi_row and "lower bound" in tgi_row and "(50\u2013100)" in tgi_row
    assert "lower bound</span>" not in enterprise_row and "(100\u2013250)" in enterprise_row
    assert "TTFT leaves out 300 TGI requests" in enterprise_row


def test_a_quantile_in_the_inf_bucket_has_no_upper_bound():
    from telemetry.histogram import Histogram, histogram_quantile, histogram_quantile_bucket

    histogram = Histogram((0.1, 0.5), (1, 1, 8))
    assert histogram_quantile(0.99, histogram) == 0.5  # Prometheus: the highest finite bound
    assert histogram_quantile_bucket(0.99, histogram) == (0.5, None)
    assert histogram_quantile_bucket(0.4, histogram) == (0.5, None)
    assert histogram_quantile_bucket(0.1, histogram) == (0.0, 0.1)


def test_prefix_cache_hits_are_reported_beside_the_tokens_that_include_them(fleets, client_a):
    # The H100 endpoint served 1M prompt tokens an hour, 250,000 of them from the prefix cache
    # in H1 and H2; H3's server did not say (null): the share is over the hours that did.
    endpoint_hours = EndpointHourUsage.objects.filter(endpoint__node=fleets.h100).order_by("hour_start")
    for hour, cached in zip(endpoint_hours, (250_000, 250_000, None), strict=True):
        hour.cached_prompt_tokens = cached
        hour.save()

    by_fleet = rows(client_a)

    enterprise = by_fleet["enterprise"]
    assert (enterprise["prompt_tokens"], enterprise["cached_prompt_tokens"]) == (3_000_000, 500_000)
    assert enterprise["prefix_cache_hit_share"] == 0.25  # 500,000 / 2,000,000
    assert (by_fleet["consumer"]["cached_prompt_tokens"], by_fleet["consumer"]["prefix_cache_hit_share"]) == (
        None, None,
    )  # fmt: skip
