"""History for the demo through the real path: simulated collectors -> HTTP -> ingest.

Each node's collector runs as its own process in backfill mode (``--start
--end``): it produces the window's samples as fast as the server acknowledges
them, then exits. Only the part of the window a node lacks is sent, so a run
that was stopped, or a later one, resumes where the stored history ends.
"""

from __future__ import annotations

import fcntl
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import Max, Min

from demo import spec
from demo.inventory import DemoNode
from demo.tokens import demo_dir, token_path
from telemetry.models import GpuSample, ServingSample

_PROGRESS = re.compile(r"backfill:\s*([\d.]+)% acknowledged")


@dataclass(frozen=True)
class BackfillSettings:
    sample_interval_s: float
    batch_seconds: float
    serving_interval_s: float


@dataclass(frozen=True)
class Job:
    """One node's backfill: ``[start, end)``."""

    node: DemoNode
    start: datetime
    end: datetime

    @property
    def days(self) -> float:
        return (self.end - self.start) / timedelta(days=1)

    @property
    def spool(self) -> Path:
        return backfill_spool_root() / f"{self.node.node.hostname}-{int(self.start.timestamp())}"


def backfill_spool_root() -> Path:
    return demo_dir() / "backfill-spool"


def live_spool(hostname: str) -> Path:
    """Where ``bin/demo-collectors`` spools the node's live batches."""
    return demo_dir() / "spool" / hostname


def live_spool_settle(hostname: str) -> bool:
    """Drop the unsent batches of the node's stopped live collector; False while it runs (it holds the lock).

    Sent after this run's backfill of the same minutes, they would interleave two
    epochs of the simulated server; the backfill re-makes those minutes instead.
    """
    spool = live_spool(hostname)
    if not (spool / "lock").exists():
        return True
    with open(spool / "lock", "ab") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        shutil.rmtree(spool / "pending", ignore_errors=True)
        return True


def missing_ranges(
    *, node: DemoNode, start: datetime, end: datetime, sample_interval_s: float
) -> list[tuple[datetime, datetime]]:
    """The parts of ``[start, end)`` to send for ``node``: before its first and after its last stored sample.

    A node's stored samples are one stretch: a collector sends its batches
    oldest first and each is stored whole, so an interrupted run leaves a prefix.
    New samples never interleave with stored ones: a simulated inference server
    starts (new epoch, counters from zero) where its backfill starts, and
    samples of two epochs interleaved would count tokens twice. Ranges stay on
    the grid ``start + k x interval``; empty when the window is complete.
    """
    stored = stored_span(node, start, end)
    if stored is None:
        return [(start, end)]
    first, last = stored
    step = timedelta(seconds=sample_interval_s)
    ranges = []
    if first - start >= step:
        ranges.append((start, first))
    resume = start + step * (math.floor((last - start) / step) + 1)
    if resume < end:
        ranges.append((resume, end))
    return ranges


def stored_span(node: DemoNode, start: datetime, end: datetime) -> tuple[datetime, datetime] | None:
    """The first and last sample time stored for the node in ``[start, end)`` (its first GPU and its endpoints)."""
    window, span = {"ts__gte": start, "ts__lt": end}, {"first": Min("ts"), "last": Max("ts")}
    gpu = GpuSample.objects.filter(gpu__node=node.node, gpu__index=0, **window).aggregate(**span)
    serving = ServingSample.objects.filter(endpoint__node=node.node, **window).aggregate(**span)
    firsts = [moment for moment in (gpu["first"], serving["first"]) if moment is not None]
    lasts = [moment for moment in (gpu["last"], serving["last"]) if moment is not None]
    return (min(firsts), max(lasts)) if firsts else None


