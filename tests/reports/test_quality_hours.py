"""Per-hour data quality in the sustainability report: measured, bridged and missing node-hours, by hand.

Through the real path (ingest, rollup, ledger): one node with one GPU sampled each second.
"""

from __future__ import annotations

import csv
import io
import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from accounting.node_hour_lines import ledger_pending_run
from fleets.models import Role
from fleets.services import credential_issue
from reports.selectors import sustainability_report
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import gpu_ref, make_batch
from tests.helpers.factories import MembershipFactory, NodeFactory, NodePriceFactory, SiteTariffFactory, UserFactory
from tests.helpers.ingest import post

HOUR_S = 3600
B = (int(time.time()) // HOUR_S - 3) * HOUR_S  # the second hour; the node's price starts here
A = B - HOUR_S  # the first hour: no price in force yet
FIGURES = ("held_h", "measured_h", "bridged_h", "missing_h")


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


@pytest.fixture
def node(db):
    node = NodeFactory(commissioned_at=at(A - 86400))
    NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=at(B))
    SiteTariffFactory(site=node.site, flat_price_per_kwh=Decimal("0.30"), valid_from=at(A - 86400))
    return node


@pytest.fixture
def member(node):
    user = UserFactory()
    MembershipFactory(user=user, organization=node.fleet.organization, role=Role.SUSTAINABILITY)
    return user


@pytest.fixture
def ledger(client, node):
    token = credential_issue(node=node)
    # hour A: 18 s measured (A+10:00 to A+10:18), a 90 s pause the energy counter carries on across,
    # then 18 s measured again (A+11:48 to A+12:06)
    post(client, make_batch(gpus=1, seconds=19, start_s=A + 600), token)
    post(client, make_batch(gpus=1, seconds=19, start_s=A + 708), token)
    # hour B: the host rebooted (a new counter epoch): nothing proves the gap from A+12:06 on;
    # then 72 s measured (B+10:00 to B+11:12)
    rebooted = make_batch(gpus=1, seconds=73, start_s=B + 600)
    post(client, rebooted | {"gpus": [gpu_ref(0, epoch="boot-2/driver-1")]}, token)
    rollup_pending_run(now=timezone.now())
    ledger_pending_run(now=timezone.now())


def test_each_hour_tells_measured_bridged_and_missing_apart_in_json_and_csv(client, node, member, ledger):
    client.force_login(member)
    period = {"start": at(A).isoformat(), "end": at(B + HOUR_S).isoformat()}

    body = client.get("/api/v1/reports/sustainability/", period).json()

    # A: 36 s measured = 0.01 h, 90 s bridged = 0.025 h, 3,600 - 126 = 3,474 s missing = 0.965 h; unpriced
    # B: 72 s measured = 0.02 h, nothing bridged, 3,528 s missing = 0.98 h; priced
    assert body["quality_hours"] == [
        {
            "hour_start": at(A).isoformat().replace("+00:00", "Z"),
            "held_h": 1.0,
            "measured_h": 0.01,
            "bridged_h": 0.025,
            "missing_h": 0.965,
            "unpriced_hours": 1,
        },
        {
            "hour_start": at(B).isoformat().replace("+00:00", "Z"),
            "held_h": 1.0,
            "measured_h": 0.02,
            "bridged_h": 0.0,
            "missing_h": 0.98,
            "unpriced_hours": 0,
        },
    ]
    # and the totals are the sums of the hours
    assert (body["held_h"], body["observed_h"], body["bridged_h"], body["missing_h"]) == (2.0, 0.03, 0.025, 1.945)
    assert body["unpriced_hours"] == 1

    response = client.get("/api/v1/reports/sustainability/", period | {"format": "csv"})
    text = b"".join(response.streaming_content).decode()
    lines = {row["metric"]: row["value"] for row in csv.DictReader(io.StringIO(text))}
    hour_a, hour_b = at(A).isoformat().replace("+00:00", "Z"), at(B).isoformat().replace("+00:00", "Z")
    assert [lines[f"quality:{hour_a}:{name}"] for name in (*FIGURES, "unpriced_hours")] == [
        "1.0",
        "0.01",
        "0.025",
        "0.965",
        "1",
    ]
    assert [lines[f"quality:{hour_b}:{name}"] for name in (*FIGURES, "unpriced_hours")] == [
        "1.0",
        "0.02",
        "0.0",
        "0.98",
        "0",
    ]
    assert (lines["observed_h"], lines["bridged_h"], lines["missing_h"]) == ("0.03", "0.025", "1.945")


def test_the_totals_are_the_sums_of_the_hours_unrounded(node, ledger):
    report = sustainability_report(organization_id=node.fleet.organization_id, start=at(A), end=at(B + HOUR_S))
    totals, hours = report.sums.totals, report.quality_hours

    assert [hour.hour_start for hour in hours] == [at(A), at(B)]
    assert sum(hour.held_h for hour in hours) == totals.held_h
    assert sum(hour.measured_h for hour in hours) * 3600 == totals.observed_s
    assert sum(hour.bridged_h for hour in hours) * 3600 == totals.bridged_s == Decimal(90)
    assert sum(hour.missing_h for hour in hours) == totals.held_h - (totals.observed_s + totals.bridged_s) / 3600
    assert sum(hour.unpriced_hours for hour in hours) == report.sums.unpriced_hours == 1


def test_the_sustainability_page_shows_the_hours_not_wholly_measured(client, member, ledger):
    client.force_login(member)
    query = f"?start={at(A).date().isoformat()}&end={at(B + HOUR_S).date().isoformat()}"

    html = client.get("/sustainability/" + query).content.decode()

    table = html[html.index('<table id="quality-hours">') :]
    table = table[: table.index("</table>")]
    hour_a, hour_b = at(A).strftime("%Y-%m-%d %H:%M"), at(B).strftime("%Y-%m-%d %H:%M")
    row = "<tr>\n  <td>{}</td><td>1.000</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\n</tr>"
    assert row.format(hour_a, "0.010", "0.025", "0.965", 1) in table
    assert row.format(hour_b, "0.020", "0.000", "0.980", 0) in table
