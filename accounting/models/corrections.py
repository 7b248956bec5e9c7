"""Corrections of locked ledger lines, booked in the first open period (``accounting.corrections``)."""

from __future__ import annotations

from django.db import models

from accounting.ledger.corrections import Cause
from fleets.models import Fleet, Node, Organization, Site

__all__ = ["LedgerCorrection"]


# The causes are the ledger's (``accounting.ledger.corrections.Cause``); here only their labels.
_CAUSE_LABELS = {
    Cause.LATE_TELEMETRY: "Late telemetry",
    Cause.REVISED_INTENSITY: "Revised grid intensity",
    Cause.INPUTS_OR_FORMULA: "Inputs or formula changed",
    Cause.REVERSAL: "Reversal (hour unlocked and rewritten)",
}


def _delta() -> models.DecimalField:
    """An unrounded difference: money, kWh or gCO2e (rounded once, when shown)."""
    return models.DecimalField(max_digits=28, decimal_places=12, default=0)


class LedgerCorrection(models.Model):
    """What a recompute would have changed on a locked node-hour's line, booked at ``booked_hour``.

    The deltas add to the stored line: stored line + every correction of the hour = the line as it would be
    now. A reversal (``cause = reversal``) undoes a correction once its hour is unlocked and rewritten.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="ledger_corrections")
    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="+")
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="+")
    gpu_model = models.CharField(max_length=64)
    currency = models.CharField(max_length=3)
    restated_hour = models.DateTimeField(help_text="the locked node-hour whose line this restates")
    booked_hour = models.DateTimeField(help_text="the start of the first open period at or after its booking")
    cause = models.CharField(max_length=20, choices=[(cause.value, label) for cause, label in _CAUSE_LABELS.items()])
    reverses = models.OneToOneField(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="reversal",
        help_text="the correction this reversal undoes",
    )  # fmt: skip
    reversed_at = models.DateTimeField(null=True, blank=True, help_text="when a reversal undid this correction")
    created_at = models.DateTimeField()

    hardware_cost = _delta()  # rent_cost + depreciation_cost + opex_cost, as on a line
    rent_cost = _delta()
    depreciation_cost = _delta()
    opex_cost = _delta()
    electricity_cost = _delta()
    energy_tax_cost = _delta()
    vat_amount = _delta()
    vat_cost = _delta()
    cost = _delta()
    it_kwh = _delta()
    facility_kwh = _delta()
    location_co2e_g = _delta()
    market_co2e_g = _delta()
    embodied_co2e_g_low = _delta()
    embodied_co2e_g_central = _delta()
    embodied_co2e_g_high = _delta()
    prompt_tokens = models.BigIntegerField(default=0)
    generation_tokens = models.BigIntegerField(default=0)
    restated_line = models.JSONField(
        null=True, blank=True, help_text="the line as it would be now (its columns), what the next change is read from"
    )

    class Meta:
        ordering = ["booked_hour", "id"]
        indexes = [
            # Reports: corrections booked in a period, and corrections restating a period.
            models.Index(fields=["organization", "booked_hour"], name="correction_org_booked"),
            models.Index(fields=["organization", "restated_hour"], name="correction_org_restated"),
            # The recompute: one node's corrections of the hours it computes.
            models.Index(fields=["node", "restated_hour"], name="correction_node_hour"),
        ]

    def __str__(self) -> str:
        restated, booked = f"{self.restated_hour:%Y-%m-%d %H:00}", f"{self.booked_hour:%Y-%m-%d %H:00}"
        return f"{self.node_id} {restated} {self.cause} booked {booked}"
