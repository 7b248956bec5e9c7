"""One asset record for money and carbon: the owned price a node was bought under, and its cards.

An owned ``NodePrice`` is the node's fixed-asset record (cost, in-service date, life); a ``GpuAsset`` may name
it (``node_price``). Both the node's depreciation and its cards' (and host share's) embodied carbon start at
the instant ``accounting.ledger.in_service.in_service_at`` gives, so the book value and the carbon asset run
from one date; a card that joined the node later (a replacement) starts no earlier than its own installation.
This module reads the rows that rule needs; the rule itself is the ledger's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from accounting.ledger.embodied import unallocated_fraction
from accounting.ledger.in_service import in_service_at
from accounting.models import NodePrice
from accounting.profiles import (
    gpu_asset_row,
    gpu_embodied_asset,
    gpu_embodied_until,
    hardware_profiles,
    profile_for_gpu,
)
from fleets.models import Gpu, GpuInstallation, Node
from telemetry.installations import in_first_set


def owned_price_of(node: Node) -> NodePrice | None:
    """The owned price ``node`` was bought under: its own first owned price, else its fleet's first owned
    default (a node's own price wins over its fleet's, as in the ledger); ``None`` for a node never owned."""
    owned = NodePrice.objects.filter(kind=NodePrice.Kind.OWNED).order_by("valid_from", "pk")
    return owned.filter(node=node).first() or owned.filter(fleet_id=node.fleet_id, node__isnull=True).first()


def card_price(gpu: Gpu, bought: NodePrice | None) -> NodePrice | None:
    """The owned price a card was bought under: the one its asset row names, else its node's (``bought``)."""
    asset = gpu_asset_row(gpu)
    return asset.node_price if asset is not None and asset.node_price is not None else bought


def card_in_service_at(
    gpu: Gpu, node: Node, bought: NodePrice | None, node_installations: Iterable[GpuInstallation]
) -> datetime | None:
    """When the card went into service: its asset row's acquisition date, else its owned price's in-service
    date, else the node's commissioning, else the card's first installation; a card that joined the node after
    its original cards (a replacement) not before its own first installation.

    ``node_installations``: the installations of all the node's cards (which ones came first tells the
    node's original cards from those that joined later)."""
    rows = list(node_installations)
    first = min((row.installed_at for row in rows if row.gpu_id == gpu.pk), default=None)
    node_first = min((row.installed_at for row in rows), default=None)
    joined = first is not None and node_first is not None and not in_first_set(first, node_first)
    asset, price = gpu_asset_row(gpu), card_price(gpu, bought)
    return in_service_at(
        acquired_on=asset.acquired_on if asset is not None else None,
        price_in_service_at=price.in_service_at if price is not None else None,
        price_valid_from=price.valid_from if price is not None else None,
        commissioned_at=node.commissioned_at,
        first_installed_at=first,
        joined_at=first if joined else None,
    )


def host_in_service_at(
    node: Node, bought: NodePrice | None, installations: Iterable[GpuInstallation]
) -> datetime | None:
    """When the node's host share (no asset row of its own) went into service: the node's owned price's
    in-service date, else its commissioning, else the first installation of any of its cards."""
    return in_service_at(
        price_in_service_at=bought.in_service_at if bought is not None else None,
        price_valid_from=bought.valid_from if bought is not None else None,
        commissioned_at=node.commissioned_at,
        first_installed_at=min((row.installed_at for row in installations), default=None),
    )


@dataclass(frozen=True)
class AssetCard:
    """A card of a node bought under an owned price, as the carbon side of that asset record."""

    gpu_id: int
    index: int
    name: str
    profile_key: str | None  # None: a model the profiles do not know (its embodied carbon is unknown)
    linked: str  # "asset": its asset row names the price; "node": the node's first owned price, by default
    in_service_at: datetime | None
    embodied_kgco2e: Decimal | None  # central, the share of its footprint our own use carries
    embodied_until: datetime | None


def asset_cards(*, price: NodePrice, node: Node) -> list[AssetCard]:
    """The cards of ``node`` bought under ``price``: those whose asset row names it, and those naming no price
    when it is the node's first owned price; each with its in-service date and embodied carbon's end."""
    bought = owned_price_of(node)
    gpus = Gpu.objects.filter(node=node).select_related("asset__node_price").order_by("index")
    installations = list(GpuInstallation.objects.filter(gpu__node=node))
    profiles = hardware_profiles(organization_id=node.fleet.organization_id)
    return [
        _asset_card(gpu, node, bought, installations, profile_for_gpu(gpu, profiles))
        for gpu in gpus
        if card_price(gpu, bought) == price
    ]


def _asset_card(
    gpu: Gpu, node: Node, bought: NodePrice | None, node_installations: list[GpuInstallation], profile: Any
) -> AssetCard:
    start = card_in_service_at(gpu, node, bought, node_installations)
    embodied = gpu_embodied_asset(gpu, profile)
    asset = gpu_asset_row(gpu)
    return AssetCard(
        gpu_id=gpu.pk, index=gpu.index, name=gpu.name, profile_key=profile.key if profile else None,
        linked="asset" if asset is not None and asset.node_price_id is not None else "node",
        in_service_at=start,
        embodied_kgco2e=None if embodied is None else embodied.embodied_kgco2e.central * unallocated_fraction(embodied),
        embodied_until=gpu_embodied_until(gpu, profile, start),
    )  # fmt: skip
