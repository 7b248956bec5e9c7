"""A stored node-hour line as FOCUS charges, and charges added up to a day: pure (no Django).

One line gives a hardware charge (rent of a rented node; depreciation, and the
running cost when there is one, of an owned node) and an electricity charge
(where electricity is priced: none where the rent includes power, none where no
tariff is in force). A line held without a price in force gives no hardware
charge (its cost is unknown, not zero: the usage report counts it in
``hardware_unpriced_h``). A line whose price is in a currency no rate converted
(``hardware_cost_unconverted``, outside its cost) gives its hardware charges in
that currency (rent; or depreciation and running cost), never a zero. The node's
measured figures (kWh, CO2e) ride on the first charge of the line, so each is
written once.

A ledger correction of a locked hour (``CorrectionFigures``) gives one charge per
kind it changes, charged to the hour it restates and billed in the month it is
booked in (``correction_line_charges``); its deltas may be negative.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from accounting.ledger.line import opex_cost
from reports.focus.columns import ELECTRICITY_SKU, ZERO, Account, Charge, ChargeKind, Footprint, billing_period

if TYPE_CHECKING:  # the charges stay pure: a site's month is only read here
    from accounting.site_charges import SiteMonthCharge

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
GPU_HOURS = "GPU-Hours"
HOURS = "Hours"
KWH = "kWh"


@dataclass(frozen=True)
class PriceTerms:
    """The node price a line was priced at (``NodePrice``): rented per GPU- or node-hour, or owned."""

    price_id: str
    owned: bool
    per_gpu: bool = True
    opex_per_h: Decimal = ZERO  # owned: the running cost per hour held, in the price's currency


@dataclass(frozen=True)
class LineFigures:
    """What a stored node-hour line holds that the export reads, in the line's currency and units."""

    hour_start: datetime
    currency: str
    sku_id: str  # the hardware profile key of the node's GPUs ("unknown" or "mixed" where so labelled)
    held_h: Decimal
    gpu_h: Decimal
    hardware_cost: Decimal
    # The ledger's split of the hardware cost (``accounting.ledger``): rent, depreciation and running cost
    rent_cost: Decimal
    depreciation_cost: Decimal
    opex_cost: Decimal
    electricity_cost: Decimal | None  # None: unpriced; 0 with electricity_included: in the rent
    electricity_included: bool
    tariff_price_id: str
    facility_kwh: Decimal
    footprint: Footprint
    # No rate for the price's currency: the whole hardware cost in ``price_currency``, left out of the line's
    # cost (``accounting.ledger.line.price_in_line_currency``); its charges are billed in that currency.
    price_currency: str | None = None
    hardware_cost_unconverted: Decimal | None = None
    # The site's taxes on the line (``accounting.ledger.tax``): energy tax, VAT, and VAT's non-recoverable part.
    energy_tax_cost: Decimal = ZERO
    vat_amount: Decimal = ZERO
    vat_cost: Decimal = ZERO


def line_charges(line: LineFigures, account: Account, price: PriceTerms | None) -> list[Charge]:
    """The charges of one node-hour line, the first one carrying the line's footprint."""
    charges = _hardware_charges(line, account, price)
    if line.electricity_cost is not None and not line.electricity_included:
        charges.append(_electricity_charge(line, account))
    charges += tax_charges(line, account)
    if charges:
        charges[0] = replace(charges[0], footprint=line.footprint)
    return charges


def _charge(line: LineFigures, account: Account, kind: ChargeKind, **figures: object) -> Charge:
    figures = {"currency": line.currency} | figures
    return Charge(
        kind=kind, account=account, start=line.hour_start, end=line.hour_start + HOUR,
        **figures,  # type: ignore[arg-type]
    )  # fmt: skip


def _hardware_split(line: LineFigures, price: PriceTerms) -> tuple[str, Decimal, Decimal]:
    """The currency, hardware cost and running cost of the line's hardware charges: as the line holds them
    (its currency), or, where no rate converted the price, the unconverted cost in the price's currency, its
    running cost figured by the ledger's own rule (the line keeps no split of an unconverted cost)."""
    unconverted = line.hardware_cost_unconverted
    if unconverted is None or line.price_currency is None:
        return line.currency, line.hardware_cost, line.opex_cost
    opex = opex_cost(price.opex_per_h, line.held_h) if price.owned else ZERO
    return line.price_currency, unconverted, opex


