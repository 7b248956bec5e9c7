"""The FOCUS export's rows: stored ledger lines and owned nodes' purchases, read and streamed.

Lines are read in node and hour order with ``iterator()`` (a chunk at a time),
priced apart into FOCUS charges (``reports.focus.charges``) and written as rows
(``reports.focus.columns``). Corrections of closed periods are added in one
place, ``correction_charges``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Q
from django.utils import timezone

from accounting.models import LedgerCorrection, NodeHourLedger, NodePrice
from accounting.site_charges import SiteMonthCharge, site_monthly_charges
from common.scope import NO_FILTERS, ReportFilters
from fleets.models import Node, Organization
from reports.focus.charges import (
    HOUR,
    CorrectionFigures,
    LineFigures,
    PriceTerms,
    charges_by_period,
    correction_line_charges,
    line_charges,
    purchase_charge,
    site_month_charges,
)
from reports.focus.columns import Account, Charge, Footprint, focus_row
from reports.selectors.closing import corrections_in
from reports.selectors.lines import ledger_lines, ledger_lines_where

# Lines fetched per round trip: a day of a 40-node fleet; each line is a few hundred bytes.
CHUNK_LINES = 1000
_LINE_FIELDS = (
    "node_id", "hour_start", "currency", "gpu_model", "held_h", "gpu_h", "hardware_cost", "rent_cost",
    "depreciation_cost", "opex_cost", "electricity_cost", "electricity_status", "tariff_price_id", "pricing_price_id",
    "facility_kwh", "it_kwh", "location_co2e_g", "market_co2e_g", "embodied_co2e_g_central", "energy_method",
    "price_currency", "hardware_cost_unconverted",
    "energy_tax_cost", "vat_amount", "vat_cost",
)  # fmt: skip


@dataclass(frozen=True)
class FocusSpec:
    organization_ids: Collection[int]
    start: datetime
    end: datetime
    period: timedelta = HOUR  # the charge period: an hour, or a UTC day
    filters: ReportFilters = NO_FILTERS
    now: datetime | None = None  # the clock the month in progress is charged to (None: now)


def focus_rows(*, spec: FocusSpec) -> Iterator[dict[str, Any]]:
    """Every FOCUS row of the period: the ledger's charges and corrections, owned nodes' purchases, then the
    sites' monthly tariff charges."""
    for charge in usage_charges(spec=spec):
        yield focus_row(charge)
    for charge in _purchase_charges(spec, _accounts(spec)):
        yield focus_row(charge)
    for charge in site_charges(spec=spec):
        yield focus_row(charge)


def site_charges(*, spec: FocusSpec) -> Iterator[Charge]:
    """The sites' fixed and demand tariff charges of each month of the period (``accounting.site_charges``), each
    charged over the part of its month in the period: the site is the resource, no fleet its sub account."""
    found = site_monthly_charges(
        organization_ids=spec.organization_ids, start=spec.start, end=spec.end, now=spec.now or timezone.now(),
        site_ids=spec.filters.site_ids,
    )  # fmt: skip
    names = dict(Organization.objects.filter(pk__in=spec.organization_ids).values_list("pk", "name"))
    for month in found:
        yield from site_month_charges(month, _site_account(month, names[month.organization_id]))


def _site_account(month: SiteMonthCharge, organization_name: str) -> Account:
    return Account(
        organization_id=month.organization_id, organization_name=organization_name, fleet_id=0, fleet_name="",
        site_name=month.site_name, grid_zone=month.grid_zone, node_id=0, hostname="", tenure="", site_id=month.site_id,
    )  # fmt: skip


def usage_charges(*, spec: FocusSpec) -> Iterator[Charge]:
    """The ledger lines' charges by charge period, then the period's corrections: what the journal books too."""
    yield from charges_by_period(_line_charges(spec, _accounts(spec), _prices(spec)), spec.period)
    yield from correction_charges(spec=spec)


