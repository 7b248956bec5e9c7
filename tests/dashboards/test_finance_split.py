"""The finance page's split of hardware cost into rented and owned: each node-hour as it was priced."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Sum

from accounting.models import NodeHourLedger, NodePrice
from accounting.node_hour_lines import ledger_node_hours_compute
from dashboards.finance import cost_split
from fleets.models import Node, Tenure
from reports.selectors import ledger_parts, parts_total
from tests.helpers.dashboard_data import period, recent_hours, two_fleets
from tests.helpers.factories import OrganizationFactory

OWNED = {"kind": "owned", "capex": Decimal("250000"), "lifetime_years": Decimal(4), "opex_per_h": Decimal("0.40")}


def _split(organization):
    """The page's split, and the hardware cost the page's total shows."""
    start, end = period()
    parts = ledger_parts(organization_ids=[organization.pk], start=start, end=end, keys=("fleet_id", "gpu_model"))
    return cost_split(parts), parts_total(parts).totals.hardware_cost


def _hardware(**where):
    return NodeHourLedger.objects.filter(**where).aggregate(s=Sum("hardware_cost"))["s"]


def test_rented_and_owned_hardware_add_up_to_the_hardware_cost(db):
    organization = OrganizationFactory()
    enterprise, consumer = two_fleets(organization)  # enterprise rented, consumer owned

    split, hardware = _split(organization)

    assert split["Rented hardware"] == _hardware(fleet=enterprise) > 0
    assert split["Owned hardware"] == _hardware(fleet=consumer) > 0
    assert split["Rented hardware"] + split["Owned hardware"] == hardware


def test_a_node_bought_after_renting_keeps_its_rented_hours_as_rented(db):
    organization = OrganizationFactory()
    enterprise, consumer = two_fleets(organization)
    first, *bought = recent_hours()
    node = Node.objects.get(fleet=enterprise)
    NodePrice.objects.filter(fleet=enterprise).update(valid_to=bought[0])  # the rent ends: the node is bought
    NodePrice.objects.create(fleet=enterprise, valid_from=bought[0], **OWNED)
    node.tenure = Tenure.OWNED
    node.save()
    ledger_node_hours_compute(node_id=node.pk, hour_starts=recent_hours())

    split, hardware = _split(organization)

    rented_hour = NodeHourLedger.objects.get(node=node, hour_start=first)
    assert rented_hour.rent_cost > 0 and rented_hour.depreciation_cost == 0
    assert split["Rented hardware"] == rented_hour.hardware_cost
    assert split["Owned hardware"] == _hardware(fleet=consumer) + _hardware(node=node, hour_start__in=bought)
    assert split["Owned hardware"] + split["Rented hardware"] == hardware
