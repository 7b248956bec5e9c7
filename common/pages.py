"""What every dashboard page starts from: the current organization and the period being looked at.

The organization comes from the session (``fleets.web``: set by the switcher,
always checked against the user's memberships); the period from the query
string, read by the one period parser (``common.periods``) that the report API
uses too. Bad values are not guessed at: the page says what is wrong and shows
the default.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.http import HttpRequest

from common.periods import CHART_GRANULARITIES, PRESETS, holds_open_hours, period_from_query
from fleets.models import Organization
from fleets.selectors import organizations_for_user
from fleets.web import current_organization

# Through when an organization's ledger is complete at a given time (``reports.selectors.complete``, which this
# layer cannot import: a page passes it in).
CompleteThrough = Callable[[Organization | None, datetime], datetime]


def page_context(request: HttpRequest, *, now: datetime, through: CompleteThrough | None = None) -> dict[str, Any]:
    """Template context every dashboard page starts from.

    ``complete_through``: the end of the organization's last complete hour (``through``; without it, the end
    of the last hour over), where the period's presets up to now end; ``includes_open_hours``: whether the period
    shown asks for later hours, whose figures may still change.
    """
    organization = current_organization(request)
    last_over = now.replace(minute=0, second=0, microsecond=0)
    complete = through(organization, now) if through is not None else last_over
    period = period_from_query(request.GET, now=now, through=complete)
    return {
        "organization": organization,
        "organizations": organizations_for_user(user=request.user).order_by("name"),
        "period": period,
        "complete_through": complete,
        "includes_open_hours": holds_open_hours(period.end, complete),
        # Only a page that asked for its organization's complete hours says how far they reach.
        "completeness_known": through is not None,
        "presets": PRESETS,
        "granularities": CHART_GRANULARITIES,
    }
