"""``manage.py enroll_node``: register a GPU host and print its token, once, on the last line.

The inventory's own service does the writes (``fleets.services.node_enroll``, validating each row as the
API does); the command lives with the ledger's inputs, beside the enrollment API, because the commissioning
date is a ledger input bounded as every dated input is (``common.periods``, which the inventory sits below).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.arguments import aware_instant
from fleets.models import Tenure
from fleets.services import node_enroll


class Command(BaseCommand):
    help = (
        "Create (or find) the organization, fleet, site and node, and print a fresh node token alone on the "
        "last line. Re-enrolling a node revokes its earlier tokens unless --keep-existing-tokens is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", required=True, help="organization name")
        parser.add_argument("--fleet", required=True, help="fleet name within the organization")
        parser.add_argument("--site", required=True, help="site name within the organization")
        parser.add_argument("--hostname", required=True, help="the node's host name")
        parser.add_argument("--grid-zone", default="", help="grid zone of a new site, e.g. US-CAL-CISO or DE")
        parser.add_argument("--country", default="", help="ISO 3166 alpha-2 country of a new site")
        parser.add_argument("--pue", default="1.0", help="PUE of a new site (default 1.0)")
        parser.add_argument("--time-zone", default="UTC", help="IANA time zone of a new site")
        parser.add_argument("--tenure", choices=Tenure.values, help="rented or owned (new node; default rented)")
        parser.add_argument(
            "--commissioned-at",
            type=aware_instant,
            help="when the node entered service, ISO 8601 with a UTC offset, e.g. 2025-11-01T00:00:00Z (default: now); "
            "telemetry before it is reported unpriced",
        )
        parser.add_argument(
            "--keep-existing-tokens", action="store_true", help="add a token without revoking the node's others"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            pue = Decimal(options["pue"])
        except InvalidOperation:
            raise CommandError(f"--pue {options['pue']!r} is not a number") from None
        site_defaults = {
            "grid_zone": options["grid_zone"],
            "country": options["country"].upper(),
            "pue": pue,
            "time_zone": options["time_zone"],
        }
        try:
            enrollment = node_enroll(
                organization_name=options["organization"],
                fleet_name=options["fleet"],
                site_name=options["site"],
                hostname=options["hostname"],
                site_defaults=site_defaults,
                tenure=options["tenure"],
                keep_existing_tokens=options["keep_existing_tokens"],
                commissioned_at=options["commissioned_at"],
            )
        except ValueError as exc:  # NodeRefused: the row and field refused, nothing written
            raise CommandError(str(exc)) from None
        self._report(enrollment, options)

    def _report(self, enrollment: Any, options: dict[str, Any]) -> None:
        node = enrollment.node
        for what, created in enrollment.created.items():
            self.stdout.write(f"{what}: {'created' if created else 'found'}")
        if enrollment.created["site"] and not options["grid_zone"]:
            self.stderr.write("warning: the new site has no grid zone; set one before carbon can be computed")
        if enrollment.revoked_count:
            self.stdout.write(f"revoked {enrollment.revoked_count} earlier token(s) of this node")
        commissioned = node.commissioned_at.isoformat() if node.commissioned_at else "not set"
        self.stdout.write(f"node id {node.pk} ({node.hostname}), commissioned at {commissioned}")
        self.stdout.write("the token below is shown only once:")
        self.stdout.write(enrollment.token)
