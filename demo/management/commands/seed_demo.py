"""``manage.py seed_demo``: the demo organization, its two fleets and their history, through the real path.

Safe to run again: it updates the inventory in place and sends only the
history that is missing. See ``demo`` for what it creates.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.arguments import aware_instant, positive_number
from demo import spec
from demo.backfill import BackfillError
from demo.seed import NothingToResume, SeedOptions, SeedReport, demo_seed, history_settings, rest_options, window
from demo.server import ServerError
from demo.tokens import demo_dir
from reports.headline import headline_lines, headline_rows


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = (
        "Create (or update) the demo organization 'Demo AI' with an enterprise (H100) and a consumer (RTX 4090) "
        "fleet, and backfill their history through simulated collectors, the ingest API, rollups and the ledger. "
        "Safe to run again: it resumes without duplicating data."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=float, default=14, help="days of history to backfill (default 14)")
        parser.add_argument("--no-backfill", action="store_true", help="only the inventory, prices and intensity")
        parser.add_argument(
            "--first-days",
            type=float,
            metavar="N",
            help="send only the last N days now, so the demo can serve at once; --rest sends the others later",
        )
        parser.add_argument(
            "--rest", action="store_true", help="send what the window of an earlier --first-days run still lacks"
        )
        parser.add_argument(
            "--server", metavar="URL", help="send the history to this server (default: a temporary one on 127.0.0.1)"
        )
        # For tests and benchmarks: a fixed window, a shorter one, another sample interval.
        parser.add_argument("--end", type=aware_instant, help=argparse.SUPPRESS)
        parser.add_argument("--hours", type=positive_number, help=argparse.SUPPRESS)
        parser.add_argument("--sample-interval", type=positive_number, help=argparse.SUPPRESS)
        # For the FOCUS check: the window's first N hours locked before their history arrives (corrections).
        parser.add_argument("--close-hours", type=int, default=0, help=argparse.SUPPRESS)

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["hours"] / 24 if options["hours"] else options["days"]
        if not 0 < days <= 28:
            raise CommandError("--days must be more than 0 and at most 28 (raw samples are kept 30 days)")
        if options["first_days"] is not None and not 0 < options["first_days"] <= days:
            raise CommandError(f"--first-days must be more than 0 and at most --days ({days:g})")
        if not 0 <= options["close_hours"] <= days * 24:
            raise CommandError(f"--close-hours must be from 0 to the window's {days * 24:g} hours")
        history = history_settings(options["sample_interval"])
        if options["rest"]:
            try:
                seed_options = rest_options(server_url=options["server"], history=history)
            except NothingToResume as error:
                raise CommandError(str(error)) from None
        else:
            start, end = window(end=options["end"], days=days)
            seed_options = SeedOptions(
                start=start,
                end=end,
                backfill=not options["no_backfill"],
                server_url=options["server"],
                history=history,
                first_days=options["first_days"],
                close_hours=options["close_hours"],
            )
        started = time.monotonic()
        self.stdout.ending = ""  # progress bars end their own lines, or redraw them with "\r"
        # SIGTERM (bin/run-demo stopping) stops as Ctrl-C does: collectors stopped, the state saying so.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            report = demo_seed(options=seed_options, stream=self.stdout)
        except (BackfillError, ServerError) as error:
            raise CommandError(str(error)) from None
        except KeyboardInterrupt:
            raise CommandError("interrupted; run seed_demo again to resume where it stopped") from None
        finally:
            signal.signal(signal.SIGTERM, previous)
            self.stdout.ending = "\n"
        self._summary(report, seed_options, time.monotonic() - started)

    def _summary(self, report: SeedReport, options: SeedOptions, elapsed_s: float) -> None:
        out = self.stdout
        out.write(
            f"Demo organization: {report.organization.name}: {len(report.nodes)} nodes in 2 fleets, "
            f"history from {report.since:%Y-%m-%d %H:%M} UTC"
        )
        if options.backfill:
            steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.timings_s.items())
            out.write(
                f"Seeded in {elapsed_s:.1f} s ({steps}); {report.node_days_sent:.2f} node-days sent "
                f"from {report.backfilled_nodes} node(s)"
            )
            self._figures(report, options)
        if options.send_from > options.start and report.days_held < round(options.days, 3):
            out.write(
                f"The last {report.days_held:.3g} of {options.days:.3g} days are in; bin/run-demo serves them now "
                f"and sends the other {options.days - report.days_held:.3g} meanwhile (seed_demo --rest), with a "
                "banner on every page until it is done."
            )
        elif options.send_from > options.start:
            out.write(f"All {options.days:.3g} days of history are in (an earlier run sent the rest).")
        out.write(f"Collector tokens and node list: {demo_dir()}/ (bin/demo-collectors reads them)")
        host, port = os.environ.get("DEMO_HOST", "127.0.0.1"), os.environ.get("DEMO_PORT", "8000")
        out.write(self.style.SUCCESS(f"Open http://{host}:{port}/  (admin: http://{host}:{port}/admin/)"))
        out.write(self.style.SUCCESS(f"Login: {spec.USERNAME} / {spec.PASSWORD}  (local demo only)"))

    def _figures(self, report: SeedReport, options: SeedOptions) -> None:
        """The headline: the comparison report by LLM model as the API and /compare/ give it (``manage.py
        headline`` prints the same for any period), over the demo's window."""
        organization, start, end = report.organization, options.start, options.end
        rows = headline_rows(organization_ids=[organization.pk], start=start, end=end)
        title = f"{organization.name} ({organization.slug}), {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
        for line in headline_lines(rows, title=title, fleet=spec.HEADLINE_FLEET, baseline=spec.HEADLINE_BASELINE):
            self.stdout.write(line)
