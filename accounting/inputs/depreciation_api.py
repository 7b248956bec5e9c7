"""An owned price's book: ``/api/v1/node-prices/<id>/book-value/`` and ``/api/v1/node-prices/<id>/life-changes/``.

The book value of a node under an owned price at an instant (any member reads),
and a change of the useful life applied prospectively from its date (``admin``
and ``finance`` write; audited; 409 when its date lies in a locked period; only
the hours from that date on are re-opened). The arithmetic is the ledger's
(``accounting.ledger.depreciation``).
"""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.assets import asset_cards
from accounting.inputs.api import NodePriceOutputSerializer, node_prices_for_user, written
from accounting.inputs.services import node_price_life_change
from accounting.ledger.depreciation import accumulated_depreciation, book_value, disposal_loss, end_of_life
from accounting.ledger.fx import MonthAmount, RateKind, ReportingTotal, month_of, reporting_total
from accounting.models import NodePrice
from accounting.prices import owned_asset
from accounting.rates import rate_table
from accounting.reporting import ReportingSerializer, reporting_currency_of, reporting_output
from common.api import ERRORS, InputInvalid, InputView, owned, validated
from fleets.models import Node
from fleets.permissions import Capability, change_check
from fleets.selectors import nodes_for_user


class BookValueQuerySerializer(serializers.Serializer):
    at = serializers.DateTimeField(required=False, help_text="the instant (default: now)")
    node = serializers.IntegerField(required=False, help_text="the node (required for a fleet default price)")


class BookValueCardSerializer(serializers.Serializer):
    gpu_id = serializers.IntegerField()
    index = serializers.IntegerField(help_text="NVML device index on the node")
    name = serializers.CharField(help_text="NVML name")
    profile_key = serializers.CharField(allow_null=True, help_text="the hardware profile; null: an unknown model")
    linked = serializers.CharField(
        help_text="asset: the card's asset row names this price; node: the node's first owned price, by default"
    )
    in_service_at = serializers.DateTimeField(
        allow_null=True, help_text="when its embodied life began: its acquisition date, else the price's in-service"
    )
    embodied_kgco2e = serializers.DecimalField(
        max_digits=20, decimal_places=6, allow_null=True,
        help_text="central kgCO2e our own use of the card carries (a second-hand card: the share left); null: unknown",
    )  # fmt: skip
    embodied_until = serializers.DateTimeField(allow_null=True, help_text="its embodied carbon is fully allocated then")


class BookValueSerializer(serializers.Serializer):
    price_id = serializers.IntegerField()
    node_id = serializers.IntegerField()
    currency = serializers.CharField(help_text="the price's currency (blank on the price: the node's site currency)")
    at = serializers.DateTimeField()
    cost = serializers.DecimalField(max_digits=20, decimal_places=6, help_text="acquisition cost (capex)")
    salvage_value = serializers.DecimalField(max_digits=20, decimal_places=6)
    depreciation_method = serializers.CharField()
    in_service_at = serializers.DateTimeField(help_text="when depreciation began (resolved)")
    end_of_life_at = serializers.DateTimeField(help_text="when fully depreciated to salvage, by the latest life")
    disposed_at = serializers.DateTimeField(allow_null=True, help_text="the node's decommissioning")
    accumulated_depreciation = serializers.DecimalField(max_digits=20, decimal_places=6)
    disposal_loss = serializers.DecimalField(
        max_digits=20, decimal_places=6, help_text="book value above salvage expensed at disposal (0: not disposed)"
    )
    book_value = serializers.DecimalField(
        max_digits=20, decimal_places=6, help_text="cost less accumulated depreciation; 0 once disposed of"
    )
    reporting = ReportingSerializer(
        allow_null=True,
        help_text="with a reporting currency set: the book value at the closing rate of its month (IAS 21.39(a): "
        "balances at the closing rate), the rate named; unconverted and listed when the table holds none",
    )
    cards = BookValueCardSerializer(
        many=True, help_text="the node's cards bought under this price: the carbon side of the same asset record"
    )


