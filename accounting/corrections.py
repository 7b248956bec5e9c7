"""A locked period's ledger lines stay as closed: what would change them is booked as a correction.

Every line the ledger computes passes through ``ledger_rows_settle`` before it is
stored. A line of a locked hour (``governance.LockedPeriod``) is never written:
its stored line is the closed figure, and the difference between the line as it
would be now and what is booked for the hour (the stored line plus the
corrections booked so far) becomes a ``LedgerCorrection`` dated in the first
open period (``accounting.ledger.corrections.booking_hour``), audited (subject
``ledger_correction``). A recompute that changes nothing further books nothing.

Unlocking re-opens the hours: the next recompute of an unlocked hour rewrites its
line as usual and books a reversal of each of its corrections in the first open
period, so that nothing is counted twice (the corrected figure is then in the
rewritten line, and the booking period keeps its own figures: the reversal is a
figure of the period it is booked in). ``ledger_reopened_mark`` marks those hours
for the queue once their lock is gone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from accounting.ledger.corrections import (
    CORRECTED_FIELDS,
    Cause,
    Window,
    booked,
    booking_hour,
    correction_cause,
    correction_deltas,
    is_locked,
    reversed_deltas,
)
from accounting.models import LedgerCorrection, LedgerPending, NodeHourLedger
from governance.audit import audit_record, snapshot
from governance.models import LockedPeriod
from grid.hours import floor_hour

SUBJECT = "ledger_correction"


def locked_windows(*, organization_id: int) -> list[Window]:
    """The organization's locked periods ``[start, end)``."""
    return list(LockedPeriod.objects.filter(organization_id=organization_id).values_list("start", "end"))


def ledger_rows_settle(*, node_id: int, organization_id: int, rows: list[NodeHourLedger], now: datetime) -> list[Any]:
    """Book a correction for each row of a locked hour, reverse the corrections of each open hour being
    rewritten; return the rows to store (those of open hours).

    Called for one node's hours under the ledger queue's claim of that node (one worker at a time per node),
    in the transaction that stores the lines: the corrections and the lines commit together.
    """
    locks = locked_windows(organization_id=organization_id)
    hours = [row.hour_start for row in rows]
    corrections: dict[datetime, list[LedgerCorrection]] = defaultdict(list)
    for correction in LedgerCorrection.objects.filter(node_id=node_id, restated_hour__in=hours).order_by("id"):
        corrections[correction.restated_hour].append(correction)
    locked = [row for row in rows if is_locked(row.hour_start, locks)]
    if locked:
        stored = NodeHourLedger.objects.filter(node_id=node_id, hour_start__in=[row.hour_start for row in locked])
        by_hour = {line.hour_start: line for line in stored}
        for row in locked:
            _correction_book(row, by_hour.get(row.hour_start), corrections[row.hour_start], locks=locks, now=now)
    opened = [row for row in rows if not is_locked(row.hour_start, locks)]
    for row in opened:
        for correction in corrections[row.hour_start]:
            if correction.cause != Cause.REVERSAL and correction.reversed_at is None:
                _reversal_book(correction, locks=locks, now=now)
    return opened


def _deltas_of(correction: LedgerCorrection) -> dict[str, Any]:
    return {name: getattr(correction, name) for name in CORRECTED_FIELDS}


def _correction_book(
    row: NodeHourLedger, stored: NodeHourLedger | None, corrections: list[LedgerCorrection], *, locks: list[Window],
    now: datetime,
) -> LedgerCorrection | None:  # fmt: skip
    stored_line = snapshot(stored)
    would_be = snapshot(row) or {}
    deltas = correction_deltas(booked=booked(stored_line, map(_deltas_of, corrections)), would_be=would_be)
    if deltas is None:
        return None
    latest = corrections[-1] if corrections else None
    # The line as last computed: the latest correction's restated line, or (none, or a reversal) the stored one.
    previous = latest.restated_line if latest is not None and latest.cause != Cause.REVERSAL else stored_line
    correction = LedgerCorrection.objects.create(
        organization_id=row.organization_id, node_id=row.node_id, fleet_id=row.fleet_id, site_id=row.site_id,
        gpu_model=row.gpu_model, currency=row.currency, restated_hour=row.hour_start,
        booked_hour=booking_hour(now_hour=floor_hour(now), locks=locks),
        cause=correction_cause(previous=previous or {}, would_be=would_be), created_at=now,
        restated_line=would_be, **deltas,
    )  # fmt: skip
    corrections.append(correction)
    _audit(correction, now=now)
    return correction


def _reversal_book(correction: LedgerCorrection, *, locks: list[Window], now: datetime) -> LedgerCorrection:
    reversal = LedgerCorrection.objects.create(
        organization_id=correction.organization_id, node_id=correction.node_id, fleet_id=correction.fleet_id,
        site_id=correction.site_id, gpu_model=correction.gpu_model, currency=correction.currency,
        restated_hour=correction.restated_hour, booked_hour=booking_hour(now_hour=floor_hour(now), locks=locks),
        cause=Cause.REVERSAL, reverses=correction, created_at=now, **reversed_deltas(_deltas_of(correction)),
    )  # fmt: skip
    LedgerCorrection.objects.filter(pk=correction.pk).update(reversed_at=now)
    correction.reversed_at = now
    _audit(reversal, now=now)
    return reversal


def _audit(correction: LedgerCorrection, *, now: datetime) -> None:
    after = snapshot(correction) or {}
    after.pop("restated_line", None)  # the whole line is on the correction itself; the trail keeps the figures
    audit_record(
        organization_id=correction.organization_id, user=None, subject=SUBJECT, object_id=correction.pk,
        before=None, after=after, at=now,
    )  # fmt: skip


def ledger_reopened_mark(*, now: datetime) -> int:
    """Mark for recompute the node-hours whose corrections stand while no lock holds them any more (an admin
    unlocked their period): the recompute rewrites their lines and reverses the corrections."""
    standing = LedgerCorrection.objects.filter(reversed_at__isnull=True).exclude(cause=Cause.REVERSAL)
    per_organization: dict[int, set[tuple[int, datetime]]] = defaultdict(set)
    for organization_id, node_id, hour in standing.values_list("organization_id", "node_id", "restated_hour"):
        per_organization[organization_id].add((node_id, hour))
    marks = [
        LedgerPending(node_id=node_id, hour_start=hour, marked_at=now)
        for organization_id, node_hours in per_organization.items()
        for node_id, hour in _unlocked(node_hours, locked_windows(organization_id=organization_id))
    ]
    LedgerPending.objects.bulk_create(
        marks, update_conflicts=True, unique_fields=["node", "hour_start"], update_fields=["marked_at"], batch_size=2000
    )
    return len(marks)


def _unlocked(node_hours: Iterable[tuple[int, datetime]], locks: list[Window]) -> list[tuple[int, datetime]]:
    return sorted((node_id, hour) for node_id, hour in node_hours if not is_locked(hour, locks))
