"""``manage.py prometheus_import --source NAME --start T --end T [--organization SLUG]``: backfill from Prometheus.

Reads the DCGM series of a registered :class:`~telemetry.models.PrometheusSource` for ``[start, end)`` and stores
them through the ingest service (``telemetry.prometheus_import``); prints a line per page and a summary.
"""

from __future__ import annotations

import argparse
import contextlib
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.arguments import positive_number
from common.periods import instant_problem
from telemetry.models import PrometheusSource
from telemetry.prometheus_import import PrometheusClient, PrometheusImportError, prometheus_import


def _instant(text: str) -> datetime:
    """An ISO 8601 instant (naive: UTC) or Unix seconds, inside the product's dated-input range."""
    parsed: datetime | None = None
    try:
        seconds = float(text)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise CommandError(f"{text!r} is not an ISO 8601 time (2026-12-01T00:00Z) nor Unix seconds") from None
        parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    else:
        # A number past datetime's years (1e19, 1e400, nan) overflows or is no instant at all.
        with contextlib.suppress(OverflowError, OSError, ValueError):
            parsed = datetime.fromtimestamp(seconds, tz=UTC)
        if parsed is None:
            raise CommandError(f"{text!r} is not an instant (Unix seconds out of range)")
    if problem := instant_problem(parsed):
        raise CommandError(f"{text!r} {problem}")
    return parsed.astimezone(UTC)


def _step(text: str) -> float:
    """The query step: at least a second (a shorter one asks Prometheus for points no exporter scrapes)."""
    step = positive_number(text)
    if step < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is under 1 second")
    return step


class Command(BaseCommand):
    help = "Import GPU telemetry (dcgm-exporter's series) for [start, end) from a registered Prometheus."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--source", required=True, help="the PrometheusSource's name")
        parser.add_argument("--organization", help="its organization's slug (needed when several have that name)")
        parser.add_argument("--start", required=True, help="ISO 8601 (UTC when naive) or Unix seconds, included")
        parser.add_argument("--end", required=True, help="ISO 8601 (UTC when naive) or Unix seconds, excluded")
        parser.add_argument("--page-hours", type=positive_number, default=6.0, help="hours per query page (default 6)")
        parser.add_argument(
            "--step", type=_step, help="query step, s, at least 1 (default: the source's scrape interval)"
        )
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default 30)")
        parser.add_argument("--tries", type=int, default=3, help="tries per request, with backoff (default 3)")
        parser.add_argument(
            "--backoff", type=positive_number, default=1.0, help="first wait between tries, s (doubles)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = self._source(options["source"], options["organization"])
        start, end = _instant(options["start"]), _instant(options["end"])
        if not 0 < options["timeout"] <= 300:  # also refuses NaN
            raise CommandError(f"--timeout must be in (0, 300] seconds, got {options['timeout']}")
        if not 1 <= options["tries"] <= 10:
            raise CommandError(f"--tries must be 1 to 10, got {options['tries']}")
        client = PrometheusClient(
            source, timeout_s=options["timeout"], tries=options["tries"], backoff_s=options["backoff"]
        )
        self.stdout.write(f"importing {source.name} ({source.url}) for {start.isoformat()} .. {end.isoformat()}")
        try:
            summary = prometheus_import(
                source, start=start, end=end, page_hours=options["page_hours"], step_s=options["step"],
                client=client, progress=self.stdout.write,
            )  # fmt: skip
        except PrometheusImportError as error:  # on the operator's terminal, what Prometheus answered too
            answered = f"\nPrometheus answered: {error.detail}" if error.detail else ""
            raise CommandError(f"{error}{answered}") from None
        for line in summary.lines():
            self.stdout.write(line)

    def _source(self, name: str, slug: str | None) -> PrometheusSource:
        sources = PrometheusSource.objects.filter(name=name).select_related("organization")
        if slug:
            sources = sources.filter(organization__slug=slug)
        found = list(sources[:2])
        if not found:
            where = f" in organization {slug!r}" if slug else ""
            raise CommandError(f"no Prometheus source named {name!r}{where}")
        if len(found) > 1:
            raise CommandError(f"several organizations have a Prometheus source named {name!r}: pass --organization")
        return found[0]
