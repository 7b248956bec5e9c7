"""The arguments the file-loading commands share (``import_grid_csv``, ``load_residual_mixes``): the organization,
by its slug or exact name, and the CSV file, read whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db.models import Q

from fleets.models import Organization


def add_organization_argument(parser: CommandParser) -> None:
    parser.add_argument("--organization", required=True, help="the organization's slug (or exact name)")


def add_file_argument(parser: CommandParser) -> None:
    parser.add_argument("file", type=Path, help="the CSV file (UTF-8)")


def organization_named(options: dict[str, Any]) -> Organization:
    """The organization ``--organization`` names by slug or exact name; a ``CommandError`` when none does."""
    key = options["organization"]
    organization = Organization.objects.filter(Q(slug=key) | Q(name=key)).first()
    if organization is None:
        raise CommandError(f"no organization with slug or name {key!r}")
    return organization


def file_read(options: dict[str, Any]) -> bytes:
    """The file's bytes; a ``CommandError`` saying why it cannot be read."""
    try:
        return bytes(options["file"].read_bytes())
    except OSError as exc:
        raise CommandError(f"cannot read {options['file']}: {exc}") from None
