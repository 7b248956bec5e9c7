"""Telemetry before a node's commissioning (through the real path): unpriced and counted, never charged 0.00."""

from __future__ import annotations

import re
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
from tests.helpers.factories import MembershipFactory, NodeFactory, NodePriceFactory, SiteTariffFactory, UserFactory
from tests.helpers.ingest import post

HOUR_S = 3600
H = (int(time.time()) // HOUR_S - 3) * HOUR_S  # the node is commissioned at H
H0 = H - HOUR_S


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


@pytest.fixture
def node(db):
    node = NodeFactory(commissioned_at=at(H))
    NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=at(H - 86400))
    SiteTariffFactory(site=node.site, flat_price_per_kwh=Decimal("0.30"), valid_from=at(H - 86400))
    return node


@pytest.fixture
def member(node):
    user = UserFactory()
    MembershipFactory(user=user, organization=node.fleet.organization, role=Role.FINANCE)
    return user


def test_telemetry_before_commissioning_is_unpriced_and_counted_on_every_total(client, node, member):
    token = credential_issue(node=node)
    # given one GPU at 300 W for 10 s before the node's commissioning, and 10 s after it
    post(client, make_batch(gpus=1, seconds=11, start_s=H0 + 600), token)
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600), token)
    rollup_pending_run(now=timezone.now())
    ledger_pending_run(now=timezone.now())
    # then the hour before is unpriced (no asset in force), its energy kept: 10 s measured + 2,990 s the
    # counter bridged up to H+10:00, at 300 W = 900,000 J = 0.25 kWh; the hour after is priced
    before, after = NodeHourLedger.objects.get(hour_start=at(H0)), NodeHourLedger.objects.get(hour_start=at(H))
    assert (before.held_h, before.pricing_price_id, before.it_kwh) == (0, "unpriced", Decimal("0.25"))
    assert after.pricing_price_id != "unpriced" and after.hardware_cost == Decimal("2.50")
    # and every total counts it: the API, the finance, sustainability and node pages
    client.force_login(member)
    period = {"start": at(H0).isoformat(), "end": at(H + HOUR_S).isoformat()}
    usage = client.get("/api/v1/reports/usage/", period | {"granularity": "total"}).json()["results"][0]
    assert (usage["unpriced_hours"], usage["hardware_cost"]) == (1, "2.50")
    report = client.get("/api/v1/reports/sustainability/", period).json()
    assert report["unpriced_hours"] == 1
    query = f"?start={at(H0).date().isoformat()}&end={at(H + HOUR_S).date().isoformat()}"
    for page in ("/finance/", "/sustainability/", f"/nodes/{node.pk}/"):
        html = client.get(page + query).content.decode()
        assert re.search(r"no price, asset or tariff in force[^<]*(</div>|</td>)\s*<td>(<span[^>]*>)?1<", html) or (
            re.search(r'Unpriced hours</div><div class="value">1<', html)
        ), page
