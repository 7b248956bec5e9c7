"""What each role may change: the one rule every write endpoint and page asks.

``finance`` edits prices, tariffs, PUE and GPU assets; ``sustainability`` edits
instruments, intensity uploads and market factors; ``engineer`` manages nodes
and tokens and defines workload classes (placement advice); ``viewer`` reads;
``admin`` does all of these, and alone locks periods, reads the audit trail and
sets where advice notifications go. Reading needs only membership.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from fleets.models import Organization, Role
from fleets.selectors import organizations_for_user


class Capability(StrEnum):
    PRICES = "prices"  # node prices, site tariffs, PUE, GPU assets
    SUSTAINABILITY = "sustainability"  # instruments, intensity uploads, market factors
    NODES = "nodes"  # nodes and tokens
    GOVERNANCE = "governance"  # locked periods, the audit trail
    WORKLOADS = "workloads"  # workload classes of placement advice
    NOTIFICATIONS = "notifications"  # where advice changes are sent (webhook URL, e-mail addresses)


ROLES_FOR: dict[Capability, frozenset[str]] = {
    Capability.PRICES: frozenset({Role.ADMIN, Role.FINANCE}),
    Capability.SUSTAINABILITY: frozenset({Role.ADMIN, Role.SUSTAINABILITY}),
    Capability.NODES: frozenset({Role.ADMIN, Role.ENGINEER}),
    Capability.GOVERNANCE: frozenset({Role.ADMIN}),
    Capability.WORKLOADS: frozenset({Role.ADMIN, Role.ENGINEER}),
    Capability.NOTIFICATIONS: frozenset({Role.ADMIN}),
}

_WHAT = {
    Capability.PRICES: "editing prices, tariffs, PUE and GPU assets needs the admin or finance role",
    Capability.SUSTAINABILITY: (
        "editing instruments, intensity and market factors needs the admin or sustainability role"
    ),
    Capability.NODES: "managing nodes and tokens needs the admin or engineer role",
    Capability.GOVERNANCE: "locking periods and reading the audit trail needs the admin role",
    Capability.WORKLOADS: "defining workload classes needs the admin or engineer role",
    Capability.NOTIFICATIONS: "reading or changing the advice settings (webhook, e-mail) needs the admin role",
}


class RoleRefused(PermissionError):
    """The user belongs to the organization but their role may not do this; the message says which may."""


def may_change(*, user: Any, organization: Organization | int, capability: Capability) -> bool:
    organization_id = organization if isinstance(organization, int) else organization.pk
    roles = {str(role) for role in ROLES_FOR[capability]}
    return organizations_for_user(user=user, roles=roles).filter(pk=organization_id).exists()


def may_change_page(*, user: Any, organization: Organization | None, capability: Capability) -> bool:
    """Whether a page's forms are live: an organization is chosen and the user's role may change it."""
    return organization is not None and may_change(user=user, organization=organization, capability=capability)


def change_check(*, user: Any, organization: Organization | int, capability: Capability) -> None:
    """Raise ``RoleRefused`` unless ``user`` holds a role of ``organization`` that grants ``capability``."""
    if not may_change(user=user, organization=organization, capability=capability):
        raise RoleRefused(_WHAT[capability])
