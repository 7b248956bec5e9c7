"""The LLM model as a dimension, and the inter-token latency histogram, from a scrape to the hourly usage.

One vLLM process serves two models (``tests.telemetry.collector.expositions.vllm_two_models``), scraped at
H+600 and, 10 s later, with every counter 1.5 times as high. The collector's own scraper and batch
builder make the batch; the server stores and rolls it up. Each model's hour gets half of its
counters at the first scrape:

=========  ============  ==========  ========  ===========  =================  =============
model      prompt tok.   output tok.  requests  TTFT sum s   ITL observations   ITL sum s
=========  ============  ==========  ========  ===========  =================  =============
8B         500,000       250,000      400       20 (0.05/req) 249,600           2,496
14B        150,000       50,000       100       15 (0.15/req) 49,900            1,497
=========  ============  ==========  ========  ===========  =================  =============
"""

from __future__ import annotations

import pytest

from telemetry import energy
from telemetry.histogram import histogram_from_cumulative
from telemetry.models import EndpointEpoch, EndpointHourUsage, ServingEndpoint, ServingSample
from tests.helpers.batches import make_batch
from tests.helpers.expositions import MODEL, MODEL_14B, VLLM_ITL_BUCKETS_S, vllm_two_models
from tests.helpers.ingest import post
from tests.helpers.per_model import METRICS_URL, batch_of, scraped
from tests.helpers.rollup import H, run

pytestmark = pytest.mark.django_db


def test_two_models_served_at_one_url_are_two_endpoints_with_their_own_hour(client, node, token):
    response = post(client, batch_of(scraped([vllm_two_models(), vllm_two_models(scale=1.5)])), token)
    assert response.status_code == 200, response.content
    run()

    endpoints = ServingEndpoint.objects.filter(node=node, url=METRICS_URL)
    assert sorted(endpoints.values_list("model_name", flat=True)) == [MODEL_14B, MODEL]
    small = EndpointHourUsage.objects.get(endpoint__model_name=MODEL)
    large = EndpointHourUsage.objects.get(endpoint__model_name=MODEL_14B)
    assert (small.prompt_tokens, small.generation_tokens, small.requests) == (500_000, 250_000, 400)
    assert (large.prompt_tokens, large.generation_tokens, large.requests) == (150_000, 50_000, 100)
    # Mean TTFT from the hour's sum over its count.
    assert small.ttft_bucket_counts and small.ttft_sum_s and large.ttft_bucket_counts and large.ttft_sum_s
    assert sum(small.ttft_bucket_counts) == 400 and small.ttft_sum_s == pytest.approx(20.0)
    assert small.ttft_sum_s / sum(small.ttft_bucket_counts) == pytest.approx(0.05)
    assert large.ttft_sum_s / sum(large.ttft_bucket_counts) == pytest.approx(0.15)


def test_the_inter_token_latency_histogram_is_stored_and_rolled_up(client, node, token):
    post(client, batch_of(scraped([vllm_two_models(), vllm_two_models(scale=1.5)])), token)
    run()

    epoch = EndpointEpoch.objects.get(endpoint__model_name=MODEL)
    assert epoch.itl_bucket_bounds_s == list(VLLM_ITL_BUCKETS_S)
    first = ServingSample.objects.filter(endpoint=epoch.endpoint).order_by("ts")[0]
    assert first.itl_bucket_counts is not None
    assert first.itl_bucket_counts[-1] == 499_200 and first.itl_sum_s == 4992.0
    hour = EndpointHourUsage.objects.get(endpoint__model_name=MODEL)
    assert hour.itl_bucket_bounds_s == list(VLLM_ITL_BUCKETS_S) and hour.itl_bucket_counts is not None
    # Per bucket, not cumulative: the first bucket holds floor(748,800 / 11.4) - floor(499,200 / 11.4)
    # (the exposition's cumulative share below it), the whole hour 249,600 observations.
    assert hour.itl_bucket_counts[0] == 65_684 - 43_789
    assert sum(hour.itl_bucket_counts) == 249_600 and hour.itl_sum_s == pytest.approx(2496.0)
    large = EndpointHourUsage.objects.get(endpoint__model_name=MODEL_14B)
    assert large.itl_bucket_counts is not None
    assert sum(large.itl_bucket_counts) == 49_900 and large.itl_sum_s == pytest.approx(1497.0)


