"""Workload classes, the advice stored for them, and how an organization is told when it changes.

Written by ``advice.services``; the arithmetic lives in the pure
``bands``, ``advisor`` and ``windows`` modules. App label ``accounting``.
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from common.outbound import outbound_url_validate
from common.timestamps import Timestamped
from fleets.models import Organization

__all__ = ["Advice", "AdviceNotification", "AdviceRefresh", "AdviceSettings", "WorkloadClass"]


class WorkloadClass(Timestamped):
    """A kind of traffic the organization serves: its latency target, volume and how deferrable it is."""

    class Percentile(models.IntegerChoices):
        P50 = 50, "P50"
        P90 = 90, "P90"
        P95 = 95, "P95"
        P99 = 99, "P99"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="workload_classes")
    name = models.CharField(max_length=100)
    llm_model = models.CharField(
        "LLM model",
        max_length=256,
        blank=True,
        help_text="the served model name it runs on (as the inference server reports it); empty: any",
    )
    ttft_target_ms = models.PositiveIntegerField(
        "TTFT target (ms)", validators=[MinValueValidator(1), MaxValueValidator(600_000)]
    )
    ttft_percentile = models.PositiveSmallIntegerField(
        "TTFT percentile", choices=Percentile.choices, default=Percentile.P99
    )
    deadline_h = models.PositiveIntegerField(
        "deadline (h)",
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(48)],
        help_text="empty: latency-sensitive; else its work may be deferred within this many hours",
    )
    expected_output_tokens_per_day = models.PositiveBigIntegerField(validators=[MinValueValidator(1)])
    carbon_weight = models.DecimalField(
        max_digits=3,
        decimal_places=2,
        default=0,
        validators=[MinValueValidator(0), MaxValueValidator(1)],
        help_text="0: cheapest; 1: lowest gCO2e; in between: the weighted sum of both, each relative to the worst",
    )

    class Meta:
        db_table = "accounting_workloadclass"  # kept from before the app had its own label
        ordering = ["organization", "name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="workloadclass_unique_org_name"),
            models.CheckConstraint(
                condition=models.Q(carbon_weight__gte=0, carbon_weight__lte=1), name="workloadclass_weight_0_1"
            ),
        ]
        verbose_name_plural = "workload classes"

    def __str__(self) -> str:
        return self.name


class AdviceSettings(models.Model):
    """An organization's advice options; without a row the defaults apply."""

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="advice_settings")
    min_hours_of_data = models.PositiveIntegerField(
        default=24, validators=[MinValueValidator(1)], help_text="a curve with fewer measured hours is not advised on"
    )
    curve_days = models.PositiveIntegerField(
        default=14,
        validators=[MinValueValidator(1), MaxValueValidator(90)],
        help_text="days of history the curves read",
    )
    webhook_url = models.URLField(
        blank=True, validators=[outbound_url_validate], help_text="POSTed a JSON body when a class's advice changes"
    )
    notify_emails = models.TextField(blank=True, help_text="addresses told when a class's advice changes, one a line")

    class Meta:
        db_table = "accounting_advicesettings"  # kept from before the app had its own label
        verbose_name_plural = "advice settings"

    def __str__(self) -> str:
        return f"advice settings of {self.organization}"

    @property
    def email_list(self) -> list[str]:
        return [line.strip() for line in self.notify_emails.replace(",", "\n").splitlines() if line.strip()]


class Advice(models.Model):
    """A class's advice as computed: a new row when it changes, the latest row's ``computed_at`` renewed otherwise."""

    workload_class = models.ForeignKey(WorkloadClass, on_delete=models.CASCADE, related_name="advice")
    computed_at = models.DateTimeField(help_text="when this advice was last computed")
    created_at = models.DateTimeField(help_text="when the advice became this")
    status = models.CharField(max_length=20, help_text="ok, insufficient_data or infeasible")
    binding = models.CharField(max_length=24, help_text="the constraint that bound the recommendation")
    fingerprint = models.CharField(max_length=500, help_text="the status and the fleets' shares (5 % steps)")
    explanation = models.TextField()
    hours_of_data = models.PositiveIntegerField()
    result = models.JSONField(help_text="the recommendation, the alternatives, the per-fleet figures, the window")

    class Meta:
        db_table = "accounting_advice"  # kept from before the app had its own label
        ordering = ["workload_class", "-created_at", "-id"]
        # The page and the API read each class's latest row.
        indexes = [models.Index(fields=["workload_class", "-created_at"], name="advice_class_created")]

    def __str__(self) -> str:
        return f"{self.workload_class} {self.status} at {self.computed_at:%Y-%m-%d %H:%M}"


class AdviceNotification(models.Model):
    """A message sent (or that failed: parked with its error, never raised) when a class's advice changed."""

    class Channel(models.TextChoices):
        WEBHOOK = "webhook", "Webhook"
        EMAIL = "email", "E-mail"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="advice_notifications")
    workload_class = models.ForeignKey(WorkloadClass, on_delete=models.SET_NULL, null=True, related_name="+")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    target = models.CharField(max_length=2000, help_text="the URL or the addresses")
    payload = models.JSONField()
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, help_text="the last failure; a parked message is retried on the next refresh")

    class Meta:
        db_table = "accounting_advicenotification"  # kept from before the app had its own label
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        state = "sent" if self.sent_at else "parked"
        return f"{self.channel} to {self.target} ({state})"


class AdviceRefresh(models.Model):
    """An organization's latest advice refresh: running (holding a lease, ``common.leases``), done, or failed
    with the reason shown on its advice page. One organization's failure stops no other's refresh."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    organization = models.OneToOneField(Organization, on_delete=models.CASCADE, related_name="advice_refresh")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.DONE)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True, help_text="renewed by the refresh with each class")
    error = models.TextField(blank=True, help_text="why the latest refresh failed")

    def __str__(self) -> str:
        return f"advice refresh of {self.organization_id} ({self.status})"