def correction_charges(*, spec: FocusSpec) -> Iterator[Charge]:
    """The corrections (and reversals) booked in the period to hours of closed (locked) periods, by charge
    period of the hour each restates: ``Charge(correction=True)``, written with ``ChargeClass=Correction`` and
    billed in the month it is booked in (``reports.focus.charges.correction_line_charges``)."""
    accounts, prices = _accounts(spec), _prices(spec)
    found = corrections_in(organization_ids=spec.organization_ids, start=spec.start, end=spec.end)
    found = found.filter(ledger_lines_where(line="", filters=spec.filters)).select_related("reverses")
    charges = (
        _correction_charges(correction, accounts, prices)
        for correction in found.order_by("node_id", "restated_hour", "id").iterator(chunk_size=CHUNK_LINES)
    )
    yield from charges_by_period((charge for group in charges for charge in group), spec.period)


def _correction_charges(
    correction: LedgerCorrection, accounts: dict[int, Account], prices: dict[str, PriceTerms]
) -> list[Charge]:
    # A reversal restates nothing of its own: it undoes a correction, under that one's line and price.
    line = correction.restated_line or (correction.reverses.restated_line if correction.reverses else None) or {}
    price = prices.get(line.get("pricing_price_id", ""))
    account = accounts[correction.node_id]
    if price is not None and account.tenure != _tenure(price):
        account = replace(account, tenure=_tenure(price))
    return correction_line_charges(_correction_figures(correction, line), account, price)


def _correction_figures(correction: LedgerCorrection, line: dict[str, Any]) -> CorrectionFigures:
    return CorrectionFigures(
        restated_hour=correction.restated_hour,
        booked_hour=correction.booked_hour,
        cause=correction.cause,
        currency=correction.currency,
        sku_id=correction.gpu_model,
        rent_cost=correction.rent_cost,
        depreciation_cost=correction.depreciation_cost,
        opex_cost=correction.opex_cost,
        electricity_cost=correction.electricity_cost,
        energy_tax_cost=correction.energy_tax_cost,
        vat_amount=correction.vat_amount,
        vat_cost=correction.vat_cost,
        facility_kwh=correction.facility_kwh,
        tariff_price_id=line.get("tariff_price_id") or "",
        footprint=Footprint(
            corrections=1,
            it_kwh=correction.it_kwh,
            facility_kwh=correction.facility_kwh,
            location_co2e_g=correction.location_co2e_g,
            market_co2e_g=correction.market_co2e_g,
            embodied_co2e_g=correction.embodied_co2e_g_central,
            energy_methods=frozenset([line["energy_method"]]) if line.get("energy_method") else frozenset(),
        ),
    )


def _line_charges(spec: FocusSpec, accounts: dict[int, Account], prices: dict[str, PriceTerms]) -> Iterator[Charge]:
    lines = ledger_lines(organization_ids=spec.organization_ids, start=spec.start, end=spec.end, filters=spec.filters)
    for values in lines.order_by("node_id", "hour_start").values(*_LINE_FIELDS).iterator(chunk_size=CHUNK_LINES):
        price = prices.get(values["pricing_price_id"])
        account = accounts[values["node_id"]]
        if price is not None and account.tenure != _tenure(price):
            account = replace(account, tenure=_tenure(price))
        yield from line_charges(_figures(values), account, price)


def _tenure(price: PriceTerms) -> str:
    return "owned" if price.owned else "rented"


def _figures(values: dict[str, Any]) -> LineFigures:
    return LineFigures(
        hour_start=values["hour_start"],
        currency=values["currency"],
        sku_id=values["gpu_model"],
        held_h=values["held_h"],
        gpu_h=values["gpu_h"],
        hardware_cost=values["hardware_cost"],
        rent_cost=values["rent_cost"],
        depreciation_cost=values["depreciation_cost"],
        opex_cost=values["opex_cost"],
        electricity_cost=values["electricity_cost"],
        energy_tax_cost=values["energy_tax_cost"],
        vat_amount=values["vat_amount"],
        vat_cost=values["vat_cost"],
        electricity_included=values["electricity_status"] == "included",
        tariff_price_id=values["tariff_price_id"],
        facility_kwh=values["facility_kwh"],
        price_currency=values["price_currency"] or None,
        hardware_cost_unconverted=values["hardware_cost_unconverted"],
        footprint=Footprint(
            ledger_hours=1,
            gpu_h=values["gpu_h"],
            it_kwh=values["it_kwh"],
            facility_kwh=values["facility_kwh"],
            location_co2e_g=values["location_co2e_g"],
            market_co2e_g=values["market_co2e_g"],
            embodied_co2e_g=values["embodied_co2e_g_central"],
            energy_methods=frozenset([values["energy_method"]]),
        ),
    )


