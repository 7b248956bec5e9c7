"""The audit trail of input changes, and the periods an organization has locked."""

from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from fleets.models import Organization

__all__ = ["AuditEntry", "LockedPeriod"]


class AuditEntry(models.Model):
    """One change to an input: who, when, which row, its fields before and after (JSON), hours re-opened."""

    class Action(models.TextChoices):
        CREATE = "create", "Created"
        UPDATE = "update", "Updated"
        DELETE = "delete", "Deleted"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="audit_entries")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    username = models.CharField(max_length=150, help_text="kept when the user is deleted")
    at = models.DateTimeField()
    action = models.CharField(max_length=8, choices=Action.choices)
    subject = models.CharField(max_length=32, help_text="what kind of input: node_price, site_tariff, ...")
    object_id = models.BigIntegerField()
    before = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    after = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    ledger_hours_reopened = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "accounting_auditentry"  # kept from before the app had its own label
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"
        # The admin list and the audit endpoint read one organization's entries, newest first.
        indexes = [models.Index(fields=["organization", "-at"], name="auditentry_org_at")]

    def __str__(self) -> str:
        return f"{self.username} {self.action} {self.subject} {self.object_id} at {self.at:%Y-%m-%d %H:%M}"


class LockedPeriod(models.Model):
    """A closed period ``[start, end)``: inputs in force within it may not change until an admin unlocks it."""

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="locked_periods")
    start = models.DateTimeField()
    end = models.DateTimeField(help_text="exclusive")
    reason = models.CharField(max_length=200, blank=True, help_text="e.g. FY2025 closed, report filed")
    locked_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    locked_at = models.DateTimeField()

    class Meta:
        db_table = "accounting_lockedperiod"  # kept from before the app had its own label
        ordering = ["start"]
        constraints = [
            models.CheckConstraint(condition=models.Q(end__gt=models.F("start")), name="lockedperiod_end_after_start")
        ]

    def __str__(self) -> str:
        return f"{self.organization} locked {self.start:%Y-%m-%d} to {self.end:%Y-%m-%d}"
