"""Sum the ledger's site-hours again from the lines, or check them against the lines (``accounting.site_hours``,
the served site-hours of ``accounting.served_hours``, the node-days and serving days of ``accounting.node_days``).

    python manage.py ledger_site_hours [--organization ID ...] [--check]

The product writes them with the lines; run this after lines were written some other way (a restore of
the lines alone, SQL by hand). ``--check`` changes nothing and exits 1 when a row differs from its lines.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounting.site_hours import site_hours_check, site_hours_pending, site_hours_rebuild
from common.arguments import positive_id


class Command(BaseCommand):
    help = (
        "Sum the ledger's site-hours, served site-hours, node-days and serving days again from the node-hour lines "
        "(--check: compare only)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--organization", type=positive_id, action="append", help="only this organization's id (repeatable)"
        )
        parser.add_argument("--check", action="store_true", help="compare with the lines, change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        organization_ids = options["organization"]
        if options["check"]:
            marked = site_hours_pending(organization_ids=organization_ids)
            if marked:
                self.stdout.write(f"{len(marked)} site-hour(s) marked to be summed again, not compared")
            problems = site_hours_check(organization_ids=organization_ids)
            for problem in problems[:50]:
                self.stdout.write(problem)
            if problems:
                raise CommandError(f"{len(problems)} site-hour figure(s) differ from their lines")
            self.stdout.write("site-hours agree with the lines")
            return
        written = site_hours_rebuild(organization_ids=organization_ids)
        self.stdout.write(f"{written} site-hour row(s) written from the lines")
