"""The node prices' and exchange rates' CSV uploads: their columns, each row's serializer, and the saver a
worker runs (``accounting.inputs.upload_runs``)."""

from __future__ import annotations

import json
from typing import Any

from django.utils import timezone
from rest_framework import serializers

from accounting.inputs.api import NodePriceInputSerializer
from accounting.inputs.rates import exchange_rate_save
from accounting.inputs.rates_api import ExchangeRateInputSerializer
from accounting.inputs.services import InputChange, node_price_save
from accounting.inputs.upload_runs import UploadSpec
from accounting.models import ExchangeRate, InputUpload, NodePrice
from accounting.models.prices import life_changes_parse
from fleets.models import Fleet, Node, Organization


class LifeChangesCell(serializers.Field):
    """A CSV cell holding an owned price's changes of useful life as the API shows them, JSON:
    ``[{"from": "2027-01-01T00:00:00Z", "lifetime_years": "5"}]`` (the cell quoted, its quotes doubled). A new
    price carries them from the start, so they are its schedule, not a prospective change of a stored one."""

    def to_internal_value(self, data: Any) -> list[dict[str, str]]:
        try:
            changes = life_changes_parse(json.loads(str(data)))
        except ValueError as error:  # json.JSONDecodeError is a ValueError
            raise serializers.ValidationError(f"a JSON list of {{from, lifetime_years}}: {error}") from None
        return [{"from": c.effective_at.isoformat(), "lifetime_years": str(c.life_years)} for c in changes]

    def to_representation(self, value: Any) -> Any:
        return value


class NodePriceCsvSerializer(NodePriceInputSerializer):
    fleet = serializers.CharField(max_length=200, help_text="the fleet's name")  # type: ignore[assignment]
    node = serializers.CharField(max_length=253, required=False, help_text="hostname; empty: fleet default")  # type: ignore[assignment]
    life_changes = LifeChangesCell(required=False, help_text="owned: changes of useful life, JSON")


def _price_saver(organization: Organization, user: Any) -> Any:
    """Rows name fleets and nodes: both read once per upload (two queries, not two per row)."""
    now = timezone.now()
    fleets = {fleet.name: fleet for fleet in Fleet.objects.filter(organization=organization)}
    nodes = {(node.fleet_id, node.hostname): node for node in Node.objects.filter(fleet__in=fleets.values())}

    def save(data: dict[str, Any]) -> InputChange:
        fleet = fleets.get(data.pop("fleet"))
        if fleet is None:
            raise LookupError("fleet: no fleet of that name in this organization")
        hostname = data.pop("node", None)
        node = None if hostname is None else nodes.get((fleet.pk, hostname))
        if hostname is not None and node is None:
            raise LookupError(f"node: no node {hostname} in fleet {fleet.name}")
        # Fresh instances: a saved price keeps no state of another row's (the fleet's organization is cached).
        price = NodePrice(fleet=fleet, node=node, life_changes=data.pop("life_changes", []))
        return node_price_save(price=price, data=data, user=user, now=now)

    return save


NODE_PRICES_UPLOAD = UploadSpec(
    kind=InputUpload.Kind.NODE_PRICES,
    required=frozenset({"fleet", "kind", "valid_from"}),
    serializer=NodePriceCsvSerializer,
    saver=_price_saver,
)


def _rate_saver(organization: Organization, user: Any) -> Any:
    """A row whose pair, month and kind the table holds replaces that rate (a month's file sent again)."""
    now = timezone.now()

    def save(data: dict[str, Any]) -> InputChange:
        data.pop("organization", None)
        return exchange_rate_save(row=ExchangeRate(organization=organization), data=data, user=user, now=now,
                                  replace=True)  # fmt: skip

    return save


EXCHANGE_RATES_UPLOAD = UploadSpec(
    kind=InputUpload.Kind.EXCHANGE_RATES,
    required=frozenset({"currency", "quote_currency", "month", "rate"}),
    serializer=ExchangeRateInputSerializer,
    saver=_rate_saver,
)
