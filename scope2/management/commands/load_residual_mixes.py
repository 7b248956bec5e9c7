"""``manage.py load_residual_mixes``: an organization's residual-mix factors from a CSV file.

Columns ``zone,year,gco2e_per_kwh,source`` (e.g. ``DE,2024,<figure>,AIB European
Residual Mixes 2024 v1.0 table 2``). Every row is saved, or none with each
refused line and its reason; a zone and year already held is replaced; each
row is audited (no user: the operator who ran the command).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q
from django.utils import timezone

from accounting.inputs.uploads import UploadInvalid
from fleets.models import Organization
from scope2.residual_mixes import residual_mixes_load


class Command(BaseCommand):
    help = "Load residual-mix factors (zone,year,gco2e_per_kwh,source) for one organization from a CSV file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", required=True, help="the organization's slug (or exact name)")
        parser.add_argument("file", type=Path, help="the CSV file (UTF-8)")

    def handle(self, *args: Any, **options: Any) -> None:
        key = options["organization"]
        organization = Organization.objects.filter(Q(slug=key) | Q(name=key)).first()
        if organization is None:
            raise CommandError(f"no organization with slug or name {key!r}")
        try:
            content = options["file"].read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from None
        try:
            result = residual_mixes_load(organization=organization, content=content, user=None, now=timezone.now())
        except UploadInvalid as exc:
            raise CommandError(str(exc)) from None
        if result.refused:
            lines = "\n".join(f"line {row['line']}: {row['reason']}" for row in result.refused)
            raise CommandError(f"{lines}\nnothing was saved")
        self.stdout.write(f"saved {result.saved} residual-mix factor(s) for {organization.slug}")
