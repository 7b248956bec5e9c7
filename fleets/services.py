"""Writes to the inventory: enrollment and node credentials."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, models, transaction
from django.utils import timezone
from django.utils.text import slugify

from config.postgresql import prepared
from fleets.models import Fleet, Node, NodeCredential, Organization, Site
from fleets.tokens import PREFIX_CHARS, token_generate, token_sha256

# A used token's last_used_at is written at most this often, so that every
# ingest request does not turn into an extra UPDATE.
LAST_USED_RESOLUTION = timedelta(minutes=1)
ModelT = TypeVar("ModelT", bound=models.Model)


@dataclass(frozen=True)
class Enrollment:
    node: Node
    token: str
    created: dict[str, bool]
    revoked_count: int


def organization_get_or_create(*, name: str) -> tuple[Organization, bool]:
    slug = slugify(name)
    if not slug:
        raise ValueError(f"organization name {name!r} has no letters or digits")
    existing = Organization.objects.filter(slug=slug).first()
    if existing is not None:
        return existing, False
    return Organization.objects.get_or_create(name=name, defaults={"slug": slug})


@transaction.atomic
def node_enroll(
    *,
    organization_name: str,
    fleet_name: str,
    site_name: str,
    hostname: str,
    site_defaults: dict[str, object] | None = None,
    tenure: str | None = None,
    keep_existing_tokens: bool = False,
    commissioned_at: datetime | None = None,
) -> Enrollment:
    """Create (or find) organization, fleet, site and node, and issue the node a token.

    The rule for a node that already has tokens: its active tokens are revoked,
    so that re-enrolling a host re-keys it; ``keep_existing_tokens`` adds the
    new token beside them instead (for a rolling hand-over). ``commissioned_at``
    (an aware datetime, default now) is when the node entered service: hours
    before it hold no price and are reported unpriced, never free. Given for a
    node already enrolled, it moves the node's commissioning date.
    """
    if commissioned_at is not None and timezone.is_naive(commissioned_at):
        raise ValueError("commissioned_at must be an aware datetime")
    organization, org_created = organization_get_or_create(name=organization_name)
    fleet, fleet_created = Fleet.objects.get_or_create(organization=organization, name=fleet_name)
    site, site_created = _site_get_or_create(organization=organization, name=site_name, defaults=site_defaults)
    node, node_created = Node.objects.get_or_create(
        fleet=fleet,
        hostname=hostname,
        defaults={"site": site, "tenure": tenure or "rented", "commissioned_at": commissioned_at or timezone.now()},
    )
    if not node_created and node.site_id != site.id:
        raise ValueError(f"node {hostname!r} is already enrolled at site {node.site.name!r}, not {site_name!r}")
    if not node_created and commissioned_at is not None and commissioned_at != node.commissioned_at:
        if node.decommissioned_at is not None and node.decommissioned_at < commissioned_at:
            raise ValueError(f"node {hostname!r} was decommissioned before {commissioned_at.isoformat()}")
        node.commissioned_at = commissioned_at
        node.save(update_fields=["commissioned_at"])
    revoked = 0 if keep_existing_tokens else credentials_revoke(node=node)
    token = credential_issue(node=node)
    created = {"organization": org_created, "fleet": fleet_created, "site": site_created, "node": node_created}
    return Enrollment(node=node, token=token, created=created, revoked_count=revoked)


def _site_get_or_create(
    *, organization: Organization, name: str, defaults: dict[str, object] | None
) -> tuple[Site, bool]:
    site = Site.objects.filter(organization=organization, name=name).first()
    if site is not None:
        return site, False
    site = Site(organization=organization, name=name, **(defaults or {}))
    site.full_clean()  # raises ValidationError before anything is written
    site.save()
    return site, True


def credential_issue(*, node: Node) -> str:
    """Issue a new token for ``node`` and return it; only its hash is stored."""
    token = token_generate()
    NodeCredential.objects.create(node=node, token_sha256=token_sha256(token), prefix=token[:PREFIX_CHARS])
    return token


def _credential_prepared(digest: str) -> NodeCredential | None:
    rows = prepared.fetch_all(_credential_sql(), [digest])
    if not rows:
        return None
    row = rows[0]
    credential = _instance(NodeCredential, row, 0)
    node = _instance(Node, row, len(_fields(NodeCredential)))
    node.fleet = _instance(Fleet, row, len(_fields(NodeCredential)) + len(_fields(Node)))
    credential.node = node
    return credential


@functools.cache
def _fields(model: type[models.Model]) -> tuple[str, ...]:
    return tuple(field.attname for field in model._meta.concrete_fields)


def _instance(model: type[ModelT], row: tuple[object, ...], start: int) -> ModelT:
    return model.from_db(DEFAULT_DB_ALIAS, _fields(model), row[start : start + len(_fields(model))])


@functools.cache
def _credential_sql() -> str:
    def columns(model: type[models.Model], alias: str) -> str:
        names = (field.column for field in model._meta.concrete_fields)
        return ", ".join(f'{alias}."{name}"' for name in names)

    credential, node, fleet = (m._meta.db_table for m in (NodeCredential, Node, Fleet))
    return (
        f"SELECT {columns(NodeCredential, 'c')}, {columns(Node, 'n')}, {columns(Fleet, 'f')} "  # noqa: S608
        f'FROM "{credential}" c JOIN "{node}" n ON n.id = c.node_id JOIN "{fleet}" f ON f.id = n.fleet_id '
        "WHERE c.token_sha256 = %s AND c.revoked_at IS NULL LIMIT 1"
    )


def credential_check_statement(*, digest: str, now: datetime) -> prepared.Statement:
    """A statement that finds the active credential of a token's ``digest`` (its id and node id, or no row),
    and writes its ``last_used_at`` as :func:`credential_authenticate` does, for a caller that runs it
    in the same round trip as its other statements, in its transaction (see ``telemetry.ingest``).

    When it writes ``last_used_at`` (once a minute) it holds the credential's row lock until that
    transaction ends: another batch of the same node, or a revocation, waits for one batch's commit."""
    table = NodeCredential._meta.db_table
    sql = (
        f'WITH c AS (SELECT id, node_id, last_used_at FROM "{table}" '  # noqa: S608
        "WHERE token_sha256 = %s AND revoked_at IS NULL LIMIT 1), "
        f'touched AS (UPDATE "{table}" SET last_used_at = %s '
        "WHERE id IN (SELECT id FROM c WHERE last_used_at IS NULL OR last_used_at <= %s)) "
        "SELECT id, node_id FROM c"
    )
    at = connection.ops.adapt_datetimefield_value
    return sql, [digest, at(now), at(now - LAST_USED_RESOLUTION)]


def credentials_revoke(*, node: Node) -> int:
    return NodeCredential.objects.filter(node=node, revoked_at__isnull=True).update(revoked_at=timezone.now())


def credential_authenticate(*, token: str, now: datetime | None = None) -> NodeCredential | None:
    """The active credential for ``token``, with its node and fleet; ``None`` if unknown or revoked.

    Every ingest request pays for this lookup, so on PostgreSQL it is one prepared
    statement (``select_related`` by hand: compiling the ORM query cost more than
    running it, and planning it on the server as much again). SQLite, the embedded
    default, takes the ORM's way (its values need the ORM's conversions).
    """
    digest = token_sha256(token)
    credential: NodeCredential | None
    if connection.vendor == "postgresql":
        credential = _credential_prepared(digest)
    else:
        active = NodeCredential.objects.select_related("node", "node__fleet").filter(revoked_at__isnull=True)
        credential = active.filter(token_sha256=digest).first()
    if credential is None:
        return None
    now = now or timezone.now()
    if credential.last_used_at is None or now - credential.last_used_at >= LAST_USED_RESOLUTION:
        NodeCredential.objects.filter(pk=credential.pk).update(last_used_at=now)
        credential.last_used_at = now
    return credential
