"""Node and node-token changes made by people (API and page), audited: the ``engineer`` role's work.

The inventory's own services (``fleets.services``) do the writes; this adds the
audit entry in the same transaction. A token's plaintext is never audited nor
stored: its prefix and its row's id are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from accounting.inputs.audit import audit_record, snapshot
from fleets.models import Fleet, Node, NodeCredential, Site
from fleets.services import IssuedToken, node_create, node_token_revoke, node_token_rotate

_TOKEN_FIELDS = ("node", "prefix", "created_at", "revoked_at")


def _token(credential: NodeCredential) -> dict[str, Any] | None:
    return snapshot(credential, fields=_TOKEN_FIELDS)


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
            after=snapshot(node, fields=("fleet", "site", "hostname", "tenure", "commissioned_at")), at=now,
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
