"""Writes to the inventory: enrollment, node credentials (issue, rotate, revoke)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator
from django.db import DEFAULT_DB_ALIAS, connection, transaction
from django.db.models import Model
from django.utils import timezone
from django.utils.text import slugify

from fleets.models import Fleet, Node, NodeCredential, Organization, Site
from fleets.tokens import PREFIX_CHARS, token_generate, token_sha256

# A used token's last_used_at is written at most this often, so that every
# ingest request does not turn into an extra UPDATE.
LAST_USED_RESOLUTION = timedelta(minutes=1)
ModelT = TypeVar("ModelT", bound=Model)


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
    existing = Organization.objects.filter(slug=slug).first() or Organization.objects.filter(name=name).first()
    if existing is not None:
        return existing, False
    return _created(Organization(name=name, slug=slug), "organization"), True


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

    Each row created or changed is validated as the API validates it (``full_clean``; a new node through
    ``node_create``): a refusal is a ``NodeRefused`` naming the row and field, and leaves nothing written.
    """
    if commissioned_at is not None and timezone.is_naive(commissioned_at):
        raise NodeRefused("commissioned_at must be an aware datetime")
    # Before any lookup by these names: PostgreSQL refuses a NUL in a query's text, as a DataError.
    for value, what in (
        (organization_name, "invalid organization: name"), (fleet_name, "invalid fleet: name"),
        (site_name, "invalid site: name"), (hostname, "hostname"),
    ):  # fmt: skip
        _without_nul(value, what)
    organization, org_created = organization_get_or_create(name=organization_name)
    fleet, fleet_created = _fleet_get_or_create(organization=organization, name=fleet_name)
    site, site_created = _site_get_or_create(organization=organization, name=site_name, defaults=site_defaults)
    node = Node.objects.filter(fleet=fleet, hostname=hostname).first()
    created = {"organization": org_created, "fleet": fleet_created, "site": site_created, "node": node is None}
    if node is None:
        node, issued = node_create(
            fleet=fleet, site=site, hostname=hostname, tenure=tenure, commissioned_at=commissioned_at
        )
        return Enrollment(node=node, token=issued.token, created=created, revoked_count=issued.revoked_count)
    _node_redate(node, site=site, commissioned_at=commissioned_at)
    revoked = 0 if keep_existing_tokens else credentials_revoke(node=node)
    return Enrollment(node=node, token=credential_issue(node=node), created=created, revoked_count=revoked)


def _without_nul(value: str, what: str) -> None:
    """``NodeRefused`` naming ``what`` for a value holding a NUL character (the models' own validator's words)."""
    try:
        ProhibitNullCharactersValidator()(value)
    except ValidationError as error:
        raise NodeRefused(f"{what}: {' '.join(error.messages)}") from None


def _cleaned(row: Model, what: str | None = None) -> None:
    """``row.full_clean()``, as the API validates a row; ``NodeRefused`` naming ``what`` (the row) and each field."""
    try:
        row.full_clean()
    except ValidationError as error:
        fields = "; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())
        raise NodeRefused(f"invalid {what}: {fields}" if what else fields) from None


def _created(row: ModelT, what: str) -> ModelT:
    """``row`` validated (``_cleaned``), then saved."""
    _cleaned(row, what)
    row.save()
    return row


def _fleet_get_or_create(*, organization: Organization, name: str) -> tuple[Fleet, bool]:
    fleet = Fleet.objects.filter(organization=organization, name=name).first()
    if fleet is not None:
        return fleet, False
    return _created(Fleet(organization=organization, name=name), "fleet"), True


def _site_get_or_create(
    *, organization: Organization, name: str, defaults: dict[str, object] | None
) -> tuple[Site, bool]:
    site = Site.objects.filter(organization=organization, name=name).first()
    if site is not None:
        return site, False
    return _created(Site(organization=organization, name=name, **(defaults or {})), "site"), True


def _node_redate(node: Node, *, site: Site, commissioned_at: datetime | None) -> None:
    """A node enrolled again: at the same site only; ``commissioned_at`` (if given) moves its commissioning."""
    if node.site_id != site.pk:
        raise NodeRefused(f"node {node.hostname!r} is already enrolled at site {node.site.name!r}, not {site.name!r}")
    if commissioned_at is None or commissioned_at == node.commissioned_at:
        return
    if node.decommissioned_at is not None and node.decommissioned_at < commissioned_at:
        raise NodeRefused(f"node {node.hostname!r} was decommissioned before {commissioned_at.isoformat()}")
    node.commissioned_at = commissioned_at
    _cleaned(node)
    node.save(update_fields=["commissioned_at"])


