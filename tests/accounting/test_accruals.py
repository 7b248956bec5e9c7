"""Accruals without a horizon: every held hour of every node gets its line, telemetry or not, however long ago,
until decommissioning; caught up in bounded batches; one organization's broken price stops no other's."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounting.accruals import ledger_mark_held_hours
from accounting.models import NodeHourLedger, NodePrice
from accounting.node_hour_lines import ledger_pending_run
from fleets.models import Node, Role
from grid.hours import floor_hour
from telemetry.models import ParkedHour
from tests.helpers.factories import FleetFactory, NodeFactory, NodePriceFactory, SiteFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def site_a(org_a: Any) -> Any:
    return SiteFactory(organization=org_a, name="sjc-1")


@pytest.fixture
def fleet_a(org_a: Any) -> Any:
    return FleetFactory(organization=org_a, name="inference")


def accrue(now: datetime, *, per_node: int = 5_000) -> int:
    """Run the accrual task and the ledger's queue until nothing is left to mark; return how many runs marked."""
    runs = 0
    while ledger_mark_held_hours(now=now, per_node=per_node):
        runs += 1
        ledger_pending_run(now=now)
    return runs


def totals(node: Node) -> dict[str, Any]:
    """The node's lines counted and their figures added up in Decimal (SQLite's SUM would add floats)."""
    fields = ("held_h", "rent_cost", "depreciation_cost", "opex_cost", "hardware_cost")
    rows = list(NodeHourLedger.objects.filter(node=node).values_list(*fields))
    sums = {name.removesuffix("_cost"): sum((row[i] for row in rows), Decimal(0)) for i, name in enumerate(fields)}
    return {"lines": len(rows), **sums}


def test_a_node_enrolled_400_days_back_that_never_reports_accrues_every_held_hour(
    client_as: Callable[..., APIClient], fleet_a: Any, site_a: Any
) -> None:
    # given: a node enrolled through the API, commissioned 400 days ago, rented at 1.37 per node-hour
    now = timezone.now()
    commissioned = floor_hour(now) - timedelta(days=400)
    body = {"fleet": fleet_a.pk, "site": site_a.pk, "hostname": "silent-1", "commissioned_at": commissioned.isoformat()}
    response = client_as(Role.ENGINEER).post("/api/v1/node-enrollments/", body, format="json")
    assert response.status_code == 201, response.content
    node = Node.objects.get(pk=response.json()["node_id"])
    NodePriceFactory(node=node, rate_per=NodePrice.RatePer.NODE, rate_per_h=Decimal("1.37"), valid_from=commissioned)
    # when: the task runs until it has caught up, 3,000 hours a run
    runs = accrue(now, per_node=3_000)
    # then: 9,600 held hours, each with its line, in four runs; rent = hours x rate, exactly
    held_hours = 400 * 24
    assert runs == 4
    assert totals(node) | {"depreciation": None, "opex": None} == {
        "lines": held_hours, "held_h": Decimal(held_hours), "rent": Decimal("1.37") * held_hours,
        "hardware": Decimal("1.37") * held_hours, "depreciation": None, "opex": None,
    }  # fmt: skip
    first = NodeHourLedger.objects.filter(node=node).order_by("hour_start").first()
    assert first is not None and first.hour_start == commissioned
    assert ledger_mark_held_hours(now=now) == 0  # nothing left: idempotent


def test_a_decommissioned_node_accrues_up_to_its_decommissioning(fleet_a: Any, site_a: Any) -> None:
    now = timezone.now()
    commissioned = floor_hour(now) - timedelta(days=10)
    decommissioned = floor_hour(now) - timedelta(days=3) - timedelta(minutes=30)  # half way through an hour
    node = NodeFactory(fleet=fleet_a, site=site_a, commissioned_at=commissioned, decommissioned_at=decommissioned)
    NodePriceFactory(node=node, rate_per=NodePrice.RatePer.NODE, rate_per_h=Decimal("2.00"), valid_from=commissioned)

    accrue(now)

    lines = NodeHourLedger.objects.filter(node=node).order_by("hour_start")
    hours = 7 * 24 - 1  # whole hours held, then the half hour of the decommissioning hour
    assert lines.count() == hours + 1
    last = lines.last()
    assert last is not None and (last.hour_start, last.held_h, last.rent_cost) == (
        floor_hour(decommissioned), Decimal("0.5"), Decimal("1.00")
    )  # fmt: skip
    assert totals(node)["rent"] == Decimal("2.00") * hours + Decimal("1.00")


