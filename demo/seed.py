"""``seed_demo``'s steps: inventory, tokens, simulated grid intensity, backfill, rollups and ledger.

Every step is idempotent, so running it again resumes: the inventory is
updated in place (a changed price recomputes the stored lines), a node's
history is sent only where it is missing (see ``backfill.missing_ranges``), and
the queues hold only what changed.

A first start sends only the most recent days (``first_days``) so the demo can
serve at once; ``rest`` sends the remainder of the same window later, while it
runs. Both keep ``demo.status`` up to date for the pages' banner.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounting.node_hour_lines import ledger_mark
from demo import spec
from demo.advice import demo_advice_refresh, demo_workload_classes_seed
from demo.backfill import BackfillSettings, Job, collectors_run, live_spool_settle, missing_ranges, stored_span
from demo.closing import demo_hours_close
from demo.intensity import shaped_hours
from demo.inventory import DemoNode, demo_inventory_seed
from demo.progress import Progress, Stream
from demo.queues import ledger_drain, ledger_missing_mark, rollup_drain
from demo.server import temporary_server
from demo.status import state_read, state_write
from demo.tokens import node_list_write, node_token_ensure
from fleets.models import Organization
from grid.stored_intensity import intensity_store
from scope2.demo import demo_instruments_seed

# Simulated intensity runs this far past the window, as a forecast, so a running demo keeps it.
INTENSITY_AHEAD = timedelta(days=2)
# The history's sample interval: coarse enough to send two weeks of 8 nodes in a couple of
# minutes on two cores, fine enough that every interval is bridged (TELEMETRY_GPU_MAX_GAP_S).
HISTORY_SAMPLE_INTERVAL_S = 30.0
# One hour per batch: ~960 GPU rows for 8 GPUs at 30 s, well inside the wire's limits;
# fewer, larger requests are what makes the backfill fast.
HISTORY_BATCH_SECONDS = 3600.0
# Backfill collectors sending at once to a server that live collectors also send to (seed_demo --server,
# bin/run-demo's backfill): on SQLite each batch is a write the live ones wait behind, so two, not one
# per node; a temporary server of the backfill's own takes them all at once.
LIVE_SERVER_BACKFILL_WRITERS = 2
# Serving counters are cumulative, so a coarser scrape loses no token; the TTFT histogram
# is cumulative too. Half the serving rows of a 30 s scrape: the rollup's largest cost.
HISTORY_SERVING_INTERVAL_S = 60.0


@dataclass(frozen=True)
class SeedOptions:
    start: datetime
    end: datetime
    backfill: bool = True
    server_url: str | None = None
    history: BackfillSettings = field(default_factory=lambda: history_settings())
    # Send only the last ``first_days`` of the window now (the rest later: ``rest_options``).
    first_days: float | None = None
    # For checks: lock the window's first hours before their history arrives (``demo.closing``).
    close_hours: int = 0

    @property
    def days(self) -> float:
        return (self.end - self.start) / timedelta(days=1)

    @property
    def send_from(self) -> datetime:
        """Where this run's history starts: the window's start, or the start of its first days."""
        if self.first_days is None or self.first_days >= self.days:
            return self.start
        return (self.end - timedelta(days=self.first_days)).replace(minute=0, second=0, microsecond=0)


@dataclass
class SeedReport:
    organization: Organization
    nodes: list[DemoNode]
    since: datetime
    backfilled_nodes: int = 0
    node_days_sent: float = 0.0
    days_held: float = 0.0  # days at the end of the window that every node holds once this run is done
    timings_s: dict[str, float] = field(default_factory=dict)


def history_settings(sample_interval_s: float | None = None) -> BackfillSettings:
    interval = sample_interval_s or min(HISTORY_SAMPLE_INTERVAL_S, float(settings.TELEMETRY_GPU_MAX_GAP_S))
    serving = min(HISTORY_SERVING_INTERVAL_S, float(settings.TELEMETRY_SERVING_MAX_GAP_S))
    return BackfillSettings(interval, max(interval, HISTORY_BATCH_SECONDS), max(interval, serving))


def window(*, end: datetime | None, days: float) -> tuple[datetime, datetime]:
    """``[start, end)``: ``end`` defaults to now (to the minute); ``start`` is ``days`` before, on an hour."""
    end = (end or timezone.now()).replace(second=0, microsecond=0)
    start = (end - timedelta(days=days)).replace(minute=0, second=0, microsecond=0)
    return start, end


class NothingToResume(RuntimeError):
    pass


def rest_options(*, server_url: str | None, history: BackfillSettings) -> SeedOptions:
    """The window an earlier first start planned, to send the rest of it."""
    state = state_read()
    if state is None:
        raise NothingToResume("no planned history (var/demo/backfill.json): run seed_demo --first-days N first")
    return SeedOptions(state.start, state.end, server_url=server_url, history=history)


def demo_seed(*, options: SeedOptions, stream: Stream) -> SeedReport:
    if options.backfill:
        state_write(
            start=options.start, end=options.end, days_total=round(options.days, 3), days_done=_days_in(options),
            phase="sending", reason="",
        )  # fmt: skip
    try:
        report = _seed(options, stream)
    except BaseException as error:
        if options.backfill:
            reason = "interrupted" if isinstance(error, KeyboardInterrupt) else str(error).splitlines()[0][:200]
            state_write(phase="stopped", reason=reason)
        raise
    if options.backfill:
        # A first start sent its last days only; the rest is still to send unless an earlier run sent it (a
        # second `make demo`): then the window is whole already and nothing is left for bin/run-demo to send.
        days = _days_in(options, report.nodes) if options.send_from > options.start else round(options.days, 3)
        report.days_held = days
        state_write(days_done=days, phase="waiting" if days < round(options.days, 3) else "done")
    return report


def _days_in(options: SeedOptions, nodes: list[DemoNode] | None = None) -> float:
    """Days at the end of the window whose history every node holds already (a resume starts from there)."""
    if not nodes:
        state = state_read()
        same = state is not None and (state.start, state.end) == (options.start, options.end)
        return state.days_done if state is not None and same else 0.0
    firsts = []
    for node in nodes:
        span = stored_span(node, options.start, options.end)
        if span is None:
            return 0.0
        firsts.append(span[0])
    return round(min(options.end - max(firsts), options.end - options.start) / timedelta(days=1), 3)


def _seed(options: SeedOptions, stream: Stream) -> SeedReport:
    timings: dict[str, float] = {}
    with _timed(timings, "inventory"):
        inventory = demo_inventory_seed(window_start=options.start)
        organization, nodes = inventory.organization, inventory.nodes
        _tokens_ensure(nodes)
        demo_workload_classes_seed(organization=organization)
        since = min(node.node.commissioned_at or options.start for node in nodes)
        if options.close_hours:
            demo_hours_close(organization=organization, start=options.start, hours=options.close_hours,
                             now=timezone.now())  # fmt: skip
        _intensity_seed(organization, nodes, since=since, end=options.end)
        if inventory.changed:  # a price or an asset changed: recompute the lines already stored
            # (on a first start, those of its first days only: the rest are computed when their history arrives)
            first = max(since, options.send_from)
            ledger_mark(node_ids=[node.node.pk for node in nodes], start=first, end=options.end, now=timezone.now())
    report = SeedReport(organization, nodes, since, timings_s=timings)
    if options.backfill:
        _history_seed(report, options, stream)
    return report


@contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    started = time.monotonic()
    yield
    timings[name] = time.monotonic() - started


@transaction.atomic
def _tokens_ensure(nodes: list[DemoNode]) -> None:
    for node in nodes:
        node_token_ensure(node=node.node)
    node_list_write(
        rows=[(n.node.hostname, n.spec.simulate, spec.SEED, n.spec.llm, n.fleet.load_pattern) for n in nodes]
    )


def _intensity_seed(organization: Organization, nodes: list[DemoNode], *, since: datetime, end: datetime) -> int:
    """The demo zones' hours from ``since`` to a little past ``end``, as the organization's own simulated source."""
    zones = {node.node.site.grid_zone: node.node.site.time_zone for node in nodes if node.node.site.grid_zone}
    start, stop, now = since.replace(minute=0, second=0, microsecond=0), end + INTENSITY_AHEAD, timezone.now()
    values = [
        value
        for zone, time_zone in sorted(zones.items())
        for value in shaped_hours(
            zone=zone, time_zone=time_zone, start=start, end=stop, now=now, source=spec.SIMULATED_INTENSITY_SOURCE
        )
    ]
    return intensity_store(values=values, organization=organization, now=now)


def _history_seed(report: SeedReport, options: SeedOptions, stream: Stream) -> None:
    jobs = _jobs(report.nodes, options, stream)
    report.backfilled_nodes = len({job.node.node.pk for job in jobs})
    report.node_days_sent = sum(job.days for job in jobs)
    skipped = len(report.nodes) - len({job.node.node.pk for job in jobs})
    if skipped:
        stream.write(f"{skipped} node(s) already hold their whole window (or send it live): nothing to send\n")
    if jobs:
        server = nullcontext(options.server_url) if options.server_url else temporary_server(log_path=_log_path())
        with _timed(report.timings_s, "backfill"), server as url:
            progress = Progress(stream, "backfill", report.node_days_sent, "node-days acknowledged")
            days_before = _days_in(options, report.nodes)
            per_node = len(report.nodes)

            def sent(node_days: float) -> None:
                progress.update(node_days)
                days = min(days_before + node_days / per_node, options.days)
                _state_throttled(days_done=round(days, 3), phase="sending")

            try:
                writers = LIVE_SERVER_BACKFILL_WRITERS if options.server_url else None
                collectors_run(
                    jobs=jobs, server_url=str(url), options=options.history, on_progress=sent, writers=writers
                )
            except BaseException as error:
                progress.finish(stopped="interrupted" if isinstance(error, KeyboardInterrupt) else "a collector failed")
                raise
            progress.finish()
    state_write(phase="rolling up")
    with _timed(report.timings_s, "rollup"):
        rollup_drain(stream=stream)
    state_write(phase="pricing")
    with _timed(report.timings_s, "ledger"):
        ledger_drain(stream=stream)
        nodes = [node.node for node in report.nodes]
        # Held hours without telemetry get their lines too (hardware costs while silent); on a first
        # start only within its first days, so the rest of the window is not priced as silent meanwhile.
        if ledger_missing_mark(nodes=nodes, start=max(report.since, options.send_from), end=options.end):
            ledger_drain(stream=stream)
    # A solar PPA and guarantees of origin sized from the stored lines, so the sustainability page
    # shows Scope 2 dual reporting; replaced on every run as the window fills.
    demo_instruments_seed(organization=report.organization, start=options.start, end=options.end)
    # The workload classes' advice from the curves just stored: the advice page has something to say at once.
    with _timed(report.timings_s, "advice"):
        demo_advice_refresh(organization=report.organization, now=timezone.now())


_last_state_write = [0.0]


def _state_throttled(**fields: object) -> None:
    """Progress into the state file at most once a second (the banner reads it per request)."""
    if time.monotonic() - _last_state_write[0] >= 1.0:
        _last_state_write[0] = time.monotonic()
        state_write(**fields)


def _jobs(nodes: list[DemoNode], options: SeedOptions, stream: Stream) -> list[Job]:
    interval_s, jobs = options.history.sample_interval_s, []
    for node in nodes:
        ranges = missing_ranges(node=node, start=options.send_from, end=options.end, sample_interval_s=interval_s)
        if ranges and ranges[-1][1] == options.end and not live_spool_settle(node.node.hostname):
            stream.write(f"{node.node.hostname}: its live collector is running and sends the present itself\n")
            ranges.pop()
        jobs += [Job(node, first, last) for first, last in ranges]
    return jobs


def _log_path() -> Path:
    return Path(settings.VAR_DIR) / "log" / "seed-demo-server.log"
