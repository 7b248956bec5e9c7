"""The Scope 2 register's upload tasks: a stored CSV file checked and saved by a worker."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from accounting.inputs.upload_runs import upload_run
from scope2.uploads import INSTRUMENTS_UPLOAD, RESIDUAL_MIXES_UPLOAD


@shared_task(name="scope2.instruments_upload_task")
def instruments_upload_task(upload_id: int) -> str:
    """Check and save a stored instruments upload. Idempotent: an upload not queued is left alone."""
    return upload_run(upload_id=upload_id, spec=INSTRUMENTS_UPLOAD, now=timezone.now())


@shared_task(name="scope2.residual_mixes_upload_task")
def residual_mixes_upload_task(upload_id: int) -> str:
    """Check and save a stored residual-mix upload. Idempotent: an upload not queued is left alone."""
    return upload_run(upload_id=upload_id, spec=RESIDUAL_MIXES_UPLOAD, now=timezone.now())