def test_a_node_without_commissioning_date_accrues_from_its_enrollment_not_its_fleets_older_default(
    fleet_a: Any, site_a: Any
) -> None:
    # given: a fleet default rent from 60 days ago, and a node enrolled 5 days ago with no commissioning date
    now = timezone.now()
    NodePriceFactory(
        fleet=fleet_a, node=None, rate_per=NodePrice.RatePer.NODE, rate_per_h=Decimal("1.00"),
        valid_from=floor_hour(now) - timedelta(days=60),
    )  # fmt: skip
    node = NodeFactory(fleet=fleet_a, site=site_a, commissioned_at=None)
    enrolled = floor_hour(now) - timedelta(days=5) + timedelta(minutes=20)
    Node.objects.filter(pk=node.pk).update(created_at=enrolled)

    accrue(now)

    # then: its held hours start at the hour it was enrolled in, not at the fleet's default
    first = NodeHourLedger.objects.filter(node=node).order_by("hour_start").first()
    assert first is not None and first.hour_start == floor_hour(enrolled)
    assert totals(node)["lines"] == 5 * 24


def test_an_owned_silent_node_depreciates_every_held_hour(fleet_a: Any, site_a: Any) -> None:
    # given: owned, 35,040 over 4 years by the hour (1.00 per hour) and 0.20 per hour running cost, silent
    now = timezone.now()
    commissioned = floor_hour(now) - timedelta(days=30)
    node = NodeFactory(fleet=fleet_a, site=site_a, tenure="owned", commissioned_at=commissioned)
    NodePriceFactory(
        node=node, kind=NodePrice.Kind.OWNED, rate_per_h=None, capex=Decimal(35_040), lifetime_years=Decimal(4),
        depreciation_method="hour", opex_per_h=Decimal("0.20"), valid_from=commissioned,
    )  # fmt: skip

    accrue(now)

    hours = 30 * 24
    assert totals(node) | {"held_h": None} == {
        "lines": hours, "rent": Decimal(0), "depreciation": Decimal(hours), "opex": Decimal("0.20") * hours,
        "hardware": Decimal("1.20") * hours, "held_h": None,
    }  # fmt: skip


def test_one_organizations_broken_price_does_not_stop_anothers_accrual(fleet_a: Any, site_a: Any, org_b: Any) -> None:
    # given: Org A's node under an owned price whose life changes cannot be read; Org B's node rented
    now = timezone.now()
    since = floor_hour(now) - timedelta(hours=6)
    broken = NodeFactory(fleet=fleet_a, site=site_a, tenure="owned", commissioned_at=since)
    NodePriceFactory(
        node=broken, kind=NodePrice.Kind.OWNED, rate_per_h=None, capex=Decimal(1000), lifetime_years=Decimal(4),
        life_changes=[{"no": "date"}], valid_from=since,
    )  # fmt: skip
    site_b = SiteFactory(organization=org_b, name="ams-1")
    healthy = NodeFactory(fleet=FleetFactory(organization=org_b, name="b"), site=site_b, commissioned_at=since)
    NodePriceFactory(node=healthy, rate_per=NodePrice.RatePer.NODE, rate_per_h=Decimal("3"), valid_from=since)

    ledger_mark_held_hours(now=now)
    ledger_pending_run(now=now)

    # then: A's hours are parked with their error, B's six hours accrued
    assert not NodeHourLedger.objects.filter(node=broken).exists()
    parked = ParkedHour.objects.filter(node=broken, stage="ledger")
    assert parked.count() == 6 and "lifetime_years" in parked.first().error  # type: ignore[union-attr]
    assert totals(healthy)["rent"] == Decimal(18)
