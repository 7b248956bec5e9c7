"""From stored prices to the ledger's pure inputs: tariffs, node pricing, PUE, market factors.

Selectors load every period touching a range in one query per kind; the pure
``accounting.tariff.in_force`` then picks the one in force at each hour.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import Q, QuerySet

from accounting.ledger import (
    DepreciationMethod,
    IntensityFactor,
    OwnedAsset,
    OwnedPricing,
    Pricing,
    RatePer,
    RentedPricing,
    h_from_years,
)
from accounting.ledger.tax import SiteTaxRates
from accounting.models import NodePrice, SiteMarketFactor, SitePue, SiteTariff, SiteTax
from accounting.models.prices import life_changes_parse
from accounting.tariff import (
    Tariff,
    TariffPrice,
    Validity,
    in_force,
    price_at,
    tariff_from_fields,
)
from fleets.models import Node


def tariff_from_model(row: SiteTariff) -> Tariff:
    """The pure tariff of a stored row; raises ``ValueError`` naming the problem."""
    return tariff_from_fields(
        flat_price_per_kwh=row.flat_price_per_kwh,
        windows=row.windows,
        time_zone=row.site.time_zone,
        tariff_id=f"tariff-{row.pk or 'new'}",
        includes_vat=row.prices_include_vat,
    )


def _overlapping(queryset: QuerySet[Any], start: datetime, end: datetime) -> QuerySet[Any]:
    return queryset.filter(Q(valid_to__isnull=True) | Q(valid_to__gt=start), valid_from__lt=end)


def tariff_periods(*, site_id: int, start: datetime, end: datetime) -> list[Validity[Tariff]]:
    rows = _overlapping(SiteTariff.objects.filter(site_id=site_id).select_related("site"), start, end)
    return [Validity(row.valid_from, row.valid_to, tariff_from_model(row)) for row in rows]


def tariff_price(periods: Iterable[Validity[Tariff]], hour_start: datetime) -> TariffPrice | None:
    tariff = in_force(periods, hour_start)
    return None if tariff is None else price_at(tariff, hour_start)


def market_periods(*, site_id: int, start: datetime, end: datetime) -> list[Validity[IntensityFactor]]:
    rows = _overlapping(SiteMarketFactor.objects.filter(site_id=site_id), start, end)
    return [
        Validity(row.valid_from, row.valid_to, IntensityFactor(Decimal(row.gco2e_per_kwh), row.source)) for row in rows
    ]


def tax_periods(*, site_id: int, start: datetime, end: datetime) -> list[Validity[SiteTaxRates]]:
    """The site's taxes touching ``[start, end)``; an hour none covers has no tax known."""
    rows = _overlapping(SiteTax.objects.filter(site_id=site_id), start, end)
    return [Validity(row.valid_from, row.valid_to, site_tax_rates(row)) for row in rows]


def site_tax_rates(row: SiteTax) -> SiteTaxRates:
    """The ledger's pure tax of a stored row."""
    rates = (Decimal(row.vat_rate), row.vat_recoverable, Decimal(row.energy_tax_per_kwh))
    return SiteTaxRates(*rates, tax_id=f"tax-{row.pk}")


def pue_periods(*, site_id: int, start: datetime, end: datetime) -> list[Validity[Decimal]]:
    """The site's dated PUE rows touching ``[start, end)``; hours outside them take ``Site.pue``."""
    rows = _overlapping(SitePue.objects.filter(site_id=site_id), start, end)
    return [Validity(row.valid_from, row.valid_to, Decimal(row.pue)) for row in rows]


def pricing_periods(*, node: Node, start: datetime, end: datetime) -> tuple[list[Validity[Pricing]], ...]:
    """The node's own prices and its fleet's defaults; the node's win where both are in force."""
    own = _overlapping(NodePrice.objects.filter(node=node), start, end)
    fleet = _overlapping(NodePrice.objects.filter(fleet_id=node.fleet_id, node__isnull=True), start, end)
    return [_pricing_validity(row, node) for row in own], [_pricing_validity(row, node) for row in fleet]


def pricing_at(periods: tuple[list[Validity[Pricing]], ...], hour_start: datetime) -> Pricing | None:
    for candidates in periods:
        pricing = in_force(candidates, hour_start)
        if pricing is not None:
            return pricing
    return None


def owned_asset(row: NodePrice, node: Node) -> OwnedAsset:
    """``node`` as an owned asset under the price ``row``: its cost, salvage, in-service date, life and
    method, its life changes and its disposal (the node's decommissioning)."""
    return OwnedAsset(
        cost=Decimal(row.capex or 0),
        salvage=Decimal(row.salvage_value),
        in_service_at=row.depreciation_starts_at(node),
        life_years=Decimal(row.lifetime_years or 0),
        method=DepreciationMethod(row.depreciation_method),
        life_changes=life_changes_parse(row.life_changes),
        disposed_at=node.decommissioned_at,
    )


def _pricing_validity(row: NodePrice, node: Node) -> Validity[Pricing]:
    price_id = f"price-{row.pk}"
    pricing: Pricing
    if row.kind == NodePrice.Kind.RENTED:
        per = RatePer.GPU if row.rate_per == NodePrice.RatePer.GPU else RatePer.NODE
        pricing = RentedPricing(
            Decimal(row.rate_per_h or 0), per, row.includes_power, price_id, row.currency or None,
            row.prices_include_vat,
        )  # fmt: skip
    else:
        lifetime_h = h_from_years(Decimal(row.lifetime_years or 0))
        asset = owned_asset(row, node)
        pricing = OwnedPricing(
            Decimal(row.capex or 0), lifetime_h, Decimal(row.opex_per_h), price_id, asset, row.currency or None,
            row.prices_include_vat,
        )  # fmt: skip
    return Validity(row.valid_from, row.valid_to, pricing)
