"""The organization and period arguments of the report commands (``headline``, ``focus_export``), read as the API
reads them: ``--organization SLUG [--period P | --start S --end E]``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework.exceptions import NotFound

from common.periods import PeriodError, api_range
from common.scope import organization_named
from fleets.models import Organization
from reports.selectors.complete import complete_through


def _aware(text: str) -> datetime:
    moment = parse_datetime(text)
    if moment is None or timezone.is_naive(moment):
        raise CommandError(f"{text!r} is not a date and time with its offset, e.g. 2026-11-25T00:00:00Z")
    return moment


def add_period_arguments(parser: CommandParser) -> None:
    """``--organization`` (required), then ``--period`` or ``--start`` with ``--end``."""
    parser.add_argument("--organization", required=True, help="organization slug or id")
    parser.add_argument("--period", help="as the API's: 2026, 2026-Q4, 2026-11 (default: the last 7 days)")
    parser.add_argument("--start", type=_aware, help="with --end: [start, end), e.g. 2026-11-24T00:00:00Z")
    parser.add_argument("--end", type=_aware)


def organization_and_period(options: dict[str, Any]) -> tuple[Organization, datetime, datetime]:
    """The organization named and the period ``[start, end)`` asked for; a ``CommandError`` for either unknown.

    With no period the default is the API's: the last 7 days ending at the organization's complete-through hour
    (``reports.selectors.complete``), so the terminal shows the figures the API and the pages show."""
    ref = options["organization"]
    try:
        organization = organization_named(Organization.objects.all(), ref)
    except NotFound:
        raise CommandError(f"no organization {ref!r}") from None
    now = timezone.now()
    through = complete_through(organization_ids=[organization.pk], now=now)
    try:
        start, end = api_range(options["period"], options["start"], options["end"], now=now, through=through)
    except PeriodError as error:
        raise CommandError(str(error)) from None
    return organization, start, end
