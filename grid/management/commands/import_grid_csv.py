"""``manage.py import_grid_csv``: store an organization's hourly intensities from a CSV file (audited, refused
whole when an hour falls inside a locked period, as the REST upload)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleets.management.arguments import add_file_argument, add_organization_argument, file_read, organization_named
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
        add_organization_argument(parser)
        parser.add_argument("--source", required=True, help="a name for this data, e.g. the supplier: acme-energy")
        add_file_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        organization = organization_named(options)
        text = file_read(options)
        try:
            stored, _ = intensity_upload_save(
                organization=organization, body=text, source_name=options["source"], user=None
            )
        except (CsvError, PeriodLocked) as exc:
            raise CommandError(f"{exc}\nnothing was stored") from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"stored {stored} hour(s) for {organization.slug} as csv:{options['source']}")
