"""A site's taxes on one node-hour: net or gross prices, VAT and energy tax, as pure arithmetic.

Rules, chosen once and used by every line (``accounting.ledger.line``)::

    net           = gross / (1 + vat_rate)        a price that includes VAT, at the hour's rate (``net_of_vat``);
                                                  no tax in force: kept as it is, the line counted vat_unknown
    energy_tax    = facility_kwh x energy_tax_per_kwh   (a cost; none where the rent includes power)
    vat_amount    = vat_rate x (rent + opex + electricity), all net   (not on depreciation: a purchase's VAT
                                                  is on its purchase invoice, not on the hours that use it)
    vat_cost      = vat_amount when the VAT is not recoverable, else 0   (recoverable input VAT is a
                                                  receivable, never a cost)

Money in the line's currency (energy tax: the site's currency per facility kWh),
all ``Decimal``, nothing rounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from accounting.ledger.units import ONE, ZERO


@dataclass(frozen=True)
class SiteTaxRates:
    """The tax of a site in force at an hour: ``vat_rate`` a fraction (0.25 = 25 %), ``energy_tax_per_kwh``
    in the site's currency per facility kWh; ``tax_id`` the trace tag stored on lines (``tax-3``)."""

    vat_rate: Decimal
    vat_recoverable: bool
    energy_tax_per_kwh: Decimal
    tax_id: str

    def __post_init__(self) -> None:
        if not ZERO <= self.vat_rate <= ONE:
            raise ValueError(f"vat_rate must be a fraction within 0-1, got {self.vat_rate}")
        if self.energy_tax_per_kwh < 0:
            raise ValueError(f"energy_tax_per_kwh must not be negative, got {self.energy_tax_per_kwh}")


@dataclass(frozen=True)
class NetAmount:
    """An amount made net of VAT; ``vat_unknown``: it was gross and no tax was in force to take VAT out."""

    amount: Decimal
    vat_unknown: bool = False


def net_of_vat(amount: Decimal, *, includes_vat: bool, tax: SiteTaxRates | None) -> NetAmount:
    """The one rule turning a price into a net one: ``gross / (1 + vat_rate)`` at the hour's tax.

    A net price is returned as it is. A gross price with no tax in force cannot be made
    net: it is kept as it is and marked ``vat_unknown`` (counted, never silently).
    """
    if not includes_vat:
        return NetAmount(amount)
    if tax is None:
        return NetAmount(amount, vat_unknown=True)
    return NetAmount(amount / (ONE + tax.vat_rate))


@dataclass(frozen=True)
class LineTaxes:
    """A node-hour's tax lines: energy tax (a cost), VAT on its net amounts, and the part of VAT in cost."""

    energy_tax_cost: Decimal = ZERO
    vat_amount: Decimal = ZERO
    vat_cost: Decimal = ZERO
    tax_id: str | None = None

    @property
    def in_cost(self) -> Decimal:
        """What the taxes add to the line's cost: energy tax and non-recoverable VAT."""
        return self.energy_tax_cost + self.vat_cost


def line_taxes(*, tax: SiteTaxRates | None, facility_kwh: Decimal, energy_taxed: bool, vat_base: Decimal) -> LineTaxes:
    """The hour's taxes under ``tax`` (none in force: none); ``energy_taxed``: the site buys the power
    (not in the rent); ``vat_base``: the hour's net rent, running cost and electricity."""
    if tax is None:
        return LineTaxes()
    energy_tax = facility_kwh * tax.energy_tax_per_kwh if energy_taxed else ZERO
    vat = vat_base * tax.vat_rate
    return LineTaxes(energy_tax, vat, ZERO if tax.vat_recoverable else vat, tax.tax_id)