def _nodes(spec: FocusSpec) -> Any:
    nodes = Node.objects.filter(fleet__organization_id__in=spec.organization_ids)
    narrowing = {
        "fleet_id__in": spec.filters.fleet_ids,
        "site_id__in": spec.filters.site_ids,
        "pk__in": spec.filters.node_ids,
    }
    return nodes.filter(**{name: values for name, values in narrowing.items() if values})


def _accounts(spec: FocusSpec) -> dict[int, Account]:
    """Every node of the organizations as the billing account (organization), sub account (fleet) and place."""
    nodes = Node.objects.filter(fleet__organization_id__in=spec.organization_ids).select_related(
        "fleet__organization", "site"
    )
    return {node.pk: _account(node) for node in nodes}


def _account(node: Node) -> Account:
    return Account(
        organization_id=node.fleet.organization_id,
        organization_name=node.fleet.organization.name,
        fleet_id=node.fleet_id,
        fleet_name=node.fleet.name,
        site_name=node.site.name,
        grid_zone=node.site.grid_zone,
        node_id=node.pk,
        hostname=node.hostname,
        tenure=node.tenure,
    )


def _prices(spec: FocusSpec) -> dict[str, PriceTerms]:
    """The organizations' node prices by the id the ledger lines name them by (``price-<pk>``)."""
    rows = NodePrice.objects.filter(fleet__organization_id__in=spec.organization_ids)
    return {f"price-{row.pk}": _terms(row) for row in rows}


def _terms(row: NodePrice) -> PriceTerms:
    owned = row.kind == NodePrice.Kind.OWNED
    return PriceTerms(
        price_id=f"price-{row.pk}",
        owned=owned,
        per_gpu=row.rate_per == NodePrice.RatePer.GPU,
        opex_per_h=Decimal(row.opex_per_h),
    )


def _purchase_charges(spec: FocusSpec, accounts: dict[int, Account]) -> Iterator[Charge]:
    """Each owned node's purchase, in the charge period where its price starts to depreciate it
    (``NodePrice.depreciation_starts_at``: its in-service date, else the later of ``valid_from`` and commissioning)."""
    prices = NodePrice.objects.filter(kind=NodePrice.Kind.OWNED, fleet__organization_id__in=spec.organization_ids)
    nodes = list(_nodes(spec).select_related("site"))
    for price in prices.order_by("pk"):
        for node in nodes:
            if node.fleet_id != price.fleet_id or (price.node_id is not None and price.node_id != node.pk):
                continue
            at = price.depreciation_starts_at(node)  # the price's in-service date, as the ledger depreciates
            if _purchased_under(price, node, at, spec):
                yield purchase_charge(
                    account=replace(accounts[node.pk], tenure="owned"), at=at, period=spec.period,
                    currency=price.currency or node.site.currency, capex=Decimal(price.capex or 0),
                    price_id=f"price-{price.pk}",
                    sku_id=_sku_at(node, at),
                )  # fmt: skip


def _purchased_under(price: NodePrice, node: Node, at: datetime, spec: FocusSpec) -> bool:
    """Whether ``price`` depreciates ``node`` from ``at`` inside the period (a node's own price beats its fleet's)."""
    if not spec.start <= at < spec.end or (price.valid_to is not None and at >= price.valid_to):
        return False
    if price.node_id is not None:
        return True
    own = NodePrice.objects.filter(node=node, valid_from__lte=at).filter(Q(valid_to__isnull=True) | Q(valid_to__gt=at))
    return not own.exists()


def _sku_at(node: Node, at: datetime) -> str:
    """The hardware profile key the node's ledger lines carry (its first line from ``at``), else ``unknown``."""
    line = NodeHourLedger.objects.filter(node=node, hour_start__gte=at).order_by("hour_start").first()
    return line.gpu_model if line is not None else "unknown"
