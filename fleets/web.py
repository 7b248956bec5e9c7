"""The organization a signed-in person is looking at, kept in their session.

The switcher stores its id; it is always checked against the user's
memberships, so a stale or forged id falls back to their first organization.
What every page starts from (this and the period) is ``common.pages``.
"""

from __future__ import annotations

from django.http import HttpRequest

from fleets.models import Organization
from fleets.selectors import organizations_for_user

SESSION_ORGANIZATION = "organization_id"


def current_organization(request: HttpRequest) -> Organization | None:
    """The organization chosen in the session if the user belongs to it, else their first one."""
    organizations = organizations_for_user(user=request.user).order_by("name")
    chosen = request.session.get(SESSION_ORGANIZATION)
    found = organizations.filter(pk=chosen).first() if isinstance(chosen, int) else None
    return found or organizations.first()