class LifeChangeInputSerializer(serializers.Serializer):
    effective_from = serializers.DateTimeField(help_text="a whole UTC hour: the change applies from then on")
    lifetime_years = serializers.DecimalField(
        max_digits=5,
        decimal_places=2,
        min_value=Decimal("0.1"),
        help_text="the new total useful life, from in-service",
    )


class LifeChangeWrittenSerializer(NodePriceOutputSerializer):
    ledger_hours_reopened = serializers.IntegerField()


def _node_of(price: NodePrice, node_id: int | None, user: Any) -> Node:
    if price.node_id is not None:
        return Node.objects.select_related("site", "fleet").get(pk=price.node_id)
    if node_id is None:
        raise InputInvalid("node: a fleet default price is each node's own asset: name the node")
    node: Node = owned(nodes_for_user(user=user).select_related("site", "fleet"), node_id, "node")
    if node.fleet_id != price.fleet_id:
        raise InputInvalid(f"node: node {node_id} is not in the price's fleet")
    return node


def book_value_report(*, price: NodePrice, node: Node, at: Any) -> dict[str, Any]:
    """The book of ``node`` under the owned ``price`` at ``at``, unrounded (6 places shown), and in the
    organization's reporting currency at the closing rate of ``at``'s month."""
    asset = owned_asset(price, node)
    currency = price.currency or node.site.currency
    return {
        "price_id": price.pk, "node_id": node.pk, "currency": currency, "at": at,
        "cost": asset.cost, "salvage_value": asset.salvage, "depreciation_method": asset.method.value,
        "in_service_at": asset.in_service_at, "end_of_life_at": end_of_life(asset), "disposed_at": asset.disposed_at,
        "accumulated_depreciation": accumulated_depreciation(asset, at), "disposal_loss": disposal_loss(asset),
        "book_value": book_value(asset, at),
        "reporting": reporting_output(_book_value_reporting(price, currency, book_value(asset, at), at)),
        "cards": [asdict(card) for card in asset_cards(price=price, node=node)],
    }  # fmt: skip


def _book_value_reporting(price: NodePrice, currency: str, value: Decimal, at: Any) -> ReportingTotal | None:
    organization_id = price.fleet.organization_id
    reporting_currency = reporting_currency_of(organization_ids=[organization_id])
    if reporting_currency is None:
        return None
    amount = MonthAmount(currency, month_of(at), value, 1, "book_value", organization_id)
    tables = {organization_id: rate_table(organization_id=organization_id, kind=RateKind.CLOSING)}
    return reporting_total([amount], reporting_currency=reporting_currency, tables=tables, kind=RateKind.CLOSING)


class NodePriceBookValueView(InputView):
    @extend_schema(
        operation_id="node_prices_book_value",
        summary="An owned node's net book value at an instant, and how it was reached",
        parameters=[OpenApiParameter("at", str), OpenApiParameter("node", int)],
        responses={200: BookValueSerializer, **ERRORS},
    )  # fmt: skip
    def get(self, request: Request, price_id: int) -> Response:
        price = owned(node_prices_for_user(user=request.user), price_id, "price")
        query = BookValueQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        if price.kind != NodePrice.Kind.OWNED:
            raise InputInvalid("kind: a rented price has no book value")
        node = _node_of(price, query.validated_data.get("node"), request.user)
        report = book_value_report(price=price, node=node, at=query.validated_data.get("at") or timezone.now())
        return Response(BookValueSerializer(report).data)


class NodePriceLifeChangesView(InputView):
    @extend_schema(
        operation_id="node_prices_life_change",
        summary="Change an owned price's useful life prospectively: the book value left over the life left",
        request=LifeChangeInputSerializer, responses={200: LifeChangeWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request, price_id: int) -> Response:
        price = owned(node_prices_for_user(user=request.user), price_id, "price")
        change_check(user=request.user, organization=price.fleet.organization_id, capability=Capability.PRICES)
        data = validated(LifeChangeInputSerializer, request)
        change = node_price_life_change(
            price=price, effective_at=data["effective_from"], lifetime_years=data["lifetime_years"],
            user=request.user, now=timezone.now(),
        )  # fmt: skip
        return written(NodePriceOutputSerializer, change)
