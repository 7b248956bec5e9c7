"""From a scrape to the comparison per LLM model: one vLLM process serving two models on one node.

The scrape, ingest and rollup are ``tests.telemetry.test_per_model``'s (its table gives each
model's hour): 8B makes 250,000 output tokens over 400 requests, TTFT sum 20 s, inter-token
latency 2,496 s over 249,600 observations; 14B 50,000 over 100 requests, 15 s, 1,497 s over 49,900.
The node-hour is theirs in the ratio of their output tokens, 5 : 1.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounting.node_hour_lines import ledger_pending_run
from fleets.services import credential_issue
from reports.selectors import fleet_comparison
from tests.helpers.expositions import MODEL, MODEL_14B, vllm_two_models
from tests.helpers.factories import NodeFactory
from tests.helpers.ingest import post
from tests.helpers.per_model import batch_of, scraped
from tests.helpers.rollup import H, at, run

pytestmark = pytest.mark.django_db


def test_a_scraped_hour_of_two_models_compares_per_model(client):
    node = NodeFactory(hostname="gpu-01")
    response = post(
        client, batch_of(scraped([vllm_two_models(), vllm_two_models(scale=1.5)])), credential_issue(node=node)
    )
    assert response.status_code == 200, response.content
    run()
    ledger_pending_run(now=timezone.now())  # the ledger takes the rollup's changes: the hour is final

    rows = fleet_comparison(
        organization_ids=[node.fleet.organization_id], start=at(H), end=at(H) + timedelta(hours=1), by_llm_model=True
    )

    small, large = sorted((row.stats for row in rows), key=lambda s: s.serving.generation_tokens, reverse=True)
    assert (small.llm_model, large.llm_model) == (MODEL, MODEL_14B)
    assert (small.serving.requests, large.serving.requests) == (400, 100)
    assert (small.ttft_mean_s, large.ttft_mean_s) == (pytest.approx(0.05), pytest.approx(0.15))
    assert (small.serving.itl_sum.mean_s, large.serving.itl_sum.mean_s) == (pytest.approx(0.01), pytest.approx(0.03))
    held = small.sums.totals.held_h + large.sums.totals.held_h
    assert held > 0 and round(small.sums.totals.held_h / held, 9) == round(Decimal(5) / 6, 9)
