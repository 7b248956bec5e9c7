"""One node-hour priced and weighed: the ``NodeHourLine`` and the formulas behind it.

Formulas (DESIGN.md, "Money and carbon"), all in ``Decimal``, nothing rounded::

    it_kwh        = energy_j / 3.6e6
    facility_kwh  = it_kwh x pue
    electricity   = facility_kwh x tariff price       (0, shown INCLUDED, when the rent includes power;
                                                      None, shown UNPRICED, when no tariff is in force)
    hardware      = rent + depreciation + opex        (each a figure of its own on the line)
    rent          = rate x held_h | rate x GPU-hours  (rented, per node or per GPU; GPU-hours: of the
                                                      cards installed in the hour, ``NodeHourInput.gpu_h``)
    depreciation  = by the book over the held span    (owned: ``accounting.ledger.depreciation``, from
                                                      in-service to the end of life or disposal, plus
                                                      the disposal loss in the disposal hour)
    opex          = opex_per_h x held_h               (owned)
    cost          = electricity + hardware + energy_tax + vat_cost   (an unpriced electricity line adds nothing)
    net or gross  a price or tariff that includes VAT is made net first (``accounting.ledger.tax.net_of_vat``);
                                                      one with no tax in force stays as it is: ``vat_unknown``
    energy_tax    = facility_kwh x energy_tax_per_kwh (the site's tax in force; none when the rent includes power)
    vat_amount    = vat_rate x (rent + opex + electricity), net; ``vat_cost`` its non-recoverable part
    price in another currency: rent, depreciation and opex x the month's average rate into the line's
                                                      currency (``price_in_line_currency``); no rate: all
                                                      three 0 on the line, their sum kept apart in
                                                      ``hardware_cost_unconverted`` (price currency), counted
    location_g    = facility_kwh x location intensity   (None when no intensity is known)
    market_g      = facility_kwh x market factor        (None when no factor is known)
    direct_g      = facility_kwh x location direct factor (Scope 2; None when no direct factor is known)
    embodied_g    = see ``accounting.ledger.embodied``, per GPU plus the host share, over the hours each
                                                      was held inside its own life (``gpu_embodied_h``)

Energy, and its boundary: ``gpu_kwh`` is the GPU boundary (the boards, as NVML
measures them: what the study measured); ``it_kwh`` is the node boundary when
the node's own meter measured it (``energy_method`` ``node_meter``: GPUs, CPUs,
memory, fans and power supplies) or the GPUs' measured energy plus the host's
modelled from its hardware profile (``modelled``), else the GPU boundary (``gpu_sum``).

Idle: a GPU is idle for the hours it was installed while the node was held when
it served no tokens and its mean utilization is below the policy threshold
(unknown utilization: tokens alone decide). **Share rule**: each GPU carries a
share of the node's hardware cost in proportion to its GPU-hours
(``hardware x its hours / GPU-hours``; equal when every card was there all
hour) plus the electricity of its own energy and an equal share of the host's
(node IT energy minus all GPUs'), at the line's PUE and price, and the taxes in
cost on those (energy tax on its kWh, non-recoverable VAT on its rent, running
cost and electricity). Those shares add up to the line's cost, so idle cost is
the part of the cost paid by idle GPUs, never more than the line, and a wholly
idle hour's idle cost is its cost. (Electricity included in the
rent or unpriced adds nothing to idle cost, as it adds nothing to cost.)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from accounting.ledger.depreciation import depreciation_cost
from accounting.ledger.embodied import EmbodiedG, embodied_co2e_g, utilization_weight
from accounting.ledger.fx import FxRate, RateKind, converted
from accounting.ledger.inputs import (
    DEFAULT_POLICY,
    AmortizationMethod,
    GpuHourInput,
    IntensityFactor,
    LedgerInputError,
    LedgerPolicy,
    NodeHourInput,
    Pricing,
    RatePer,
    RentedPricing,
)
from accounting.ledger.tax import LineTaxes, line_taxes, net_of_vat
from accounting.ledger.units import ONE, ZERO, kwh_from_j
from accounting.tariff import TariffPrice


class EnergyMethod(enum.StrEnum):
    NODE_METER = "node_meter"  # the node boundary, measured by the node's own meter
    MODELLED = "modelled"  # the node boundary: the GPUs measured, the host modelled from its profile
    GPU_SUM = "gpu_sum"  # the GPU boundary only


class ElectricityStatus(enum.StrEnum):
    PRICED = "priced"
    INCLUDED = "included"
    UNPRICED = "unpriced"


NO_PRICE_ID = "unpriced"
"""``pricing_price_id`` of a line held with no price in force: its hardware cost is missing, not zero."""


@dataclass(frozen=True)
class NodeHourLine:
    """Cost and carbon of one node during one UTC hour, unrounded.

    Money in ``currency``; energy kWh; carbon gCO2e; time hours (``observed_s``
    in seconds). ``cost`` includes ``electricity_cost`` only when it is known.
    ``embodied_unknown_gpu_h``: GPU-hours held whose model has no embodied data.
    Trace fields say which method, price and factors produced the numbers.
    """

    node_id: str
    hour_start: datetime
    currency: str
    held_h: Decimal
    observed_s: Decimal
    bridged_s: Decimal
    gpu_count: int
    it_kwh: Decimal
    gpu_kwh: Decimal
    facility_kwh: Decimal
    electricity_cost: Decimal | None
    hardware_cost: Decimal  # rent_cost + depreciation_cost + opex_cost
    rent_cost: Decimal
    depreciation_cost: Decimal
    opex_cost: Decimal
    cost: Decimal
    location_co2e_g: Decimal | None
    market_co2e_g: Decimal | None
    embodied_co2e_g: EmbodiedG
    embodied_unknown_gpu_h: Decimal
    gpu_h: Decimal
    prompt_tokens: int
    generation_tokens: int
    idle_gpu_h: Decimal
    idle_cost: Decimal
    idle_facility_kwh: Decimal
    # trace
    energy_method: EnergyMethod
    electricity_status: ElectricityStatus
    tariff_price_per_kwh: Decimal | None
    tariff_price_id: str | None
    pricing_price_id: str
    location_source: str | None
    market_source: str | None
    amortization: AmortizationMethod
    # Of prompt_tokens, served from the prefix cache (None: no server exposed the counter).
    cached_prompt_tokens: int | None = None
    # Requests the node's serving endpoints answered in the hour (SCI's functional unit, ``reports.sci``).
    requests: int = 0
    # A price in another currency than the line's: which, the average rate used and its month and source;
    # with no rate, the hardware cost in that currency, left out of ``cost`` (unconverted, never zero).
    price_currency: str | None = None
    price_fx_rate: Decimal | None = None
    price_fx_month: date | None = None
    price_fx_source: str | None = None
    hardware_cost_unconverted: Decimal | None = None
    # The site's taxes on the hour (``accounting.ledger.tax``): energy tax (in cost), VAT on the net rent,
    # running cost and electricity (``vat_amount``) and its non-recoverable part (``vat_cost``, in cost);
    # ``tax_id`` the tax row in force; ``vat_unknown``: a gross price with no tax in force, kept as it is.
    energy_tax_cost: Decimal = ZERO
    vat_amount: Decimal = ZERO
    vat_cost: Decimal = ZERO
    tax_id: str | None = None
    vat_unknown: bool = False
    # The location factor's basis (``lifecycle`` or ``direct``), and the same kWh at the hour's direct
    # factor where the grid source gives one (Scope 2 takes it; ``location_co2e_g`` stays as SCI and the
    # per-token figures weigh it). None: no direct factor known for the hour.
    location_basis: str | None = None
    location_direct_co2e_g: Decimal | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.generation_tokens


def line_columns(line: NodeHourLine) -> dict[str, Any]:
    """The line as flat columns, named as the stored ledger's: the one list of what a line holds.

    Its own fields, in order, with the embodied range as ``embodied_co2e_g_low /
    _central / _high``, enumerations as their values, and ``gpu_count`` as given.
    """
    columns: dict[str, Any] = {}
    for f in fields(line):
        value = getattr(line, f.name)
        if isinstance(value, EmbodiedG):
            columns |= {f"{f.name}_{end}": getattr(value, end) for end in ("low", "central", "high")}
        else:
            columns[f.name] = value.value if isinstance(value, enum.Enum) else value
    return columns


def node_it_energy_j(node: NodeHourInput) -> tuple[Decimal, EnergyMethod]:
    """The node's IT energy in J and how it was obtained; a meter below its GPUs' sum raises."""
    gpu_j = sum((gpu.energy_j for gpu in node.gpus), ZERO)
    if node.node_energy_j is None and node.host_modelled_j is not None:
        return gpu_j + node.host_modelled_j, EnergyMethod.MODELLED
    if node.node_energy_j is None:
        return gpu_j, EnergyMethod.GPU_SUM
    if node.node_energy_j < gpu_j:
        raise LedgerInputError(f"{node.node_id} {node.hour_start}: node meter {node.node_energy_j} J < GPUs {gpu_j} J")
    return node.node_energy_j, EnergyMethod.NODE_METER


def facility_kwh(it_kwh: Decimal, pue: Decimal) -> Decimal:
    """Facility energy in kWh: IT energy in kWh x PUE."""
    return it_kwh * pue


def electricity_cost(
    facility_kwh: Decimal, pricing: Pricing, tariff: TariffPrice | None
) -> tuple[Decimal | None, ElectricityStatus]:
    """Electricity cost (currency) of ``facility_kwh`` and whether it is priced, included or unpriced."""
    if isinstance(pricing, RentedPricing) and pricing.includes_power:
        return ZERO, ElectricityStatus.INCLUDED
    if tariff is None:
        return None, ElectricityStatus.UNPRICED
    return tariff_electricity_cost(facility_kwh, tariff), ElectricityStatus.PRICED


def tariff_electricity_cost(facility_kwh: Decimal, tariff: TariffPrice) -> Decimal:
    """Electricity cost (currency) of ``facility_kwh`` priced at ``tariff`` (the hour's price per kWh)."""
    return facility_kwh * tariff.price_per_kwh


def line_cost(hardware_cost: Decimal, electricity_cost: Decimal | None, taxes_in_cost: Decimal = ZERO) -> Decimal:
    """A node-hour's cost (currency): hardware plus electricity plus the taxes that are a cost (energy tax,
    non-recoverable VAT); unpriced electricity (``None``) adds nothing."""
    return hardware_cost + (electricity_cost or ZERO) + taxes_in_cost


def hardware_cost(pricing: Pricing, held_h: Decimal, gpu_h: Decimal) -> Decimal:
    """Hardware cost (currency) of holding the node ``held_h`` hours with ``gpu_h`` GPU-hours installed,
    undated: capex per hour with no end (the what-if replay's); a line's is ``hardware_costs``."""
    return undated_hardware_costs(pricing, held_h, gpu_h).total


def undated_hardware_costs(pricing: Pricing, held_h: Decimal, gpu_h: Decimal) -> HardwareCost:
    """``hardware_cost`` by kind: rent, or capex per hour with no end (depreciation) and running cost."""
    if isinstance(pricing, RentedPricing):
        return HardwareCost(rent=pricing.rate_per_h * (gpu_h if pricing.per is RatePer.GPU else held_h))
    depreciation = pricing.capex / pricing.lifetime_h * held_h
    return HardwareCost(depreciation=depreciation, opex=opex_cost(pricing.opex_per_h, held_h))


@dataclass(frozen=True)
class HardwareCost:
    """A node-hour's hardware cost (currency), by kind: cash rent, non-cash depreciation, running cost."""

    rent: Decimal = ZERO
    depreciation: Decimal = ZERO
    opex: Decimal = ZERO

    @property
    def total(self) -> Decimal:
        return self.rent + self.depreciation + self.opex


def opex_cost(opex_per_h: Decimal, held_h: Decimal) -> Decimal:
    """An owned node's running cost over the hours held, in the price's currency (the FOCUS export splits an
    unconverted hardware cost with it too)."""
    return opex_per_h * held_h


def hardware_costs(node: NodeHourInput) -> HardwareCost:
    """The node-hour's rent, depreciation (by the book, over the held span) and running cost, as priced
    (gross where the price includes VAT: ``net_hardware_costs`` makes them net)."""
    pricing = node.pricing
    if isinstance(pricing, RentedPricing) or pricing.asset is None:
        return undated_hardware_costs(pricing, node.held_h, node.gpu_h)
    opex = opex_cost(pricing.opex_per_h, node.held_h)
    return HardwareCost(depreciation=depreciation_cost(pricing.asset, *node.held_span), opex=opex)


def net_hardware_costs(node: NodeHourInput) -> tuple[HardwareCost, bool]:
    """The hardware costs net of VAT (``net_of_vat``), and whether a gross price stayed gross (no tax)."""
    costs = hardware_costs(node)
    includes_vat = node.pricing.includes_vat and node.pricing.price_id != NO_PRICE_ID
    parts = [
        net_of_vat(part, includes_vat=includes_vat, tax=node.tax)
        for part in (costs.rent, costs.depreciation, costs.opex)
    ]
    return HardwareCost(*(part.amount for part in parts)), any(part.vat_unknown for part in parts)


def net_tariff(node: NodeHourInput) -> tuple[TariffPrice | None, bool]:
    """The hour's tariff price net of VAT (``net_of_vat``), and whether a gross price stayed gross (no tax)."""
    if node.tariff is None:
        return None, False
    net = net_of_vat(node.tariff.price_per_kwh, includes_vat=node.tariff.includes_vat, tax=node.tax)
    return TariffPrice(net.amount, node.tariff.price_id), net.vat_unknown


def hour_taxes(node: NodeHourInput, facility: Decimal, costs: HardwareCost, electricity: Decimal | None,
               status: ElectricityStatus) -> LineTaxes:  # fmt: skip
    """The hour's energy tax and VAT on its net rent, running cost and electricity (``line_taxes``)."""
    energy_taxed = status is not ElectricityStatus.INCLUDED
    base = vat_base(costs, electricity)
    return line_taxes(tax=node.tax, facility_kwh=facility, energy_taxed=energy_taxed, vat_base=base)


def vat_base(costs: HardwareCost, electricity: Decimal | None) -> Decimal:
    """What VAT is charged on (currency, net): rent, running cost and electricity; not depreciation (a
    purchase's VAT is on its purchase invoice); unpriced electricity (``None``) adds nothing."""
    return costs.rent + costs.opex + (electricity or ZERO)


@dataclass(frozen=True)
class PriceConversion:
    """A price's hardware cost in the line's currency, and the trace of its conversion.

    ``currency`` ``None``: the price is in the line's currency (no conversion). ``rate`` ``None`` with a
    ``currency``: no rate held; ``costs`` is then zero and ``unconverted`` holds the cost in ``currency``.
    """

    costs: HardwareCost
    currency: str | None = None
    rate: FxRate | None = None
    unconverted: Decimal | None = None


def price_in_line_currency(costs: HardwareCost, node: NodeHourInput) -> PriceConversion:
    """The one conversion of a price into the line's currency: at ``node.price_fx``, the month's average
    rate (IAS 21.22), or, with none, nothing on the line and the whole cost kept apart as unconverted."""
    currency = node.pricing.currency
    if currency is None or currency == node.currency:
        return PriceConversion(costs)
    rate = node.price_fx
    if rate is None:
        return PriceConversion(HardwareCost(), currency, None, costs.total)
    if (rate.currency, rate.quote_currency, rate.kind) != (currency, node.currency, RateKind.AVERAGE):
        raise LedgerInputError(f"{node.node_id}: rate {rate.currency}/{rate.quote_currency} {rate.kind} "
                               f"cannot convert a {currency} price into {node.currency}")  # fmt: skip
    line = HardwareCost(converted(costs.rent, rate), converted(costs.depreciation, rate), converted(costs.opex, rate))
    return PriceConversion(line, currency, rate)


def operational_co2e_g(facility_kwh: Decimal, factor: IntensityFactor | None) -> Decimal | None:
    """gCO2e of ``facility_kwh`` at ``factor`` (gCO2e/kWh); ``None`` when the factor is unknown."""
    return None if factor is None else facility_kwh * factor.g_per_kwh


def direct_co2e_g(facility_kwh: Decimal, factor: IntensityFactor | None) -> Decimal | None:
    """gCO2e of ``facility_kwh`` at the factor's direct (combustion) figure; ``None`` when that is unknown."""
    return None if factor is None or factor.direct_g_per_kwh is None else facility_kwh * factor.direct_g_per_kwh


def node_embodied_co2e_g(node: NodeHourInput, method: AmortizationMethod) -> EmbodiedG:
    """Embodied gCO2e of the node's GPUs and host share over its held hours inside each one's life."""
    total = EmbodiedG()
    for gpu in node.gpus:
        if gpu.embodied is not None:
            weight = utilization_weight(method, gpu.mean_util_pct)
            total += embodied_co2e_g(gpu.embodied, node.gpu_embodied_h(gpu), weight)
    if node.host_embodied is not None:
        weight = utilization_weight(method, _mean_util_pct(node))
        total += embodied_co2e_g(node.host_embodied, node.host_embodied_held_h, weight)
    return total


def _mean_util_pct(node: NodeHourInput) -> Decimal | None:
    known = [gpu.mean_util_pct for gpu in node.gpus if gpu.mean_util_pct is not None]
    return sum(known, ZERO) / len(known) if known else None


def is_idle(gpu: GpuHourInput, policy: LedgerPolicy) -> bool:
    """No tokens served and utilization below the threshold (or unknown)."""
    if gpu.tokens_served:
        return False
    return gpu.mean_util_pct is None or gpu.mean_util_pct < policy.idle_util_threshold_pct


def gpu_share_facility_kwh(node: NodeHourInput, gpu: GpuHourInput, it_energy_j: Decimal) -> Decimal:
    """Facility kWh carried by ``gpu``: its own energy plus an equal share of the host's."""
    host_j = it_energy_j - sum((other.energy_j for other in node.gpus), ZERO)
    return facility_kwh(kwh_from_j(gpu.energy_j + host_j / len(node.gpus)), node.pue)


@dataclass(frozen=True)
class _Idle:
    gpu_h: Decimal = ZERO
    cost: Decimal = ZERO
    facility_kwh: Decimal = ZERO


def _idle(
    node: NodeHourInput, it_energy_j: Decimal, costs: HardwareCost, charged: TariffPrice | None,
    status: ElectricityStatus, policy: LedgerPolicy,
) -> _Idle:  # fmt: skip
    """Idle GPU-hours, cost and facility kWh of the node-hour, under the share rule above: an idle GPU's share
    of the hardware, its electricity, and the taxes on them (``hour_taxes``), so that a wholly idle hour's idle
    cost is its cost."""
    idle, gpu_h = _Idle(), node.gpu_h
    for gpu in (gpu for gpu in node.gpus if is_idle(gpu, policy)):
        kwh = gpu_share_facility_kwh(node, gpu, it_energy_j)
        share = node.gpu_held_h(gpu) / gpu_h if gpu_h else ONE / len(node.gpus)
        hardware = HardwareCost(costs.rent * share, costs.depreciation * share, costs.opex * share)
        electricity = tariff_electricity_cost(kwh, charged) if charged is not None else None
        taxes = hour_taxes(node, kwh, hardware, electricity, status)
        cost = line_cost(hardware.total, electricity, taxes.in_cost)
        idle = _Idle(idle.gpu_h + node.gpu_held_h(gpu), idle.cost + cost, idle.facility_kwh + kwh)
    return idle


def build_node_hour_line(node: NodeHourInput, policy: LedgerPolicy = DEFAULT_POLICY) -> NodeHourLine:
    """Price and weigh one node-hour. Pure: same input, same line, to the last digit."""
    it_energy_j, energy_method = node_it_energy_j(node)
    facility = facility_kwh(kwh_from_j(it_energy_j), node.pue)
    tariff, tariff_vat_unknown = net_tariff(node)
    electricity, status = electricity_cost(facility, node.pricing, tariff)
    net_costs, price_vat_unknown = net_hardware_costs(node)
    conversion = price_in_line_currency(net_costs, node)
    costs = conversion.costs
    hardware = costs.total
    charged = tariff if status is ElectricityStatus.PRICED else None
    taxes = hour_taxes(node, facility, costs, electricity, status)
    idle = _idle(node, it_energy_j, costs, charged, status, policy)
    return NodeHourLine(
        node_id=node.node_id,
        hour_start=node.hour_start,
        currency=node.currency,
        held_h=node.held_h,
        observed_s=node.observed_s,
        bridged_s=node.bridged_s,
        gpu_count=len(node.gpus),
        it_kwh=kwh_from_j(it_energy_j),
        gpu_kwh=kwh_from_j(sum((gpu.energy_j for gpu in node.gpus), ZERO)),
        facility_kwh=facility,
        electricity_cost=electricity,
        hardware_cost=hardware,
        rent_cost=costs.rent,
        depreciation_cost=costs.depreciation,
        opex_cost=costs.opex,
        cost=line_cost(hardware, electricity, taxes.in_cost),
        location_co2e_g=operational_co2e_g(facility, node.location),
        market_co2e_g=operational_co2e_g(facility, node.market),
        embodied_co2e_g=node_embodied_co2e_g(node, policy.amortization),
        embodied_unknown_gpu_h=sum((node.gpu_held_h(gpu) for gpu in node.gpus if gpu.embodied is None), ZERO),
        gpu_h=node.gpu_h,
        prompt_tokens=node.prompt_tokens,
        generation_tokens=node.generation_tokens,
        idle_gpu_h=idle.gpu_h,
        idle_cost=idle.cost,
        idle_facility_kwh=idle.facility_kwh,
        energy_method=energy_method,
        electricity_status=status,
        tariff_price_per_kwh=charged.price_per_kwh if charged else None,
        tariff_price_id=charged.price_id if charged else None,
        pricing_price_id=node.pricing.price_id,
        location_source=node.location.source if node.location else None,
        market_source=node.market.source if node.market else None,
        amortization=policy.amortization,
        cached_prompt_tokens=node.cached_prompt_tokens,
        requests=node.requests,
        price_currency=conversion.currency,
        price_fx_rate=conversion.rate.rate if conversion.rate else None,
        price_fx_month=conversion.rate.month if conversion.rate else None,
        price_fx_source=_rate_source(conversion.rate),
        hardware_cost_unconverted=conversion.unconverted,
        energy_tax_cost=taxes.energy_tax_cost,
        vat_amount=taxes.vat_amount,
        vat_cost=taxes.vat_cost,
        tax_id=taxes.tax_id,
        vat_unknown=price_vat_unknown or (tariff_vat_unknown and status is ElectricityStatus.PRICED),
        location_basis=node.location.basis if node.location else None,
        location_direct_co2e_g=direct_co2e_g(facility, node.location),
    )


def _rate_source(rate: FxRate | None) -> str | None:
    if rate is None:
        return None
    return f"1 / {rate.quote_currency}/{rate.currency} ({rate.source})" if rate.inverted else rate.source
