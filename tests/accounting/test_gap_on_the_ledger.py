"""A 90 s pause in a node's telemetry, through the real path to the ledger and the node page: the counters
carry the pause's energy and tokens into both hours, and the page tells measured, bridged and missing apart.

One GPU whose energy counter rises 300 J/s and whose server counts 1,250 output and 500 input tokens a
second: 10 s of samples to H+3570, a pause of 90 s, then 10 s from H+3660.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_pending_run
from fleets.models import Role
from fleets.services import credential_issue
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import make_batch
from tests.helpers.factories import MembershipFactory, NodeFactory, UserFactory
from tests.helpers.ingest import post

HOUR_S = 3600
H = (int(time.time()) // HOUR_S - 3) * HOUR_S
T0 = H + 3560.0


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


def serving_from(batch: dict) -> dict:
    """The batch's serving counters as one server life since T0."""
    serving = batch["serving_samples"]
    for i, ts in enumerate(serving["ts"]):
        serving["generation_tokens"][i] = round(1250 * (ts - T0))
        serving["prompt_tokens"][i] = round(500 * (ts - T0))
        serving["requests"][i] = round(ts - T0)
        serving["ttft_bucket_counts"][i] = [round(ts - T0)] * 17
    return batch


@pytest.fixture
def paused(client, db):
    node = NodeFactory(commissioned_at=at(H - 86400))
    token = credential_issue(node=node)
    for start_s in (T0, H + 3660.0):
        post(client, serving_from(make_batch(gpus=1, seconds=11, start_s=start_s, endpoint=True)), token)
        rollup_pending_run(now=timezone.now())
    ledger_pending_run(now=timezone.now())
    return node


def test_the_ledger_counts_the_pauses_energy_and_tokens_in_both_hours(paused):
    before, after = (NodeHourLedger.objects.get(node=paused, hour_start=at(h)) for h in (H, H + HOUR_S))
    # H: 10 s measured (3,000 J) + 30 s bridged (9,000 J); H+1: 60 s bridged (18,000 J) + 10 s measured
    # (stored to 12 decimal places)
    assert (before.gpu_kwh, after.gpu_kwh) == (Decimal("0.003333333333"), Decimal("0.005833333333"))
    assert (before.observed_s, before.bridged_s, after.observed_s, after.bridged_s) == (10, 30, 10, 60)
    # the pause's 112,500 output tokens: 37,500 in H (30 of its 90 s), 75,000 in H+1
    assert (before.generation_tokens, after.generation_tokens) == (12_500 + 37_500, 75_000 + 12_500)


def test_the_node_page_tells_measured_bridged_and_missing_apart(client, paused):
    user = UserFactory()
    MembershipFactory(user=user, organization=paused.fleet.organization, role=Role.ENGINEER)
    client.force_login(user)
    query = {"start": at(H).date().isoformat(), "end": at(H + HOUR_S).date().isoformat(), "granularity": "hour"}
    html = client.get(f"/nodes/{paused.pk}/", query).content.decode()

    table = html[html.index('<table id="data-quality">') :]
    table = table[: table.index("</table>")]
    rows = {row.split("</td>")[0][-16:]: row for row in table.split("<tr><td>")[1:]}
    # H: 10 s measured, 30 s bridged of a 90 s gap, 3,560 s missing; H+1: 10 s, 60 s (1.0 min), 3,530 s
    h, h1 = rows[at(H).strftime("%Y-%m-%d %H:%M")], rows[at(H + HOUR_S).strftime("%Y-%m-%d %H:%M")]
    assert "<td>10 s</td>" in h and "bridged</span> 30 s" in h and "<td>1.5 min</td>" in h and "<td>59.3 min</td>" in h
    assert "bridged</span> 1.0 min" in h1 and "<td>58.8 min</td>" in h1
