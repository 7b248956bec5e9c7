"""The input tests' days and roles, a ledger recomputation, a node's hardware cost and a rent's request body."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_pending_run
from fleets.models import Node, Role

JAN_1 = datetime(2026, 1, 1, tzinfo=UTC)
JAN_2 = JAN_1 + timedelta(days=1)
JAN_3 = JAN_1 + timedelta(days=2)
HOURS = [JAN_1 + timedelta(hours=n) for n in range(48)]
ROLES = [Role.ADMIN, Role.FINANCE, Role.SUSTAINABILITY, Role.ENGINEER, Role.VIEWER]


def ledger_recompute() -> int:
    return ledger_pending_run(now=timezone.now())


def hardware_cost(node: Node) -> Decimal:
    return sum((line.hardware_cost for line in NodeHourLedger.objects.filter(node=node)), Decimal(0))


def rent_body(node: Node, **changes: Any) -> dict[str, Any]:
    body = {
        "fleet": node.fleet_id, "node": node.pk, "kind": "rented", "rate_per_h": "2.50", "rate_per": "gpu",
        "valid_from": JAN_2.isoformat(),
    }  # fmt: skip
    return body | changes
