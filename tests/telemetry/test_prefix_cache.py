"""Prefix-cache hits through the real path: the optional wire column, stored, rolled up, reported.

Three scrapes 5 s apart (t = 0, 5, 10): prompt tokens 1000 x t, of which 600 x t from the prefix
cache. The hour gets 10,000 prompt tokens, 6,000 of them cached: a hit share of 0.6.
"""

from __future__ import annotations

import pytest

from telemetry.models import EndpointHourUsage
from tests.helpers.batches import make_batch
from tests.helpers.ingest import post
from tests.helpers.rollup import H, run

pytestmark = pytest.mark.django_db
STATUS = 422  # out of bounds: a counter is a non-negative integer or null


def with_cached(batch, per_s):
    serving = batch["serving_samples"]
    serving["cached_prompt_tokens"] = [None if per_s is None else per_s * int(ts - H - 600) for ts in serving["ts"]]
    return batch


def test_cached_prompt_tokens_are_stored_and_rolled_up(client, node, token):
    post(client, with_cached(make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True), 600), token)

    run()

    row = EndpointHourUsage.objects.get()
    assert (row.prompt_tokens, row.cached_prompt_tokens) == (10_000, 6_000)


def test_a_batch_without_the_column_stores_unknown_not_zero(client, node, token):
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True), token)

    run()

    assert EndpointHourUsage.objects.get().cached_prompt_tokens is None


def test_a_server_that_does_not_count_hits_sends_null_and_the_hour_says_unknown(client, node, token):
    post(client, with_cached(make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True), None), token)

    run()

    row = EndpointHourUsage.objects.get()
    assert (row.prompt_tokens, row.cached_prompt_tokens) == (10_000, None)


def test_a_negative_cached_count_is_refused(client, node, token):
    batch = with_cached(make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True), 600)
    batch["serving_samples"]["cached_prompt_tokens"][1] = -1

    response = post(client, batch, token)

    assert response.status_code == STATUS
    assert "cached_prompt_tokens" in response.content.decode()
