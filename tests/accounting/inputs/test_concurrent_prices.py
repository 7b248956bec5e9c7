"""Two overlapping prices for one node at the same instant: the organization's row lock lets one through."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection, connections
from django.utils import timezone

from accounting.inputs.services import node_price_save
from accounting.models import NodePrice
from common.api import InputInvalid
from fleets.models import Node
from tests.helpers.inputs import JAN_1, JAN_2

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: PostgreSQL only"),
]


def test_concurrent_overlapping_prices_cannot_both_pass(node_a: Node) -> None:
    barrier, outcomes = threading.Barrier(2), []

    def price(valid_from: object) -> None:
        try:
            barrier.wait(timeout=10)
            data = {"kind": "rented", "rate_per_h": Decimal(2), "valid_from": valid_from}
            node_price_save(price=NodePrice(fleet=node_a.fleet, node=node_a), data=data, user=None, now=timezone.now())
            outcomes.append("created")
        except InputInvalid:
            outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=price, args=(start,)) for start in (JAN_1, JAN_2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(outcomes) == ["created", "refused"]
    assert NodePrice.objects.count() == 1
