"""``manage.py otlp_push --organization SLUG --endpoint URL [--header K=V ...] [--timeout S] [--per-node]``.

Pushes the organization's ``/metrics`` families once, over OTLP/HTTP (protobuf), to the endpoint
(``reports.otlp``): a URL without a path gets ``/v1/metrics``. Run it from cron or a sidecar as often as
Prometheus would scrape (the counters step once an hour). Exit status 1 with the exporter's reason when
the endpoint does not take the push (refused, an error status, a timeout).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from common.arguments import positive_number
from fleets.models import Organization
from reports.otlp import OtlpPushError, headers_parsed, otlp_push


class Command(BaseCommand):
    help = "Push an organization's ledger metrics (those of /metrics) to an OTLP/HTTP endpoint, once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organization", required=True, help="the organization's slug: its series alone")
        parser.add_argument(
            "--endpoint", required=True, help="the OTLP/HTTP URL (http://collector:4318, or its /v1/metrics)"
        )
        parser.add_argument("--header", action="append", default=[], help="NAME=VALUE sent with the push; repeatable")
        parser.add_argument(
            "--timeout", type=positive_number, default=10.0, help="seconds for the push, retries included"
        )
        parser.add_argument("--per-node", action="store_true", help="a series per node, as /metrics?per_node=true")

    def handle(self, *args: Any, **options: Any) -> None:
        organization = Organization.objects.filter(slug=options["organization"]).first()
        if organization is None:
            raise CommandError(f"no organization {options['organization']!r}")
        try:
            headers = headers_parsed(options["header"])
            pushed = otlp_push(
                organization=organization, endpoint=options["endpoint"], headers=headers,
                timeout_s=options["timeout"], per_node=options["per_node"], now=timezone.now(),
            )  # fmt: skip
        except OtlpPushError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(
            f"{organization.slug}: pushed {pushed.data_points} data point(s) of {pushed.metrics} metric(s) "
            f"to {pushed.url}"
        )
