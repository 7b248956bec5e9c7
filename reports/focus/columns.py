"""FOCUS 1.2 rows from ledger charges: the column-by-column mapping, pure (no Django).

A ``Charge`` is one charge kind of one node over one charge period (an hour, or a
UTC day of hours added up): rent, depreciation, running cost (opex), electricity,
or the purchase of an owned node. ``focus_row`` writes it as one FOCUS row; the
mapping and where it departs from the specification: docs/focus.md.

Money stays ``Decimal`` as the ledger stored it (unrounded, in the line's
currency) and is written in plain notation, trailing zeros dropped: never a float.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from common.periods import month_bounds

ZERO = Decimal(0)


class ChargeKind(enum.StrEnum):
    RENT = "rent"  # cash, invoiced by whoever rents the node out
    DEPRECIATION = "depreciation"  # non-cash: the owned node's purchase price spread over its life
    OPEX = "opex"  # cash: an owned node's other running cost per hour
    ELECTRICITY = "electricity"  # cash: the site's facility energy at its tariff
    PURCHASE = "purchase"  # cash, once: an owned node's purchase price
    ENERGY_TAX = "energy_tax"  # cash, a tax: facility kWh x the site's energy tax (a cost)
    VAT = "vat"  # cash, a tax: VAT on the hour's rent, running cost and electricity (recoverable: not a cost)
    FIXED_CHARGE = "fixed_charge"  # cash: a site tariff's fixed charge of a month (``accounting.site_charges``)
    DEMAND_CHARGE = "demand_charge"  # cash: a site tariff's demand charge on the month's peak kW
    INPUT_VAT = "input_vat"  # the recoverable part of a VAT charge: a receivable the journal books (no FOCUS row)


# Kinds that are taxes (ChargeCategory Tax: no SKU, price or quantity) and kinds that are a site's, not a node's.
TAX_KINDS = frozenset({ChargeKind.ENERGY_TAX, ChargeKind.VAT})
SITE_KINDS = frozenset({ChargeKind.FIXED_CHARGE, ChargeKind.DEMAND_CHARGE})


# The FOCUS 1.2 columns written, mandatory ones and the conditional ones the product supports, then the
# custom (x_) columns. Order: as the specification lists them (alphabetical), then the x_ columns.
FOCUS_COLUMNS = [
    "AvailabilityZone",
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "EffectiveCost",
    "InvoiceId",
    "InvoiceIssuerName",
    "ListCost",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "ServiceSubcategory",
    "SkuId",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
]
CUSTOM_COLUMNS = [
    "x_ChargeKind",
    "x_Tenure",
    "x_LedgerHours",
    "x_GpuHours",
    "x_ItKwh",
    "x_FacilityKwh",
    "x_LocationCo2eG",
    "x_MarketCo2eG",
    "x_EmbodiedCo2eG",
    "x_EnergyMethod",
]
COLUMNS = FOCUS_COLUMNS + CUSTOM_COLUMNS

SERVICE_NAME = "GPU inference nodes"
SERVICE_CATEGORY = "AI and Machine Learning"
SERVICE_SUBCATEGORY = "Generative AI"
RESOURCE_TYPE = "GPU node"
SITE_RESOURCE_TYPE = "Site"
ELECTRICITY_SKU = "electricity"
# A correction to a closed (previously invoiced) billing period; every other row's ChargeClass is null.
CORRECTION = "Correction"

_DESCRIPTIONS = {
    ChargeKind.RENT: "rent of {node}",
    ChargeKind.DEPRECIATION: "depreciation of {node} (owned)",
    ChargeKind.OPEX: "running cost of {node} (owned)",
    ChargeKind.ELECTRICITY: "electricity of {node} at {site}",
    ChargeKind.PURCHASE: "purchase of {node}",
    ChargeKind.ENERGY_TAX: "energy tax on the electricity of {node} at {site}",
    ChargeKind.VAT: "VAT on the rent, running cost and electricity of {node} at {site}",
    ChargeKind.FIXED_CHARGE: "fixed monthly charge of the tariff at {site}",
    ChargeKind.DEMAND_CHARGE: "demand charge on the month's peak kW at {site}",
}

# Rent, depreciation and running cost repeat every hour held, used or not; electricity only as energy is drawn.
_FREQUENCIES = {
    ChargeKind.RENT: "Recurring",
    ChargeKind.DEPRECIATION: "Recurring",
    ChargeKind.OPEX: "Recurring",
    ChargeKind.ELECTRICITY: "Usage-Based",
    ChargeKind.PURCHASE: "One-Time",
    ChargeKind.ENERGY_TAX: "Usage-Based",
    ChargeKind.VAT: "Usage-Based",
    ChargeKind.FIXED_CHARGE: "Recurring",
    ChargeKind.DEMAND_CHARGE: "Usage-Based",
}


@dataclass(frozen=True)
class Account:
    """Who and where a charge belongs to: organization (billing account), fleet (sub account), site, node."""

    organization_id: int
    organization_name: str
    fleet_id: int
    fleet_name: str
    site_name: str
    grid_zone: str
    node_id: int
    hostname: str
    tenure: str  # rented or owned, from the price in force; empty on a site's charges
    site_id: int = 0


@dataclass(frozen=True)
class Footprint:
    """What a node-hour line measured, carried once per node and charge period (on its first row)."""

    ledger_hours: int = 0
    gpu_h: Decimal = ZERO
    it_kwh: Decimal = ZERO
    facility_kwh: Decimal = ZERO
    location_co2e_g: Decimal | None = ZERO
    market_co2e_g: Decimal | None = ZERO
    embodied_co2e_g: Decimal = ZERO
    energy_methods: frozenset[str] = frozenset()
    corrections: int = 0  # ledger corrections added into the row (their deltas, not lines: ledger_hours 0)

    def __add__(self, other: Footprint) -> Footprint:
        return Footprint(
            ledger_hours=self.ledger_hours + other.ledger_hours,
            corrections=self.corrections + other.corrections,
            gpu_h=self.gpu_h + other.gpu_h,
            it_kwh=self.it_kwh + other.it_kwh,
            facility_kwh=self.facility_kwh + other.facility_kwh,
            location_co2e_g=_sum_known(self.location_co2e_g, other.location_co2e_g),
            market_co2e_g=_sum_known(self.market_co2e_g, other.market_co2e_g),
            embodied_co2e_g=self.embodied_co2e_g + other.embodied_co2e_g,
            energy_methods=self.energy_methods | other.energy_methods,
        )


def _sum_known(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    """A sum of which any part is unknown is unknown (an hour without intensity is not 0 g)."""
    return None if a is None or b is None else a + b


@dataclass(frozen=True)
class Charge:
    """One charge kind of one node over ``[start, end)``, in ``currency``.

    ``billed``: cash as invoiced; ``effective``: amortized. ``consumed`` and
    ``pricing`` quantities are in ``consumed_unit`` and ``pricing_unit``.
    ``footprint``: the node's measured figures, on one charge per node and period.
    """

    kind: ChargeKind
    account: Account
    start: datetime
    end: datetime
    currency: str
    billed: Decimal
    effective: Decimal
    pricing_quantity: Decimal | None  # None: a correction that restates an amount, not a quantity
    pricing_unit: str | None
    consumed_quantity: Decimal | None
    consumed_unit: str | None
    sku_id: str | None  # None: a tax (no SKU)
    sku_price_id: str | None
    correction: bool = False
    # A correction: the start of the billing period it is booked in (its charge period is the hour it
    # restates, in a closed period), and its cause (``accounting.ledger.corrections.Cause``).
    booked_in: datetime | None = None
    cause: str | None = None
    footprint: Footprint | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[Any, ...]:
        """What charges of one node and period are added up by: a row per kind and price (and a correction's
        billing period and cause)."""
        return (self.kind, self.sku_price_id, self.currency, self.correction, self.booked_in, self.cause)

    def __add__(self, other: Charge) -> Charge:
        footprint = self.footprint
        if other.footprint is not None:
            footprint = other.footprint if footprint is None else footprint + other.footprint
        return replace(
            self,
            start=min(self.start, other.start),
            end=max(self.end, other.end),
            billed=self.billed + other.billed,
            effective=self.effective + other.effective,
            pricing_quantity=_sum_known(self.pricing_quantity, other.pricing_quantity),
            consumed_quantity=_sum_known(self.consumed_quantity, other.consumed_quantity),
            footprint=footprint,
        )


def decimal_text(value: Decimal | None) -> str | None:
    """A Decimal in plain notation without trailing zeros (``5.54``, ``0``, ``1200``), never via float."""
    if value is None:
        return None
    text = f"{value:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def billing_period(at: datetime) -> tuple[datetime, datetime]:
    """The UTC calendar month holding ``at``: the billing period of every charge that starts in it."""
    return month_bounds(at)


def focus_row(charge: Charge) -> dict[str, Any]:
    """The charge as one FOCUS 1.2 row: column name → value (``None`` written as an empty, null cell)."""
    account = charge.account
    usage = charge.kind is not ChargeKind.PURCHASE and charge.kind not in TAX_KINDS
    # A charge is billed in the month of its charge period; a correction in the month it is booked in.
    billing_start, billing_end = billing_period(charge.booked_in or charge.start)
    row: dict[str, Any] = {
        "AvailabilityZone": account.site_name,
        "BilledCost": decimal_text(charge.billed),
        "BillingAccountId": f"org-{account.organization_id}",
        "BillingAccountName": account.organization_name,
        "BillingCurrency": charge.currency,
        "BillingPeriodEnd": billing_end,
        "BillingPeriodStart": billing_start,
        "ChargeCategory": _category(charge.kind),
        "ChargeClass": CORRECTION if charge.correction else None,
        "ChargeDescription": _description(charge),
        "ChargeFrequency": _FREQUENCIES[charge.kind],
        "ChargePeriodEnd": charge.end,
        "ChargePeriodStart": charge.start,
        "ConsumedQuantity": decimal_text(charge.consumed_quantity) if usage else None,
        "ConsumedUnit": charge.consumed_unit if usage else None,
        # No list or negotiated price apart from the one charged: list = contracted = the cost at its price,
        # the amortized one for depreciation (billed 0, as usage covered by an upfront purchase is).
        "ContractedCost": decimal_text(_at_price(charge)),
        "EffectiveCost": decimal_text(charge.effective),
        # FOCUS appendix "Origination of cost data", scenario 5.1: an internal offering on premises names
        # itself as provider, publisher and invoice issuer (the suppliers are not in the data model).
        "InvoiceIssuerName": account.organization_name,
        # A provisional invoice per billing account, billing period and currency (invoiceid.md: "MAY be generated
        # prior to an invoice being issued"): the month's internal charge-back of the organization's fleets.
        "InvoiceId": f"org-{account.organization_id}-{billing_start:%Y-%m}-{charge.currency}",
        "ListCost": decimal_text(_at_price(charge)),
        "PricingCategory": None if charge.kind in TAX_KINDS else "Standard",
        "PricingQuantity": decimal_text(charge.pricing_quantity),
        "PricingUnit": charge.pricing_unit,
        "ProviderName": account.organization_name,
        "PublisherName": account.organization_name,
        "RegionId": account.grid_zone,
        "RegionName": account.grid_zone,
        "ResourceId": f"node-{account.node_id}",
        "ResourceName": account.hostname,
        "ResourceType": RESOURCE_TYPE,
        "ServiceCategory": SERVICE_CATEGORY,
        "ServiceName": SERVICE_NAME,
        "ServiceSubcategory": SERVICE_SUBCATEGORY,
        "SkuId": charge.sku_id,
        "SkuPriceId": charge.sku_price_id,
        "SubAccountId": f"fleet-{account.fleet_id}",
        "SubAccountName": account.fleet_name,
        "x_ChargeKind": charge.kind.value,
        "x_Tenure": account.tenure or None,
    }
    if charge.kind in SITE_KINDS:  # the site's charge: the site is the resource, no fleet is its sub account
        row |= {"ResourceId": f"site-{account.site_id}", "ResourceName": account.site_name,
                "ResourceType": SITE_RESOURCE_TYPE, "SubAccountId": None, "SubAccountName": None}  # fmt: skip
    return row | _footprint_columns(charge.footprint)


def _category(kind: ChargeKind) -> str:
    """Usage, Purchase or Tax (chargecategory.md); a tax row has no SKU, price or quantity (the charge builds it so)."""
    if kind in TAX_KINDS:
        return "Tax"
    return "Purchase" if kind is ChargeKind.PURCHASE else "Usage"


def _at_price(charge: Charge) -> Decimal:
    """The charge at its price: what is billed, or for depreciation (billed 0) the amortized cost; a
    correction's may be negative."""
    return charge.effective if charge.kind is ChargeKind.DEPRECIATION else charge.billed


def _description(charge: Charge) -> str:
    """What the row charges; a correction says so, and why ("rent of h100-a, correction: late_telemetry")."""
    account = charge.account
    text = _DESCRIPTIONS[charge.kind].format(node=account.hostname, site=account.site_name)
    return f"{text}, correction: {charge.cause}" if charge.correction else text


def _footprint_columns(footprint: Footprint | None) -> dict[str, Any]:
    if footprint is None:
        return {}
    return {
        "x_LedgerHours": footprint.ledger_hours,
        "x_GpuHours": decimal_text(footprint.gpu_h),
        "x_ItKwh": decimal_text(footprint.it_kwh),
        "x_FacilityKwh": decimal_text(footprint.facility_kwh),
        "x_LocationCo2eG": decimal_text(footprint.location_co2e_g),
        "x_MarketCo2eG": decimal_text(footprint.market_co2e_g),
        "x_EmbodiedCo2eG": decimal_text(footprint.embodied_co2e_g),
        "x_EnergyMethod": "+".join(sorted(footprint.energy_methods)) or None,
    }
