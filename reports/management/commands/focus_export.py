"""``manage.py focus_export --organization SLUG [--period P | --start S --end E] [--granularity day] [--output F]``.

Writes the FOCUS 1.2 CSV that ``/api/v1/reports/focus/`` answers (``reports.focus``), for CI's validator run
(``make focus-check``) and for files handed over without the API.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from common.periods import PeriodError, api_range
from common.renderers import csv_lines
from fleets.models import Organization
from reports.focus.charges import DAY, HOUR
from reports.focus.columns import COLUMNS
from reports.focus.rows import FocusSpec, focus_rows
from reports.management.commands.headline import _aware


class Command(BaseCommand):
    help = "Write an organization's ledger as a FOCUS 1.2 cost and usage CSV, as /api/v1/reports/focus/ gives it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", required=True, help="organization slug or id")
        parser.add_argument("--period", help="as the API's: 2026, 2026-Q4, 2026-11 (default: the last 7 days)")
        parser.add_argument("--start", type=_aware, help="with --end: [start, end), e.g. 2026-11-24T00:00:00Z")
        parser.add_argument("--end", type=_aware)
        parser.add_argument("--granularity", choices=["hour", "day"], default="hour", help="the charge period")
        parser.add_argument("--output", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        ref = options["organization"]
        organization = Organization.objects.filter(**({"pk": ref} if ref.isdigit() else {"slug": ref})).first()
        if organization is None:
            raise CommandError(f"no organization {ref!r}")
        try:
            start, end = api_range(options["period"], options["start"], options["end"], now=timezone.now())
        except PeriodError as error:
            raise CommandError(str(error)) from None
        period = DAY if options["granularity"] == "day" else HOUR
        rows = focus_rows(spec=FocusSpec(organization_ids=[organization.pk], start=start, end=end, period=period))
        lines = csv_lines(COLUMNS, rows)
        if options["output"]:
            with open(options["output"], "w", newline="", encoding="utf-8") as out:
                out.writelines(lines)
        else:
            sys.stdout.writelines(lines)
