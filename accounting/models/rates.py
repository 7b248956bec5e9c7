"""An organization's exchange-rate table: dated, typed rates it uploads or enters (nothing is fetched).

One row per pair, month and kind: ``rate`` units of ``quote_currency`` per one
``currency`` for the calendar month starting ``month``, the month's ``average``
(P&L figures) or its ``closing`` rate (balances). The arithmetic is
``accounting.ledger.fx``; docs/accounting.md, "Currencies", states the rules (IAS 21).
Written through ``accounting.inputs.rates`` (audited, lock-checked, lines re-opened).
"""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import models

from accounting.ledger.fx import FxRate, RateKind
from common.currencies import currency_problem
from fleets.models import Organization

__all__ = ["ExchangeRate"]


class ExchangeRate(models.Model):
    class Kind(models.TextChoices):
        AVERAGE = RateKind.AVERAGE.value, "Month average (income and expenses)"
        CLOSING = RateKind.CLOSING.value, "Closing, at the month's end (balances)"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="exchange_rates")
    currency = models.CharField(max_length=3, help_text="the currency converted from (ISO 4217)")
    quote_currency = models.CharField(max_length=3, help_text="the currency converted into (ISO 4217)")
    month = models.DateField(help_text="the first day of the month the rate is for")
    kind = models.CharField(max_length=7, choices=Kind.choices, default=Kind.AVERAGE)
    rate = models.DecimalField(
        max_digits=20, decimal_places=10, help_text="units of quote_currency per one unit of currency (above 0)"
    )
    source = models.CharField(max_length=200, blank=True, help_text="where the rate comes from: ECB reference rates")

    class Meta:
        ordering = ["month", "currency", "quote_currency", "kind"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "currency", "quote_currency", "month", "kind"], name="exchangerate_unique"
            ),
            models.CheckConstraint(condition=models.Q(rate__gt=0), name="exchangerate_rate_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.currency}/{self.quote_currency} {self.kind} {self.month:%Y-%m}: {self.rate}"

    def clean(self) -> None:
        problems = {name: currency_problem(getattr(self, name)) for name in ("currency", "quote_currency")}
        if self.currency and self.currency == self.quote_currency:
            problems["quote_currency"] = "must differ from currency"
        if self.month is not None and self.month.day != 1:
            problems["month"] = "must be the first day of a month (2026-01-01)"
        if self.rate is not None and not Decimal(self.rate) > 0:
            problems["rate"] = "must be above 0"
        problems = {name: problem for name, problem in problems.items() if problem}
        if problems:
            raise ValidationError(problems)

    def as_rate(self) -> FxRate:
        return FxRate(self.currency, self.quote_currency, self.month, RateKind(self.kind), Decimal(self.rate),
                      self.source)  # fmt: skip
