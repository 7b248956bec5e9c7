"""Inputs with validity periods: what a node costs to hold, a site's electricity, PUE and market factor.

A change is a new row from its date (``valid_from``); earlier hours keep the
price they had, so history is never rewritten. Periods of one subject must not
overlap (checked in ``clean``, used by the admin and the services).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from accounting.ledger.depreciation import LifeChange, OwnedAsset, end_of_life
from accounting.ledger.in_service import in_service_at
from accounting.ledger.inputs import LedgerInputError
from accounting.tariff import tariff_from_fields
from common.currencies import currency_problem
from common.periods import hour_instant_problem, instant_problem
from fleets.models import Fleet, Node, Site

__all__ = ["NodePrice", "SiteMarketFactor", "SitePue", "SiteTariff", "SiteTax"]


def _money(verbose_name: str | None = None, **options: Any) -> models.DecimalField:
    """A price, unrounded to 6 places, never negative."""
    validators = [MinValueValidator(Decimal(0))]
    return models.DecimalField(verbose_name, max_digits=14, decimal_places=6, validators=validators, **options)


def life_changes_parse(value: Any) -> tuple[LifeChange, ...]:
    """The stored ``life_changes`` as the ledger's; ``ValueError`` naming what is wrong."""
    if not isinstance(value, list):
        raise ValueError("a list of {from, lifetime_years}")
    changes = []
    for item in value:
        try:
            effective_at = datetime.fromisoformat(str(item["from"]))
            years = Decimal(str(item["lifetime_years"]))
        except (KeyError, TypeError, ValueError, InvalidOperation):
            raise ValueError(f"each change needs from (an ISO instant) and lifetime_years: {item!r}") from None
        if effective_at.utcoffset() is None or hour_instant_problem(effective_at):
            raise ValueError(f"from must be an aware instant on the hour: {item['from']}")
        if not years.is_finite() or years <= 0:
            raise ValueError(f"lifetime_years must be positive: {item['lifetime_years']}")
        changes.append(LifeChange(effective_at, years))
    return tuple(changes)


class ValidityPeriod(models.Model):
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True, help_text="exclusive; empty: still in force")

    class Meta:
        abstract = True

    def subject_filter(self) -> dict[str, Any]:
        raise NotImplementedError

    def clean(self) -> None:
        problems = {name: hour_instant_problem(getattr(self, name)) for name in ("valid_from", "valid_to")}
        if any(problems.values()):
            raise ValidationError({name: problem for name, problem in problems.items() if problem})
        if self.valid_to is not None and self.valid_from is not None and self.valid_to <= self.valid_from:
            raise ValidationError({"valid_to": "must be after valid_from"})
        if self.valid_from is None:
            return
        overlapping = type(self)._default_manager.filter(**self.subject_filter()).exclude(pk=self.pk)
        overlapping = overlapping.filter(models.Q(valid_to__isnull=True) | models.Q(valid_to__gt=self.valid_from))
        if self.valid_to is not None:
            overlapping = overlapping.filter(valid_from__lt=self.valid_to)
        if overlapping.exists():
            raise ValidationError("this period overlaps another one; end the earlier period first")


