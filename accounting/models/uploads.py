"""A CSV file of inputs (node prices, exchange rates, instruments, residual mixes) stored by its POST and
checked by a worker.

``state`` and the progress are written by the task (``accounting.inputs.upload_runs``)
as it goes; ``result`` is the body the upload answers once done: the saved
counts, or the refused rows with their reasons.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from fleets.models import Organization

__all__ = ["InputUpload"]


class InputUpload(models.Model):
    class Kind(models.TextChoices):
        NODE_PRICES = "node_prices", "Node prices"
        INSTRUMENTS = "instruments", "Instruments"
        RESIDUAL_MIXES = "residual_mixes", "Residual mixes"
        EXCHANGE_RATES = "exchange_rates", "Exchange rates"

    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="input_uploads")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    file_name = models.CharField(max_length=255, blank=True)
    content = models.BinaryField(help_text="the file as sent (at most the upload limit, 2 MiB)")
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    rows_total = models.PositiveIntegerField(default=0, help_text="the file's data rows, counted when it was stored")
    rows_done = models.PositiveIntegerField(default=0, help_text="rows checked (and saved) so far")
    result = models.JSONField(null=True, blank=True, help_text="the answer once done: saved counts or refused rows")
    result_status = models.PositiveSmallIntegerField(null=True, blank=True, help_text="201 saved, 400 refused")
    error = models.TextField(blank=True, help_text="why the run failed (not a refused row: a failed run)")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True, help_text="renewed by the worker with its progress")

    class Meta:
        constraints = [
            # At most one upload queued or running per organization: a second POST is refused (409).
            models.UniqueConstraint(
                fields=["organization"],
                condition=models.Q(state__in=["queued", "running"]),
                name="inputupload_one_active_per_org",
            ),
        ]
        indexes = [
            # The prices page's latest upload of the organization.
            models.Index(fields=["organization", "-created_at"], name="inputupload_org_created"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} upload {self.pk} ({self.state})"
