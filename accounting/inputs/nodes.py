"""Node and node-token changes made by people (API, page and Django admin), audited: the ``engineer`` role's work.

The inventory's own services (``fleets.services``) do the writes; this adds the
audit entry in the same transaction. A token's plaintext is never audited nor
stored: its prefix and its row's id are.

A node's site, fleet and tenure are inputs of every one of its ledger lines, its
commissioning and decommissioning dates of the hours between the old date and
the new: a node moved or re-dated in the Django admin is refused while a stored
line of those hours lies in a locked period (``lock_check_lines``, as the site's
own PUE and GPU assets are), and the lines re-open. So is a node deleted there
(its lines go with it).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from accounting.inputs.line_locks import lock_check_lines
from accounting.inputs.reopen import EVERY_HOUR, ledger_lines_reopen
from common.api import InputInvalid
from common.periods import instant_problem
from fleets.models import Fleet, Node, NodeCredential, Organization, Site
from fleets.services import IssuedToken, NodeRefused, node_create, node_token_revoke, node_token_rotate
from governance.audit import audit_record, snapshot
from governance.intervals import Window, windows_union

NODE_FIELDS = ("fleet", "site", "hostname", "tenure", "commissioned_at", "decommissioned_at")
MOVE_FIELDS = ("fleet_id", "site_id", "tenure")  # inputs of every line of the node
_EPOCH = EVERY_HOUR[0][0]


def _node(node: Node | None) -> dict[str, Any] | None:
    return snapshot(node, fields=NODE_FIELDS)


def _token(credential: NodeCredential | None) -> dict[str, Any] | None:
    """The token's row: node, revocation, and its prefix (not an editable field, so named here); never its hash."""
    shown = snapshot(credential, fields=("node", "revoked_at"))
    if credential is None or shown is None:
        return None
    return shown | {"prefix": credential.prefix}


def node_dates_problem(*, commissioned_at: datetime | None, decommissioned_at: datetime | None = None) -> str | None:
    """Why a node's commissioning or decommissioning date cannot be stored, each named, or ``None``.

    Each lies in the range of every dated input (``common.periods.instant_problem``), so the ledger can run the
    node's whole life from it (its embodied carbon, its depreciation) without leaving datetime's range. Checked
    here, where people's node changes are written, since the inventory (``fleets``) sits below ``common``.
    """
    dates = {"commissioned_at": commissioned_at, "decommissioned_at": decommissioned_at}
    problems = [f"{name}: {problem}" for name, at in dates.items() if (problem := instant_problem(at))]
    return "; ".join(problems) or None


def node_enroll_audited(
    *, user: Any, fleet: Fleet, site: Site, hostname: str, tenure: str | None, commissioned_at: datetime | None,
    now: datetime,
) -> tuple[Node, IssuedToken]:  # fmt: skip
    if problem := node_dates_problem(commissioned_at=commissioned_at):
        raise NodeRefused(problem)
    with transaction.atomic():
        node, issued = node_create(
            fleet=fleet, site=site, hostname=hostname, tenure=tenure, commissioned_at=commissioned_at
        )
        organization_id = fleet.organization_id
        audit_record(
            organization_id=organization_id, user=user, subject="node", object_id=node.pk, before=None,
            after=_node(node), at=now,
        )  # fmt: skip
        audit_record(
            organization_id=organization_id, user=user, subject="node_token", object_id=issued.credential.pk,
            before=None, after=_token(issued.credential), at=now,
        )  # fmt: skip
    return node, issued


def node_token_rotate_audited(*, user: Any, node: Node, revoke_others: bool, now: datetime) -> IssuedToken:
    with transaction.atomic():
        active = list(NodeCredential.objects.filter(node=node, revoked_at__isnull=True)) if revoke_others else []
        issued = node_token_rotate(node=node, revoke_others=revoke_others)
        organization_id = node.fleet.organization_id
        for old in active:
            stored = NodeCredential.objects.get(pk=old.pk)
            audit_record(
                organization_id=organization_id, user=user, subject="node_token", object_id=old.pk,
                before=_token(old), after=_token(stored), at=now,
            )  # fmt: skip
        audit_record(
            organization_id=organization_id, user=user, subject="node_token", object_id=issued.credential.pk,
            before=None, after=_token(issued.credential), at=now,
        )  # fmt: skip
    return issued


def node_token_revoke_audited(*, user: Any, credential: NodeCredential, now: datetime) -> NodeCredential:
    with transaction.atomic():
        before = _token(credential)
        revoked = node_token_revoke(credential=credential, now=now)
        audit_record(
            organization_id=revoked.node.fleet.organization_id, user=user, subject="node_token",
            object_id=revoked.pk, before=before, after=_token(revoked), at=now,
        )  # fmt: skip
    return revoked


