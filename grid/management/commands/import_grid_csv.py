"""``manage.py import_grid_csv``: store an organization's hourly intensities from a CSV file (audited, refused
whole when an hour falls inside a locked period, as the REST upload)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from fleets.models import Organization
from governance.locks import PeriodLocked
from grid import CsvError
from grid.upload_service import intensity_upload_save


class Command(BaseCommand):
    help = (
        "Store hourly grid intensities (zone,hour_start,gco2e_per_kwh[,kind]) for one organization, tagged "
        "csv:<source>. The whole file is stored or, if any line is wrong, nothing: the problems are listed "
        "with their line numbers and the command exits non-zero."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", required=True, help="the organization's slug (or exact name)")
        parser.add_argument("--source", required=True, help="a name for this data, e.g. the supplier: acme-energy")
        parser.add_argument("file", type=Path, help="the CSV file (UTF-8)")

    def handle(self, *args: Any, **options: Any) -> None:
        organization = _organization(options["organization"])
        try:
            text = options["file"].read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from None
        try:
            stored, _ = intensity_upload_save(
                organization=organization, body=text, source_name=options["source"], user=None
            )
        except CsvError as exc:
            raise CommandError(f"{exc}\nnothing was stored") from None
        except PeriodLocked as exc:
            raise CommandError(f"{exc}\nnothing was stored") from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"stored {stored} hour(s) for {organization.slug} as csv:{options['source']}")


def _organization(key: str) -> Organization:
    organization = Organization.objects.filter(Q(slug=key) | Q(name=key)).first()
    if organization is None:
        raise CommandError(f"no organization with slug or name {key!r}")
    return organization
