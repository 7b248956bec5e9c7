"""Node and node-token changes made by people (API, page and Django admin), audited: the ``engineer`` role's work.

The inventory's own services (``fleets.services``) do the writes; this adds the
audit entry in the same transaction. A token's plaintext is never audited nor
stored: its prefix and its row's id are.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction

from fleets.models import Fleet, Node, NodeCredential, Site
from fleets.services import IssuedToken, node_create, node_token_revoke, node_token_rotate
from governance.audit import audit_record, snapshot

NODE_FIELDS = ("fleet", "site", "hostname", "tenure", "commissioned_at", "decommissioned_at")


def _node(node: Node | None) -> dict[str, Any] | None:
    return snapshot(node, fields=NODE_FIELDS)


def _token(credential: NodeCredential | None) -> dict[str, Any] | None:
    """The token's row: node, revocation, and its prefix (not an editable field, so named here); never its hash."""
    shown = snapshot(credential, fields=("node", "revoked_at"))
    if credential is None or shown is None:
        return None
    return shown | {"prefix": credential.prefix}


def node_enroll_audited(
    *, user: Any, fleet: Fleet, site: Site, hostname: str, tenure: str | None, commissioned_at: datetime | None,
    now: datetime,
) -> tuple[Node, IssuedToken]:  # fmt: skip
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


def inventory_row_save_audited(
    *, row: Node | NodeCredential, save: Callable[[], None], user: Any, now: datetime
) -> None:
    """A node or node token saved outside these services (the Django admin): ``save`` writes it, and the change
    is audited in the same transaction, as ``node`` / ``node_token`` with the fields the API's entries carry."""
    subject, shown = _SUBJECTS[type(row)]
    with transaction.atomic():
        stored = type(row)._default_manager.filter(pk=row.pk).first() if row.pk else None
        before = shown(stored)
        save()
        organization_id = _organization_id(row.pk if isinstance(row, Node) else row.node_id)
        after = shown(type(row)._default_manager.get(pk=row.pk))
        if before != after:
            audit_record(
                organization_id=organization_id, user=user, subject=subject, object_id=row.pk, before=before,
                after=after, at=now,
            )  # fmt: skip


def inventory_row_delete_audited(*, row: Node | NodeCredential, user: Any, now: datetime) -> None:
    """A node (its tokens with it) or a node token deleted in the Django admin, audited in the same transaction."""
    subject, shown = _SUBJECTS[type(row)]
    with transaction.atomic():
        organization_id = _organization_id(row.pk if isinstance(row, Node) else row.node_id)
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
