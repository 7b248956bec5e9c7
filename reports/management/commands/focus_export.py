"""``manage.py focus_export --organization SLUG [--period P | --start S --end E] [--granularity day] [--output F]``.

Writes the FOCUS 1.2 CSV that ``/api/v1/reports/focus/`` answers (``reports.focus``), for CI's validator run
(``make focus-check``) and for files handed over without the API.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from common.renderers import csv_lines
from reports.focus.charges import DAY, HOUR
from reports.focus.columns import COLUMNS
from reports.focus.rows import FocusSpec, focus_rows
from reports.management.period_arguments import add_period_arguments, organization_and_period


class Command(BaseCommand):
    help = "Write an organization's ledger as a FOCUS 1.2 cost and usage CSV, as /api/v1/reports/focus/ gives it."

    def add_arguments(self, parser: CommandParser) -> None:
        add_period_arguments(parser)
        parser.add_argument("--granularity", choices=["hour", "day"], default="hour", help="the charge period")
        parser.add_argument("--output", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        organization, start, end = organization_and_period(options)
        period = DAY if options["granularity"] == "day" else HOUR
        rows = focus_rows(spec=FocusSpec(organization_ids=[organization.pk], start=start, end=end, period=period))
        lines = csv_lines(COLUMNS, rows)
        if options["output"]:
            with open(options["output"], "w", newline="", encoding="utf-8") as out:
                out.writelines(lines)
        else:
            for line in lines:
                self.stdout.write(line, ending="")
