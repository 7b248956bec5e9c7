"""A scenario: a named set of changes over a past period, replayed on the organization's measured hours.

The replay reads the stored ledger and never writes it; what it finds is kept in
``result`` (``scenarios.result``). ``status`` and the progress fields are
updated by the run (a Celery task) as it goes, so that pages and clients can show them.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from common.timestamps import Timestamped
from fleets.models import Organization

__all__ = ["Scenario"]


class Scenario(Timestamped):
    class Status(models.TextChoices):
        DRAFT = "draft", "Not run yet"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="scenarios")
    name = models.CharField(max_length=200)
    period_start = models.DateTimeField(help_text="first hour replayed (UTC, on the hour)")
    period_end = models.DateTimeField(help_text="end of the period, exclusive (UTC, on the hour)")
    changes = models.JSONField(help_text="the changes, as scenarios.changes parses them")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.DRAFT)
    progress_pct = models.FloatField(default=0.0, help_text="share of the period's node-hours replayed so far, %")
    node_hours_replayed = models.BigIntegerField(default=0)
    node_hours_total = models.BigIntegerField(default=0, help_text="the period's stored node-hours, counted at start")
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, help_text="why the last run failed")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True, help_text="renewed by the run with its progress")

    class Meta:
        db_table = "accounting_scenario"  # kept from before the app had its own label
        indexes = [
            # The list of an organization's scenarios, newest first.
            models.Index(fields=["organization", "-created_at"], name="scenario_org_created"),
        ]

    def __str__(self) -> str:
        return self.name
