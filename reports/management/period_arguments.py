"""The organization and period arguments of the report commands (``headline``, ``focus_export``), read as the API
reads them: ``--organization SLUG [--period P | --start S --end E]``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from common.periods import PeriodError, api_range
from fleets.models import Organization


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
    """The organization named and the period ``[start, end)`` asked for; a ``CommandError`` for either unknown."""
    ref = options["organization"]
    organization = Organization.objects.filter(**({"pk": ref} if ref.isdigit() else {"slug": ref})).first()
    if organization is None:
        raise CommandError(f"no organization {ref!r}")
    try:
        start, end = api_range(options["period"], options["start"], options["end"], now=timezone.now())
    except PeriodError as error:
        raise CommandError(str(error)) from None
    return organization, start, end