def _hardware_charges(line: LineFigures, account: Account, price: PriceTerms | None) -> list[Charge]:
    if price is None:
        return []
    currency, hardware, opex = _hardware_split(line, price)
    sku_price = f"{price.price_id}:{{kind}}:{line.sku_id}"
    used = {"consumed_quantity": line.gpu_h, "consumed_unit": GPU_HOURS, "sku_id": line.sku_id, "currency": currency}
    if not price.owned:
        quantity, unit = (line.gpu_h, GPU_HOURS) if price.per_gpu else (line.held_h, HOURS)
        return [
            _charge(
                line, account, ChargeKind.RENT, billed=hardware, effective=hardware,
                pricing_quantity=quantity, pricing_unit=unit, sku_price_id=sku_price.format(kind="rent"), **used,
            )
        ]  # fmt: skip
    # An owned line's hardware cost as the ledger split it: depreciation and running cost (rent_cost + the two
    # is the stored hardware_cost to the last digit; an owned line's rent is 0).
    depreciation = hardware - opex
    charges = [
        _charge(
            line, account, ChargeKind.DEPRECIATION, billed=ZERO, effective=depreciation, pricing_quantity=line.held_h,
            pricing_unit=HOURS, sku_price_id=sku_price.format(kind="depreciation"), **used,
        )
    ]  # fmt: skip
    if opex:
        charges.append(
            _charge(
                line, account, ChargeKind.OPEX, billed=opex, effective=opex, pricing_quantity=line.held_h,
                pricing_unit=HOURS, sku_price_id=sku_price.format(kind="opex"), **used,
            )
        )  # fmt: skip
    return charges


def _electricity_charge(line: LineFigures, account: Account) -> Charge:
    cost = line.electricity_cost or ZERO
    return _charge(
        line, account, ChargeKind.ELECTRICITY, billed=cost, effective=cost, pricing_quantity=line.facility_kwh,
        pricing_unit=KWH, consumed_quantity=line.facility_kwh, consumed_unit=KWH, sku_id=ELECTRICITY_SKU,
        sku_price_id=line.tariff_price_id,
    )  # fmt: skip


_NO_PRICE: dict[str, object] = {"pricing_quantity": None, "pricing_unit": None, "consumed_quantity": None,
                                 "consumed_unit": None, "sku_id": None, "sku_price_id": None}  # fmt: skip


def tax_charges(line: LineFigures, account: Account) -> list[Charge]:
    """The line's taxes as Tax charges (chargecategory.md: no SKU, price or quantity): the energy tax, billed and
    a cost; the VAT, billed in full and a cost only for its non-recoverable part (recoverable input VAT is a
    receivable: EffectiveCost 0 for it). None where a tax is 0."""
    charges = []
    if line.energy_tax_cost:
        charges.append(
            _charge(line, account, ChargeKind.ENERGY_TAX, billed=line.energy_tax_cost, effective=line.energy_tax_cost,
                    **_NO_PRICE)
        )  # fmt: skip
    if line.vat_amount:
        charges.append(
            _charge(line, account, ChargeKind.VAT, billed=line.vat_amount, effective=line.vat_cost, **_NO_PRICE)
        )
    return charges


@dataclass(frozen=True)
class CorrectionFigures:
    """A ledger correction as the export reads it: the deltas it books (money in its currency, may be
    negative), the locked hour it restates, the hour it is booked at and its cause."""

    restated_hour: datetime
    booked_hour: datetime
    cause: str
    currency: str
    sku_id: str
    rent_cost: Decimal
    depreciation_cost: Decimal
    opex_cost: Decimal
    electricity_cost: Decimal
    facility_kwh: Decimal
    tariff_price_id: str  # the tariff the restated line names ("" when none)
    footprint: Footprint  # the energy and carbon deltas
    energy_tax_cost: Decimal = ZERO
    vat_amount: Decimal = ZERO
    vat_cost: Decimal = ZERO


def correction_line_charges(correction: CorrectionFigures, account: Account, price: PriceTerms | None) -> list[Charge]:
    """One charge per charge kind the correction changes, charged to the hour it restates and billed in the
    month it is booked in; the first one carries its energy and carbon deltas.

    A correction of carbon or energy alone (a revised grid value) changes no money: it is one zero charge of
    the line's first kind (its hardware kind where priced, else electricity), which carries the deltas. A
    hardware correction restates an amount, not a quantity: its pricing and consumed quantities are null
    (FOCUS allows them null on a Correction); electricity's are the facility kWh delta.
    """
    charges = [
        _correction_charge(correction, account, kind, amount, price)
        for kind, amount in _correction_amounts(correction)
        if amount
    ]
    charges += _correction_tax_charges(correction, account)
    if not charges:
        kind = ChargeKind.ELECTRICITY if price is None else _hardware_kind(price)
        charges = [_correction_charge(correction, account, kind, ZERO, price)]
    charges[0] = replace(charges[0], footprint=correction.footprint)
    return charges


def _correction_amounts(correction: CorrectionFigures) -> list[tuple[ChargeKind, Decimal]]:
    return [
        (ChargeKind.RENT, correction.rent_cost),
        (ChargeKind.DEPRECIATION, correction.depreciation_cost),
        (ChargeKind.OPEX, correction.opex_cost),
        (ChargeKind.ELECTRICITY, correction.electricity_cost),
    ]


