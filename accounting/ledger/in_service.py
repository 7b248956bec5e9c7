"""When an asset went into service: the one date depreciation and embodied carbon both start from.

A node bought under an owned price is one asset for money and carbon (IAS 16 par. 55: depreciation begins
when the asset is available for use; SCI / GHG Protocol: embodied carbon is amortized over the asset's life
from then). The same instant starts the price's depreciation and the life of the node's cards and host share,
so the book value and the embodied carbon run on one clock. A card that joined the node later (a replacement
or an added card, new to the node) is an asset of its own: its life starts when it was installed, never before.
Pure: no framework, datetimes in, a datetime out.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time


def in_service_at(
    *,
    acquired_on: date | None = None,
    price_in_service_at: datetime | None = None,
    price_valid_from: datetime | None = None,
    commissioned_at: datetime | None = None,
    first_installed_at: datetime | None = None,
    joined_at: datetime | None = None,
) -> datetime | None:
    """The asset's in-service instant (aware UTC), from the most specific record that dates it:

    1. ``acquired_on``: a card's own asset row (``GpuAsset.acquired_on``, midnight UTC of that day);
    2. the owned price it was bought under: its ``in_service_at``, else the later of the node's commissioning
       and the price's ``valid_from`` (a node bought after it was rented starts at its purchase);
    3. without an owned price: the node's ``commissioned_at``, else the card's first installation (its first
       sample); ``None`` when nothing dates it.

    ``joined_at``: for a card that joined the node after its original cards, its first installation. Such a
    card starts at the later of the date 2. or 3. give and ``joined_at``: a card installed years after the
    node's commissioning starts its own life then (GHG Protocol Scope 3 Category 2 / SCI: a capital good is
    counted from its acquisition, over its own life). ``None`` for the node's original cards and its host
    share, which keep the node's date.
    """
    if acquired_on is not None:
        return datetime.combine(acquired_on, time.min, tzinfo=UTC)
    node_at = _node_in_service_at(price_in_service_at, price_valid_from, commissioned_at)
    if node_at is None:
        return first_installed_at
    return node_at if joined_at is None else max(node_at, joined_at)


def _node_in_service_at(
    price_in_service_at: datetime | None, price_valid_from: datetime | None, commissioned_at: datetime | None
) -> datetime | None:
    """The node's own in-service instant: 2. or 3. above, without the card's first installation."""
    if price_in_service_at is not None:
        return price_in_service_at
    if price_valid_from is not None:
        return max(price_valid_from, commissioned_at or price_valid_from)
    return commissioned_at
