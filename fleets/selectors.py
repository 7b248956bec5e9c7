"""Reads scoped to a user's organizations. Every view and admin goes through these."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from fleets.models import Fleet, Gpu, Membership, Node, NodeCredential, Organization, Role, Site

# Request users: a real user or AnonymousUser (which belongs to nothing).
AnyUser = Any


def organizations_for_user(*, user: AnyUser, roles: set[str] | None = None) -> QuerySet[Organization]:
    """The organizations ``user`` belongs to (with one of ``roles``, when given)."""
    if not user.is_authenticated:
        return Organization.objects.none()
    memberships = Membership.objects.filter(user=user)
    if roles is not None:
        memberships = memberships.filter(role__in=roles)
    return Organization.objects.filter(id__in=memberships.values("organization_id"))


def admin_organizations_for_user(*, user: AnyUser) -> QuerySet[Organization]:
    if getattr(user, "is_superuser", False):
        return Organization.objects.all()
    return organizations_for_user(user=user, roles={Role.ADMIN})


def memberships_for_user(*, user: AnyUser) -> QuerySet[Membership]:
    return Membership.objects.filter(organization__in=organizations_for_user(user=user))


def sites_for_user(*, user: AnyUser) -> QuerySet[Site]:
    return Site.objects.filter(organization__in=organizations_for_user(user=user))


def fleets_for_user(*, user: AnyUser) -> QuerySet[Fleet]:
    return Fleet.objects.filter(organization__in=organizations_for_user(user=user))


def nodes_for_user(*, user: AnyUser) -> QuerySet[Node]:
    return Node.objects.filter(fleet__organization__in=organizations_for_user(user=user))


def gpus_for_user(*, user: AnyUser) -> QuerySet[Gpu]:
    return Gpu.objects.filter(node__fleet__organization__in=organizations_for_user(user=user))


def credentials_for_user(*, user: AnyUser) -> QuerySet[NodeCredential]:
    return NodeCredential.objects.filter(node__fleet__organization__in=organizations_for_user(user=user))