def _correction_tax_charges(correction: CorrectionFigures, account: Account) -> list[Charge]:
    """A correction's tax deltas as Tax charges, as a line's are (``tax_charges``)."""
    start = correction.restated_hour
    booked = {"correction": True, "booked_in": billing_period(correction.booked_hour)[0], "cause": correction.cause}
    figures = [
        (ChargeKind.ENERGY_TAX, correction.energy_tax_cost, correction.energy_tax_cost),
        (ChargeKind.VAT, correction.vat_amount, correction.vat_cost),
    ]
    return [
        Charge(kind=kind, account=account, start=start, end=start + HOUR, currency=correction.currency,
               billed=billed, effective=effective, **_NO_PRICE, **booked)  # type: ignore[arg-type]
        for kind, billed, effective in figures
        if billed or effective
    ]  # fmt: skip


def _hardware_kind(price: PriceTerms) -> ChargeKind:
    return ChargeKind.DEPRECIATION if price.owned else ChargeKind.RENT


def _correction_charge(
    correction: CorrectionFigures, account: Account, kind: ChargeKind, amount: Decimal, price: PriceTerms | None
) -> Charge:
    """A correction's charge of one kind: cash billed as the line's would be (depreciation: none)."""
    start = correction.restated_hour
    quantity: dict[str, object] = {"pricing_quantity": None, "pricing_unit": None, "consumed_quantity": None,
                                   "consumed_unit": None, "sku_id": correction.sku_id}  # fmt: skip
    if kind is ChargeKind.ELECTRICITY:
        kwh = correction.facility_kwh
        quantity |= {"pricing_quantity": kwh, "pricing_unit": KWH, "consumed_quantity": kwh, "consumed_unit": KWH,
                     "sku_id": ELECTRICITY_SKU, "sku_price_id": correction.tariff_price_id or None}  # fmt: skip
    else:
        quantity["sku_price_id"] = f"{price.price_id}:{kind.value}:{correction.sku_id}" if price else None
    return Charge(
        kind=kind, account=account, start=start, end=start + HOUR, currency=correction.currency,
        billed=ZERO if kind is ChargeKind.DEPRECIATION else amount, effective=amount, correction=True,
        booked_in=billing_period(correction.booked_hour)[0], cause=correction.cause,
        **quantity,  # type: ignore[arg-type]
    )  # fmt: skip


def purchase_charge(
    *, account: Account, at: datetime, period: timedelta, currency: str, capex: Decimal, price_id: str, sku_id: str
) -> Charge:
    """An owned node's purchase: billed its price once, in the charge period holding ``at``; effective 0."""
    start = period_start(at, period)
    return Charge(
        kind=ChargeKind.PURCHASE, account=account, start=start, end=start + period, currency=currency,
        billed=capex, effective=ZERO, pricing_quantity=Decimal(1), pricing_unit="Units", consumed_quantity=None,
        consumed_unit=None, sku_id=sku_id, sku_price_id=f"{price_id}:purchase:{sku_id}",
    )  # fmt: skip


MONTHS = "Months"
KW_MONTHS = "kW-Months"


def site_month_charges(month: SiteMonthCharge, account: Account) -> list[Charge]:
    """A site's monthly tariff charges as Usage charges over their window: the fixed charge (Recurring), priced
    by the share of the month, and the demand charge (Usage-Based), priced by the month's peak kW; none at 0."""
    base = {"account": account, "start": month.start, "end": month.end, "currency": month.currency,
            "sku_id": ELECTRICITY_SKU}  # fmt: skip
    parts = (
        (ChargeKind.FIXED_CHARGE, month.fixed, month.month_share, MONTHS, "fixed"),
        (ChargeKind.DEMAND_CHARGE, month.demand, month.peak_kw, KW_MONTHS, "demand"),
    )
    return [
        Charge(kind=kind, billed=amount, effective=amount, pricing_quantity=quantity, pricing_unit=unit,
               consumed_quantity=quantity, consumed_unit=unit, sku_price_id=f"{month.tariff_id}:{name}",
               **base)  # type: ignore[arg-type]
        for kind, amount, quantity, unit, name in parts
        if amount
    ]  # fmt: skip


def period_start(at: datetime, period: timedelta) -> datetime:
    """The start of the hour (or UTC day) holding ``at``."""
    hour = at.replace(minute=0, second=0, microsecond=0)
    return hour if period == HOUR else hour.replace(hour=0)


def charges_by_period(charges: Iterable[Charge], period: timedelta) -> Iterator[Charge]:
    """Charges (ordered by node, then hour) added up per node, charge period, kind and price.

    Hourly charges pass through; by day, each node's charges of one UTC day are
    added up as they arrive, so a day is held in memory, never the whole export.
    """
    if period == HOUR:
        yield from charges
        return
    pending: dict[tuple[object, ...], Charge] = {}
    current: tuple[int, datetime] | None = None
    for charge in charges:
        start = period_start(charge.start, period)
        if (charge.account.node_id, start) != current:
            yield from pending.values()
            pending, current = {}, (charge.account.node_id, start)
        day_charge = replace(charge, start=start, end=start + period)
        key = day_charge.key
        pending[key] = pending[key] + day_charge if key in pending else day_charge
    yield from pending.values()