def _organization_id(node_id: int) -> int:
    return int(Node.objects.filter(pk=node_id).values_list("fleet__organization_id", flat=True).get())


def _hour(instant: datetime) -> datetime:
    return instant.replace(minute=0, second=0, microsecond=0)


def node_change_windows(stored: Node, edited: Node) -> list[Window]:
    """The hours whose lines a node's change alters: every hour for a move (site, fleet, tenure); for a new
    commissioning or decommissioning date, the hours between the old date and the new (from the hour it falls in)."""
    if any(getattr(stored, name) != getattr(edited, name) for name in MOVE_FIELDS):
        return EVERY_HOUR
    windows: list[Window] = []
    old, new = stored.commissioned_at, edited.commissioned_at
    if old != new:  # no date: in service since ever
        early, late = sorted((old or _EPOCH, new or _EPOCH))
        windows.append((_hour(early), late))
    old, new = stored.decommissioned_at, edited.decommissioned_at
    if old != new:  # no date: in service still
        dates = sorted(d for d in (old, new) if d is not None)
        # From the hour the node was last held in: an owned node's disposal loss is booked there.
        windows.append((_hour(dates[0] - timedelta(microseconds=1)), dates[1] if len(dates) == 2 else None))
    return windows_union(windows)


def _node_lock_check(stored: Node, edited: Node, windows: list[Window]) -> None:
    """Refused when a stored line of the node in ``windows`` lies in a locked period of its organization, or of
    the one a new fleet takes it to."""
    organizations = {stored.fleet.organization_id, Fleet.objects.get(pk=edited.fleet_id).organization_id}
    for organization_id in sorted(organizations):
        Organization.objects.select_for_update().filter(pk=organization_id).first()
        lock_check_lines(organization_id=organization_id, node_ids=[stored.pk], windows=windows)


def inventory_row_save_audited(
    *, row: Node | NodeCredential, save: Callable[[], None], user: Any, now: datetime
) -> int:
    """A node or node token saved outside these services (the Django admin): ``save`` writes it, and the change
    is audited in the same transaction, as ``node`` / ``node_token`` with the fields the API's entries carry.
    A node's move or new dates are lock-checked and re-open its lines; returns the ledger hours re-opened.
    A date outside the dated inputs' range (``node_dates_problem``) is ``InputInvalid``, nothing written."""
    subject, shown = _SUBJECTS[type(row)]
    dated = isinstance(row, Node) and node_dates_problem(
        commissioned_at=row.commissioned_at, decommissioned_at=row.decommissioned_at
    )
    if dated:
        raise InputInvalid(dated)
    with transaction.atomic():
        stored = type(row)._default_manager.filter(pk=row.pk).first() if row.pk else None
        windows: list[Window] = []
        if isinstance(stored, Node) and isinstance(row, Node):
            windows = node_change_windows(stored, row)
            if windows:
                _node_lock_check(stored, row, windows)
        before = shown(stored)
        save()
        reopened = ledger_lines_reopen(node_windows={row.pk: windows}, now=now) if windows else 0
        organization_id = _organization_id(row.pk if isinstance(row, Node) else row.node_id)
        after = shown(type(row)._default_manager.get(pk=row.pk))
        if before != after:
            audit_record(
                organization_id=organization_id, user=user, subject=subject, object_id=row.pk, before=before,
                after=after, at=now, ledger_hours_reopened=reopened,
            )  # fmt: skip
    return reopened


def inventory_row_delete_audited(*, row: Node | NodeCredential, user: Any, now: datetime) -> None:
    """A node (its tokens and lines with it) or a node token deleted in the Django admin, audited in the same
    transaction; a node is refused while a stored line of it lies in a locked period."""
    subject, shown = _SUBJECTS[type(row)]
    with transaction.atomic():
        organization_id = _organization_id(row.pk if isinstance(row, Node) else row.node_id)
        if isinstance(row, Node):
            lock_check_lines(organization_id=organization_id, node_ids=[row.pk])
        tokens = list(NodeCredential.objects.filter(node=row)) if isinstance(row, Node) else []
        row_id, before = row.pk, shown(row)
        row.delete()
        for token in tokens:  # deleted with their node: each audited as its own row
            audit_record(
                organization_id=organization_id, user=user, subject="node_token", object_id=token.pk,
                before=_token(token), after=None, at=now,
            )  # fmt: skip
        audit_record(
            organization_id=organization_id, user=user, subject=subject, object_id=row_id, before=before,
            after=None, at=now,
        )  # fmt: skip


_SUBJECTS: dict[type, tuple[str, Callable[[Any], dict[str, Any] | None]]] = {
    Node: ("node", _node),
    NodeCredential: ("node_token", _token),
}