def credential_issue(*, node: Node) -> str:
    """Issue a new token for ``node`` and return it; only its hash is stored."""
    token = token_generate()
    NodeCredential.objects.create(node=node, token_sha256=token_sha256(token), prefix=token[:PREFIX_CHARS])
    return token


def credentials_revoke(*, node: Node) -> int:
    return NodeCredential.objects.filter(node=node, revoked_at__isnull=True).update(revoked_at=timezone.now())


def credential_authenticate(*, token: str, now: datetime | None = None) -> NodeCredential | None:
    """The active credential for ``token``, with its node; ``None`` if unknown or revoked.

    Looked up on every ingest request (one indexed read), so a revocation holds
    from the next request on. The statement is written once as SQL: compiling
    the ORM's query cost four times the CPU of running it. The credential and its
    node come back with only their ids loaded; other fields load on first use
    (Django's deferred fields).
    """
    now = now or timezone.now()
    stale_before = connection.ops.adapt_datetimefield_value(now - LAST_USED_RESOLUTION)
    with connection.cursor() as cursor:
        cursor.execute(_credential_sql(), [stale_before, token_sha256(token)])
        row = cursor.fetchone()
    if row is None:
        return None
    credential_id, node_id, last_used_stale = row
    credential = NodeCredential.from_db(DEFAULT_DB_ALIAS, ["id", "node_id"], [credential_id, node_id])
    credential.node = Node.from_db(DEFAULT_DB_ALIAS, ["id"], [node_id])
    if last_used_stale:
        NodeCredential.objects.filter(pk=credential_id).update(last_used_at=now)
    return credential


@functools.cache
def _credential_sql() -> str:
    table = NodeCredential._meta.db_table
    return (
        f'SELECT id, node_id, (last_used_at IS NULL OR last_used_at <= %s) FROM "{table}" '  # noqa: S608
        "WHERE token_sha256 = %s AND revoked_at IS NULL"
    )


@dataclass(frozen=True)
class IssuedToken:
    """A node token just issued: the plaintext (shown once, never stored), its stored row, what it replaced."""

    credential: NodeCredential
    token: str
    revoked_count: int


class NodeRefused(ValueError):
    """A node or token change that cannot be made as asked; the message says why."""


@transaction.atomic
def node_create(
    *, fleet: Fleet, site: Site, hostname: str, tenure: str | None = None, commissioned_at: datetime | None = None
) -> tuple[Node, IssuedToken]:
    """Enroll a new node in ``fleet`` at ``site`` (both of one organization) and issue its first token."""
    if fleet.organization_id != site.organization_id:
        raise NodeRefused("the site must belong to the fleet's organization")
    if Node.objects.filter(fleet=fleet, hostname=hostname).exists():
        raise NodeRefused(f"node {hostname!r} is already enrolled in fleet {fleet.name!r}: rotate its token instead")
    if commissioned_at is not None and timezone.is_naive(commissioned_at):
        raise NodeRefused("commissioned_at must be an aware datetime")
    node = Node(
        fleet=fleet, site=site, hostname=hostname, tenure=tenure or "rented",
        commissioned_at=commissioned_at or timezone.now(),
    )  # fmt: skip
    _cleaned(node)
    node.save()
    return node, node_token_rotate(node=node, revoke_others=True)


@transaction.atomic
def node_token_rotate(*, node: Node, revoke_others: bool = True) -> IssuedToken:
    """Issue ``node`` a new token; its active ones are revoked unless ``revoke_others`` is false (a hand-over)."""
    Node.objects.select_for_update().filter(pk=node.pk).first()
    revoked = credentials_revoke(node=node) if revoke_others else 0
    token = credential_issue(node=node)
    credential = NodeCredential.objects.get(token_sha256=token_sha256(token))
    return IssuedToken(credential=credential, token=token, revoked_count=revoked)


def node_token_revoke(*, credential: NodeCredential, now: datetime) -> NodeCredential:
    """Revoke one token of a node from the next ingest request on (already revoked: kept as it was)."""
    NodeCredential.objects.filter(pk=credential.pk, revoked_at__isnull=True).update(revoked_at=now)
    credential.refresh_from_db()
    return credential