class NodePrice(ValidityPeriod):
    """What holding a node costs: rent, or capex over a lifetime plus opex.

    With ``node`` empty it is the fleet's default; a node's own price wins where
    both are in force. Money in ``currency``; blank: the node's site currency. A price in
    another currency is converted into the line's at the month's average rate
    (``accounting.ledger.fx``), or left unconverted and counted where no rate is held.
    """

    class Kind(models.TextChoices):
        RENTED = "rented", "Rented"
        OWNED = "owned", "Owned"

    class RatePer(models.TextChoices):
        NODE = "node", "per node-hour"
        GPU = "gpu", "per GPU-hour"

    class Method(models.TextChoices):
        MONTH = "month", "Straight line by month"
        HOUR = "hour", "Straight line by hour"

    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="prices")
    node = models.ForeignKey(
        Node, on_delete=models.CASCADE, null=True, blank=True, related_name="prices", help_text="empty: fleet default"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    rate_per_h = _money("Rent per hour", null=True, blank=True)
    rate_per = models.CharField(max_length=4, choices=RatePer.choices, default=RatePer.GPU)
    includes_power = models.BooleanField(default=False, help_text="the rent covers electricity")
    prices_include_vat = models.BooleanField(
        default=False, help_text="the amounts are gross (VAT included), made net at the site's VAT; default net"
    )
    capex = _money("Purchase price", null=True, blank=True)
    lifetime_years = models.DecimalField(
        max_digits=5, decimal_places=2, null=True, blank=True, validators=[MinValueValidator(Decimal("0.1"))]
    )
    opex_per_h = _money("Other running cost per hour", default=Decimal(0))
    currency = models.CharField(
        max_length=3, blank=True, default="",
        help_text="ISO 4217 code of the rent, purchase price and running cost; blank: the site's currency",
    )  # fmt: skip
    # Depreciation by the book (owned; accounting.ledger.depreciation, docs/accounting.md).
    in_service_at = models.DateTimeField(
        "In service from", null=True, blank=True,
        help_text="depreciation begins; empty: the node's commissioning, or valid_from if later",
    )  # fmt: skip
    salvage_value = _money("Salvage (residual) value", default=Decimal(0), help_text="never depreciated")
    depreciation_method = models.CharField(
        max_length=5, choices=Method.choices, default=Method.MONTH,
        help_text="straight line by month (equal monthly amounts) or by hour (equal hourly amounts)",
    )  # fmt: skip
    life_changes = models.JSONField(
        default=list, blank=True,
        help_text='changes of useful life, applied prospectively: [{"from": "2026-01-01T00:00:00Z", '
        '"lifetime_years": "5"}, ...] (the new total life from in-service)',
    )  # fmt: skip

    class Meta:
        ordering = ["valid_from"]

    def __str__(self) -> str:
        return f"{self.kind} price of {self.node or self.fleet} from {self.valid_from:%Y-%m-%d}"

    def depreciation_starts_at(self, node: Node) -> datetime:
        """When ``node`` starts depreciating under this price: ``in_service_at``, else the later of the
        node's commissioning and the price's ``valid_from`` (a node bought after it was rented). The rule is
        ``accounting.ledger.in_service.in_service_at``, which dates the node's cards' embodied carbon too."""
        start = in_service_at(
            price_in_service_at=self.in_service_at,
            price_valid_from=self.valid_from,
            commissioned_at=node.commissioned_at,
        )
        return start or self.valid_from

    def subject_filter(self) -> dict[str, Any]:
        return {"node_id": self.node_id} if self.node_id else {"fleet_id": self.fleet_id, "node__isnull": True}

    def clean(self) -> None:
        if self.currency and (problem := currency_problem(self.currency)):
            raise ValidationError({"currency": problem})
        if problem := instant_problem(self.in_service_at):  # before its life is added to it (depreciation, carbon)
            raise ValidationError({"in_service_at": problem})
        if self.node is not None and self.node.fleet_id != self.fleet_id:
            raise ValidationError({"node": "the node must belong to the price's fleet"})
        if self.kind == self.Kind.RENTED and self.rate_per_h is None:
            raise ValidationError({"rate_per_h": "a rented node needs a rent per hour"})
        if self.kind == self.Kind.OWNED and (self.capex is None or self.lifetime_years is None):
            raise ValidationError("an owned node needs a purchase price and a lifetime")
        if self.kind == self.Kind.OWNED:
            self._depreciation_clean()
        super().clean()

    def _depreciation_clean(self) -> None:
        if self.salvage_value is not None and self.capex is not None and self.salvage_value > self.capex:
            raise ValidationError({"salvage_value": "must not be above the purchase price (capex)"})
        try:
            changes = life_changes_parse(self.life_changes)
        except ValueError as error:
            raise ValidationError({"life_changes": str(error)}) from None
        start = self.in_service_at or self.valid_from
        if start is None or self.capex is None or self.lifetime_years is None or self.salvage_value is None:
            return
        try:  # the ledger's own rule: each change must leave life after its date
            end_of_life(OwnedAsset(self.capex, self.salvage_value, start, self.lifetime_years, life_changes=changes))
        except LedgerInputError as error:
            raise ValidationError({"life_changes": str(error)}) from None


class SiteTariff(ValidityPeriod):
    """A site's electricity price per kWh: flat, or time-of-use windows in the site's time zone.

    ``windows``: ``[{"name": "peak", "start": "07:00", "end": "23:00", "price_per_kwh": "0.31",
    "days": [0, 1, 2, 3, 4]}, ...]`` (days: Monday = 0; omitted: every day; a window
    may cross midnight). Windows must cover every hour of every day once.
    """

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="tariffs")
    flat_price_per_kwh = _money(null=True, blank=True)
    windows = models.JSONField(default=list, blank=True)
    prices_include_vat = models.BooleanField(
        default=False, help_text="the prices per kWh are gross (VAT included), made net at the site's VAT; default net"
    )
    # Per site and UTC month, not per node-hour: booked as the site's monthly charges (accounting.site_charges).
    fixed_per_month = _money(
        "Fixed charge per month",
        default=Decimal(0),
        help_text="site currency, net; prorated by the share of a month in force",
    )
    demand_per_kw_month = _money(
        "Demand charge per kW and month", default=Decimal(0),
        help_text="site currency, net, per kW of the month's peak hourly site demand",
    )  # fmt: skip

    class Meta:
        ordering = ["valid_from"]

    def __str__(self) -> str:
        return f"tariff of {self.site} from {self.valid_from:%Y-%m-%d}"

    def subject_filter(self) -> dict[str, Any]:
        return {"site_id": self.site_id}

    def clean(self) -> None:
        if (self.flat_price_per_kwh is None) == (not self.windows):
            raise ValidationError("give either a flat price or time-of-use windows")
        try:
            tariff_from_fields(
                flat_price_per_kwh=self.flat_price_per_kwh,
                windows=self.windows,
                time_zone=self.site.time_zone,
                tariff_id=f"tariff-{self.pk or 'new'}",
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValidationError({"windows": str(error)}) from None
        super().clean()


class SiteMarketFactor(ValidityPeriod):
    """The market-based emission factor of a site's electricity (contracts, or a residual mix)."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="market_factors")
    gco2e_per_kwh = models.DecimalField(max_digits=9, decimal_places=3, validators=[MinValueValidator(Decimal(0))])
    source = models.CharField(max_length=128, help_text="e.g. contract:PPA-2026-01 or residual-mix:AIB-2024")

    class Meta:
        ordering = ["valid_from"]

    def __str__(self) -> str:
        return f"market factor of {self.site} from {self.valid_from:%Y-%m-%d}"

    def subject_filter(self) -> dict[str, Any]:
        return {"site_id": self.site_id}


class SitePue(ValidityPeriod):
    """A site's PUE over a period (e.g. a measured yearly figure); ``Site.pue`` applies where no row does."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="pue_periods")
    pue = models.DecimalField(
        "PUE", max_digits=4, decimal_places=2, validators=[MinValueValidator(Decimal("1.00"))],
        help_text="facility energy / IT energy (1.0 or more) within the period",
    )  # fmt: skip

    class Meta:
        ordering = ["valid_from"]
        verbose_name = "site PUE period"
        constraints = [models.CheckConstraint(condition=models.Q(pue__gte=1), name="sitepue_at_least_one")]

    def __str__(self) -> str:
        return f"PUE {self.pue} of {self.site} from {self.valid_from:%Y-%m-%d}"

    def subject_filter(self) -> dict[str, Any]:
        return {"site_id": self.site_id}


class SiteTax(ValidityPeriod):
    """A site's taxes over a period: VAT and an energy tax (``accounting.ledger.tax``).

    ``vat_rate`` a fraction (0.25 = 25 %); ``vat_recoverable`` (default): input VAT the
    organization reclaims, a receivable and not a cost; ``energy_tax_per_kwh`` in the
    site's currency per facility kWh (Sweden's energy tax, Germany's Stromsteuer).
    """

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="taxes")
    vat_rate = models.DecimalField(
        "VAT rate", max_digits=7, decimal_places=6, default=Decimal(0),
        validators=[MinValueValidator(Decimal(0)), MaxValueValidator(Decimal(1))],
        help_text="a fraction from 0 to 1 (0.25 = 25 %)",
    )  # fmt: skip
    vat_recoverable = models.BooleanField(
        "VAT recoverable", default=True, help_text="input VAT is reclaimed: a receivable, not a cost"
    )
    energy_tax_per_kwh = _money("Energy tax per kWh", default=Decimal(0), help_text="site currency per facility kWh")

    class Meta:
        ordering = ["valid_from"]
        verbose_name = "site tax"
        constraints = [
            models.CheckConstraint(condition=models.Q(vat_rate__gte=0, vat_rate__lte=1), name="sitetax_vat_fraction"),
            models.CheckConstraint(condition=models.Q(energy_tax_per_kwh__gte=0), name="sitetax_energy_tax_positive"),
        ]

    def __str__(self) -> str:
        return f"taxes of {self.site} from {self.valid_from:%Y-%m-%d}"

    def subject_filter(self) -> dict[str, Any]:
        return {"site_id": self.site_id}
