"""Uploads as tasks: the POST stores the file (``upload_store``), a worker checks and saves it (``upload_run``).

At most one upload per organization is queued or running at a time (a partial
unique index; a second POST gets ``UploadBusy``, answered 409). The run holds a
lease (``common.leases``) renewed with its progress: the rows done are written
every second by a heartbeat on a connection of its own, since the rows
themselves are saved in one transaction nobody else sees until it commits. An
upload whose lease lapsed (its worker died) is marked failed, and the
organization may upload again at once.

The stored file is kept only until the upload is done or failed (a lapsed one
too): its rows are saved or refused by then, and the status keeps the answer
(counts, or each refused row with its cells), so the file itself is erased.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from rest_framework import serializers

from accounting.inputs.uploads import UploadInvalid, csv_check, csv_rows, rows_save
from accounting.models import InputUpload
from common.leases import lease_from, leases_lapse, queue_wait
from fleets.models import Organization

logger = logging.getLogger(__name__)

# Seconds between two progress writes of a running upload: one small UPDATE, the lease renewed with it.
HEARTBEAT_S = 1.0

State = InputUpload.State

# What a finished upload keeps of its file: nothing (the column is not nullable; an empty file is no CSV).
ERASED = b""


class UploadBusy(Exception):
    """Another upload of the organization is queued or running."""


@dataclass(frozen=True)
class UploadSpec:
    """What an upload kind checks: the columns it needs, each row's serializer, and its saver's factory
    (``(organization, user) -> save(row)``)."""

    kind: str
    required: frozenset[str]
    serializer: type[serializers.Serializer]
    saver: Callable[[Organization, Any], Callable[[dict[str, Any]], Any]]


def uploads_lapse(*, organization_id: int, now: datetime) -> int:
    """Fail the organization's uploads whose lease lapsed (their worker died); return how many."""
    rows = InputUpload.objects.filter(organization_id=organization_id)
    return leases_lapse(rows=rows, field="state", queued=State.QUEUED, running=State.RUNNING, failed=State.FAILED,
                        now=now, finished_at=now, content=ERASED)  # fmt: skip


def upload_store(
    *, organization: Organization, user: Any, spec: UploadSpec, file_name: str, content: bytes, now: datetime
) -> InputUpload:
    """Check the file's header and size, count its rows and store it queued (``UploadInvalid``, ``UploadBusy``)."""
    rows_total = csv_check(content, required=set(spec.required))
    uploads_lapse(organization_id=organization.pk, now=now)
    try:
        with transaction.atomic():
            return InputUpload.objects.create(
                organization=organization, kind=spec.kind, file_name=file_name[:255], content=content,
                rows_total=rows_total, created_by=user if getattr(user, "is_authenticated", False) else None,
                created_at=now, lease_until=now + queue_wait(),
            )  # fmt: skip
    except IntegrityError:
        active = InputUpload.objects.filter(organization=organization, state__in=[State.QUEUED, State.RUNNING])
        raise UploadBusy(_busy_message(active.first())) from None


def _busy_message(active: InputUpload | None) -> str:
    if active is None:  # finished between the refusal and this read: the next POST is taken
        return "another upload of this organization was running; send the file again"
    return (
        f"upload {active.pk} of this organization is {active.state} ({active.rows_done} of {active.rows_total} rows): "
        f"one upload at a time; follow /api/v1/uploads/{active.pk}/ and send this file when it is done"
    )


def _run_lease(now: datetime) -> datetime:
    # One writer at a time on SQLite: the heartbeat cannot write while the rows' transaction is open, so the
    # run's lease there is the task's time limit, past which no worker runs it anyway.
    if connection.vendor == "sqlite":
        return now + timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    return lease_from(now)


def upload_run(*, upload_id: int, spec: UploadSpec, now: datetime) -> str:
    """Check and save a queued upload's rows; store the answer. Idempotent: an upload not queued is left alone."""
    claimed = InputUpload.objects.filter(pk=upload_id, state=State.QUEUED, kind=spec.kind).update(
        state=State.RUNNING, started_at=now, rows_done=0, lease_until=_run_lease(now)
    )
    if not claimed:
        return "not queued"
    upload = InputUpload.objects.select_related("organization", "created_by").get(pk=upload_id)
    beat = Heartbeat(upload_id)
    try:
        with beat:
            rows = csv_rows(bytes(upload.content), required=set(spec.required))
            result = rows_save(rows, serializer=spec.serializer, save=spec.saver(upload.organization,
                               upload.created_by), progress=beat.tell)  # fmt: skip
    except UploadInvalid as error:
        _finish(upload_id, state=State.DONE, result_status=400, result={"detail": str(error)})
        return State.DONE
    except Exception:
        logger.exception("upload %s failed", upload_id)
        _finish(upload_id, state=State.FAILED, error="the upload failed unexpectedly (see the logs); nothing was saved")
        raise
    _finish(upload_id, state=State.DONE, rows_done=upload.rows_total, **upload_answer(result))
    return State.DONE


def upload_answer(result: Any) -> dict[str, Any]:
    """The body and status the upload answers: 201 with the counts, or 400 with the refused rows."""
    if result.refused:
        detail = f"{len(result.refused)} row(s) refused; nothing was saved"
        return {"result_status": 400, "result": {"detail": detail, "refused": result.refused}}
    saved = {"saved": result.saved, "ledger_hours_reopened": result.ledger_hours_reopened}
    return {"result_status": 201, "result": saved}


def _finish(upload_id: int, **values: Any) -> None:
    InputUpload.objects.filter(pk=upload_id, state=State.RUNNING).update(
        finished_at=timezone.now(), lease_until=None, content=ERASED, **values
    )


class Heartbeat:
    """While a run works, writes its rows done and renews its lease every ``HEARTBEAT_S`` on a connection of its
    own (a thread of its own: Django gives each thread its connection), only when the rows advanced: a run stuck
    on one row lets its lease lapse like a dead one."""

    def __init__(self, upload_id: int) -> None:
        self.upload_id, self.done, self._written = upload_id, 0, -1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"upload-{upload_id}-heartbeat", daemon=True)

    def tell(self, done: int) -> None:
        self.done = done

    def __enter__(self) -> Heartbeat:
        if connection.vendor != "sqlite":
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        from django.db import connection as own

        try:
            while not self._stop.wait(HEARTBEAT_S):
                self._beat()
        finally:
            own.close()

    def _beat(self) -> None:
        done = self.done
        if done == self._written:
            return
        now = timezone.now()
        InputUpload.objects.filter(pk=self.upload_id, state=State.RUNNING).update(
            rows_done=done, lease_until=lease_from(now)
        )
        self._written = done
