"""``manage.py headline --organization SLUG [--period P | --start S --end E] [--fleet F --baseline B]``.

Prints the comparison report by LLM model as ``/api/v1/reports/comparison/?by=llm_model`` answers it
(idle shown apart), then each LLM model's ratios of ``--fleet`` to ``--baseline`` (``reports.headline``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from common.periods import PeriodError, api_range
from fleets.models import Organization
from reports.headline import headline_lines, headline_rows


def _aware(text: str) -> datetime:
    moment = parse_datetime(text)
    if moment is None or timezone.is_naive(moment):
        raise CommandError(f"{text!r} is not a date and time with its offset, e.g. 2026-11-25T00:00:00Z")
    return moment


class Command(BaseCommand):
    help = (
        "Print the headline figures: the comparison report by LLM model (idle shown apart), as the API and "
        "/compare/?by=llm_model give it, and each LLM model's ratios of one fleet to a baseline fleet."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", required=True, help="organization slug or id")
        parser.add_argument("--period", help="as the API's: 2026, 2026-Q4, 2026-11 (default: the last 7 days)")
        parser.add_argument("--start", type=_aware, help="with --end: [start, end), e.g. 2026-11-24T00:00:00Z")
        parser.add_argument("--end", type=_aware)
        parser.add_argument("--fleet", default="consumer", help="the fleet compared (default: consumer)")
        parser.add_argument("--baseline", default="enterprise", help="the fleet it is compared with")

    def handle(self, *args: Any, **options: Any) -> None:
        ref = options["organization"]
        organization = Organization.objects.filter(**({"pk": ref} if ref.isdigit() else {"slug": ref})).first()
        if organization is None:
            raise CommandError(f"no organization {ref!r}")
        try:
            start, end = api_range(options["period"], options["start"], options["end"], now=timezone.now())
        except PeriodError as error:
            raise CommandError(str(error)) from None
        rows = headline_rows(organization_ids=[organization.pk], start=start, end=end)
        title = f"{organization.name} ({organization.slug}), {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
        for line in headline_lines(rows, title=title, fleet=options["fleet"], baseline=options["baseline"]):
            self.stdout.write(line)