def collector_command(*, job: Job, server_url: str, options: BackfillSettings) -> list[str]:
    hostname = job.node.node.hostname
    return [
        sys.executable, "-m", "telemetry.collector",
        "--server", server_url, "--token-file", str(token_path(hostname)),
        "--simulate", job.node.spec.simulate, "--simulate-serving",
        "--simulate-llm", job.node.spec.llm, "--simulate-pattern", job.node.fleet.load_pattern,
        "--seed", str(spec.SEED), "--hostname", hostname,
        "--start", job.start.isoformat(), "--end", job.end.isoformat(),
        "--sample-interval", f"{options.sample_interval_s:g}",
        "--serving-interval", f"{options.serving_interval_s:g}",
        "--batch-seconds", f"{options.batch_seconds:g}",
        "--spool", str(job.spool),
        "--max-backoff", "5", "--log-level", "INFO",
    ]  # fmt: skip


@dataclass
class _Running:
    job: Job
    process: subprocess.Popen[str]
    fraction: float = 0.0
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=15))
    reader: threading.Thread | None = None


class BackfillError(RuntimeError):
    pass


def collectors_run(
    *,
    jobs: list[Job],
    server_url: str,
    options: BackfillSettings,
    on_progress: Callable[[float], None],
    writers: int | None = None,
) -> None:
    """Run the jobs' collectors, at most ``writers`` at once (``None``: all at once); ``on_progress`` gets the
    node-days acknowledged so far.

    Beside live collectors on SQLite, every backfill batch is a write that each live batch waits
    behind (one writer at a time): a few backfill writers leave the live ones their latency.
    Raises ``BackfillError`` with the collector's last lines if one fails. On an
    interrupt (Ctrl-C) every collector is stopped (SIGTERM: it spools what it
    has and exits) before the exception goes on.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("WATTLEDGER_")}
    # Batches an interrupted run left behind belong to another epoch of the simulated
    # servers; sent now they would interleave with this run's samples. They are re-made.
    shutil.rmtree(backfill_spool_root(), ignore_errors=True)
    waiting, running = deque(jobs), list[_Running]()
    try:
        while waiting or any(item.process.poll() is None for item in running):
            while waiting and sum(item.process.poll() is None for item in running) < (writers or len(jobs)):
                running.append(_start(waiting.popleft(), server_url, options, env))
            on_progress(sum(r.fraction * r.job.days for r in running))
            if any(item.process.returncode not in (None, 0) for item in running):
                break  # one node failed: stop the others and say why
            time.sleep(0.25)
        on_progress(sum(r.fraction * r.job.days for r in running))
    finally:
        _stop(running)
    failed = [item for item in running if item.process.returncode != 0]
    if failed:
        item, status = failed[0], failed[0].process.returncode
        how = f"was stopped by signal {-status}" if status < 0 else f"exited with status {status}"
        tail = "\n".join(item.tail)
        raise BackfillError(f"the collector of {item.job.node.node.hostname} {how}; run again to resume:\n{tail}")


def _start(job: Job, server_url: str, options: BackfillSettings, env: dict[str, str]) -> _Running:
    command = collector_command(job=job, server_url=server_url, options=options)
    process = subprocess.Popen(  # noqa: S603 - our own collector, arguments from our own inventory
        command, cwd=settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    item = _Running(job, process)
    item.reader = threading.Thread(target=_read_progress, args=(item,), daemon=True)
    item.reader.start()
    return item


def _read_progress(item: _Running) -> None:
    assert item.process.stderr is not None  # noqa: S101 - set by Popen(stderr=PIPE)
    for line in item.process.stderr:
        item.tail.append(line.rstrip())
        found = _PROGRESS.search(line)
        if found:
            item.fraction = min(1.0, float(found.group(1)) / 100)


def _stop(running: list[_Running]) -> None:
    for item in running:
        if item.process.poll() is None:
            item.process.terminate()
    for item in running:
        try:
            item.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            item.process.kill()
            item.process.wait()
        if item.reader is not None:
            item.reader.join(timeout=5)
        if item.process.returncode == 0:
            item.fraction = 1.0
