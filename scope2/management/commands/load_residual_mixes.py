"""``manage.py load_residual_mixes``: an organization's residual-mix factors from a CSV file.

Columns ``zone,year,gco2e_per_kwh,source`` (e.g. ``DE,2024,<figure>,AIB European
Residual Mixes 2024 v1.0 table 2``). Every row is saved, or none with each
refused line and its reason; a zone and year already held is replaced; each
row is audited (no user: the operator who ran the command).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounting.inputs.uploads import UploadInvalid
from fleets.management.arguments import add_file_argument, add_organization_argument, file_read, organization_named
from scope2.residual_mixes import residual_mixes_load


class Command(BaseCommand):
    help = "Load residual-mix factors (zone,year,gco2e_per_kwh,source) for one organization from a CSV file."

    def add_arguments(self, parser: CommandParser) -> None:
        add_organization_argument(parser)
        add_file_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        organization = organization_named(options)
        content = file_read(options)
        try:
            result = residual_mixes_load(organization=organization, content=content, user=None, now=timezone.now())
        except UploadInvalid as exc:
            raise CommandError(str(exc)) from None
        if result.refused:
            lines = "\n".join(f"line {row['line']}: {row['reason']}" for row in result.refused)
            raise CommandError(f"{lines}\nnothing was saved")
        self.stdout.write(f"saved {result.saved} residual-mix factor(s) for {organization.slug}")
