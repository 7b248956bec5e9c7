"""An organization's own account map for the journal export: which accounts a charge kind is booked to.

Where an organization maps a charge kind, the journal (``reports.journal``) books it to these accounts in place
of the default map (``reports.journal.DEFAULT_ACCOUNT_MAP``), and its rows say so (``account_map``). One row per
organization and charge kind. Written through ``accounting.inputs.journal_accounts`` (roles, audit trail).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

from fleets.models import Organization

__all__ = ["JournalAccount"]

ACCOUNT_CODE_MAX = 20  # a general ledger's account codes: 4-10 digits usually, segmented codes a little longer


class JournalAccount(models.Model):
    class ChargeKind(models.TextChoices):
        # The journal's charge kinds (``reports.focus.columns.ChargeKind``, less the purchase, which is capitalized).
        RENT = "rent", "Rent"
        DEPRECIATION = "depreciation", "Depreciation"
        OPEX = "opex", "Running cost"
        ELECTRICITY = "electricity", "Electricity"
        FIXED_CHARGE = "fixed_charge", "Electricity fixed charge (site, monthly)"
        DEMAND_CHARGE = "demand_charge", "Electricity demand charge (site, monthly)"
        ENERGY_TAX = "energy_tax", "Energy tax"
        VAT = "vat", "Non-recoverable VAT"
        INPUT_VAT = "input_vat", "Input VAT receivable"
        ROUNDING = "rounding", "Rounding differences"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="journal_accounts")
    charge_kind = models.CharField(max_length=24, choices=ChargeKind.choices)
    debit_account_code = models.CharField(max_length=ACCOUNT_CODE_MAX, help_text="the expense account, e.g. 5410")
    debit_account_name = models.CharField(max_length=128, blank=True, help_text="e.g. Cloud GPU rent")
    credit_account_code = models.CharField(max_length=ACCOUNT_CODE_MAX, help_text="the counter account, e.g. 2000")
    credit_account_name = models.CharField(max_length=128, blank=True, help_text="e.g. Accounts payable")

    class Meta:
        ordering = ["organization", "charge_kind"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "charge_kind"], name="journalaccount_unique_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.charge_kind}: {self.debit_account_code} / {self.credit_account_code}"

    def clean(self) -> None:
        blank = {
            name: "must not be empty" for name in ("debit_account_code", "credit_account_code")
            if not str(getattr(self, name) or "").strip()
        }  # fmt: skip
        if blank:
            raise ValidationError(blank)
