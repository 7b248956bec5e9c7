"""``manage.py headline --organization SLUG [--period P | --start S --end E] [--fleet F --baseline B]``.

Prints the comparison report by LLM model as ``/api/v1/reports/comparison/?by=llm_model`` answers it
(idle shown apart), then each LLM model's ratios of ``--fleet`` to ``--baseline`` (``reports.headline``).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from reports.headline import headline_lines, headline_rows
from reports.management.period_arguments import add_period_arguments, organization_and_period


class Command(BaseCommand):
    help = (
        "Print the headline figures: the comparison report by LLM model (idle shown apart), as the API and "
        "/compare/?by=llm_model give it, and each LLM model's ratios of one fleet to a baseline fleet."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_period_arguments(parser)
        parser.add_argument("--fleet", default="consumer", help="the fleet compared (default: consumer)")
        parser.add_argument("--baseline", default="enterprise", help="the fleet it is compared with")

    def handle(self, *args: Any, **options: Any) -> None:
        organization, start, end = organization_and_period(options)
        rows = headline_rows(organization_ids=[organization.pk], start=start, end=end)
        title = f"{organization.name} ({organization.slug}), {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
        for line in headline_lines(rows, title=title, fleet=options["fleet"], baseline=options["baseline"]):
            self.stdout.write(line)
