"""What every dashboard page starts from: the current organization and the period being looked at.

The organization comes from the session (``fleets.web``: set by the switcher,
always checked against the user's memberships); the period from the query
string, read by the one period parser (``common.periods``) that the report API
uses too. Bad values are not guessed at: the page says what is wrong and shows
the default.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest

from common.periods import CHART_GRANULARITIES, PRESETS, period_from_query
from fleets.selectors import organizations_for_user
from fleets.web import current_organization


def page_context(request: HttpRequest, *, now: datetime) -> dict[str, Any]:
    """Template context every dashboard page starts from."""
    return {
        "organization": current_organization(request),
        "organizations": organizations_for_user(user=request.user).order_by("name"),
        "period": period_from_query(request.GET, now=now),
        "presets": PRESETS,
        "granularities": CHART_GRANULARITIES,
    }