def test_a_batch_from_a_collector_without_itl_is_accepted_and_says_unknown(client, node, token):
    # make_batch writes the older wire format: no itl_bucket_bounds_s, no ITL columns.
    batch = make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True)
    assert "itl_bucket_counts" not in batch["serving_samples"] and "itl_bucket_bounds_s" not in batch["endpoints"][0]

    response = post(client, batch, token)
    run()

    assert response.status_code == 200, response.content
    row = EndpointHourUsage.objects.get()
    assert (row.generation_tokens, row.itl_bucket_bounds_s, row.itl_bucket_counts, row.itl_sum_s) == (
        50_000,
        [],
        None,
        None,
    )
    # The TTFT sum still rolls up: 0.02 s a second of the batch, 10 s.
    assert row.ttft_sum_s == pytest.approx(0.2)


def test_itl_counts_that_do_not_match_the_bounds_are_refused(client, node, token):
    batch = batch_of(scraped([vllm_two_models(), vllm_two_models(scale=1.5)]))
    batch["serving_samples"]["itl_bucket_counts"][0] = [1, 2, 3]

    response = post(client, batch, token)

    assert response.status_code == 400
    assert "itl_bucket_counts[0]" in response.content.decode()


def test_a_resent_batch_keeps_each_models_itl_once(client, node, token):
    """On PostgreSQL the first batch goes in by COPY and the re-sent one by the INSERT that skips stored rows;
    on SQLite both by INSERT. Either way the ITL columns are stored once and the hour is unchanged."""
    batch = batch_of(scraped([vllm_two_models(), vllm_two_models(scale=1.5)]))
    assert post(client, batch, token).json()["stored"]["serving_samples"] == 4
    batch["serving_samples"]["itl_sum_s"] = [1.0, 2.0, 3.0, 4.0]  # a re-send never overwrites what is stored

    again = post(client, batch, token).json()
    run()

    assert (again["stored"]["serving_samples"], again["duplicates"]["serving_samples"]) == (0, 4)
    sums = list(ServingSample.objects.order_by("itl_sum_s").values_list("itl_sum_s", flat=True))
    assert sums == [2994.0, 4491.0, 4992.0, 7488.0]
    assert EndpointHourUsage.objects.get(endpoint__model_name=MODEL).itl_sum_s == pytest.approx(2496.0)


def test_histogram_sums_follow_the_counters_reset_and_bridging_rules():
    """ITL sums 10, 15, then after a gap of 300 s (the counters carried on: bridged) 18, then a restart at 2:
    the hour's increase is 5 + 3 + 2 = 10 s, over 4 + 3 + 2 = 9 observations (the restarted reading itself)."""
    bounds = (0.01, 0.1)

    def point(ts_s: float, epoch: str, itl_sum_s: float, cumulative: tuple[int, int, int]) -> energy.ServingPoint:
        itl = histogram_from_cumulative(bounds, cumulative)
        return energy.ServingPoint(
            ts_s, epoch, generation_tokens=cumulative[-1], itl_since_start=itl, itl_sum_s=itl_sum_s
        )

    points = [
        point(H + 600, "a", 10.0, (1, 4, 10)),
        point(H + 610, "a", 15.0, (2, 6, 14)),
        point(H + 910, "a", 18.0, (2, 7, 17)),
        point(H + 920, "b", 2.0, (0, 1, 2)),
    ]

    (hour,) = energy.endpoint_usage_by_hour(points, hour_starts_s=[H], max_gap_s=60.0)

    assert hour.itl_sum_s == pytest.approx(10.0) and hour.itl is not None
    assert hour.itl.counts == (1 + 0 + 0, 1 + 1 + 1, 2 + 2 + 1)
    assert (hour.bridged_s, hour.reset_count, hour.generation_tokens) == (300.0, 1, 4 + 3 + 2)
