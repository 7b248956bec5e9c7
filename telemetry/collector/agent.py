"""The collector's loops: live (real time) and backfill (simulated time, as fast as it can).

Live: GPUs are sampled on the monotonic clock (a late tick is skipped, never
bunched), inference servers are scraped by their own thread so a slow one
never delays a GPU sample, a batch is built every ``batch_seconds`` into the
spool, and the uploader thread sends the spool oldest-first. On stop
(SIGTERM), the last partial batch is spooled and sending goes on for at most
``shutdown_grace_s``; what is left stays in the spool for the next start.

Backfill: samples are stamped at ``start + i x sample_interval`` up to ``end``;
batch building waits while the spool holds many unsent batches (rather than
dropping old ones), and the run ends once every batch was acknowledged (or
refused), waiting out outages as live does.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from . import wire
from .backend import GpuBackend, GpuReading, ServingSource, serving_readings
from .batching import BatchBuilder
from .epochs import EpochBook
from .hostmeter import HostMeter
from .resolution import GpuAverager
from .spool import Spool, SpooledBatch
from .uploader import Uploader

log = logging.getLogger(__name__)

BACKFILL_MAX_PENDING = 64  # batches spooled ahead of the uploader in a backfill (~30k GPU rows)
PROGRESS_EVERY_S = 2.0
SUMMARY_EVERY_S = 60.0


@dataclass(frozen=True)
class Clock:
    """Injectable time: Unix seconds for timestamps, the monotonic clock for scheduling."""

    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class Timing:
    sample_interval_s: float
    batch_seconds: float
    serving_interval_s: float
    shutdown_grace_s: float


def next_tick(previous: float, interval: float, now: float) -> float:
    """The next tick on the grid ``previous + k x interval`` at least half an interval after ``now``.

    A tick taken late stands for the grid point nearest to it: the ticks it
    ran late past are skipped, and the next one is never bunched against it
    (a tick 99 ms late on a 100 ms grid, then the next on time, would be two
    samples a millisecond apart: one stamp on the wire, and a refused batch).
    """
    ticks = max(1, math.ceil((now - previous) / interval + 0.5))
    if ticks > 1:
        log.debug("%d tick(s) skipped: the loop ran late", ticks - 1)
    return previous + ticks * interval


def _thread(name: str, target: Callable[[threading.Event], None], stop: threading.Event) -> threading.Thread:
    thread = threading.Thread(target=target, args=(stop,), name=name, daemon=True)
    thread.start()
    return thread


@dataclass
class _Progress:
    batches_spooled: int = 0
    acknowledged_until: float = 0.0  # the latest sample time the server acknowledged (backfill)
    last_print: float = field(default=-math.inf)


class Collector:
    def __init__(
        self,
        *,
        backend: GpuBackend,
        serving: list[ServingSource],
        spool: Spool,
        uploader: Uploader,
        builder: BatchBuilder,
        book: EpochBook,
        timing: Timing,
        clock: Clock | None = None,
        host_meter: HostMeter | None = None,
        averager: GpuAverager | None = None,
    ) -> None:
        self.backend, self.serving, self.spool, self.uploader = backend, serving, spool, uploader
        self.host_meter = host_meter
        self._host_epoch = f"collector-{time.time():.0f}"  # the meter's counter (RAPL's sum) starts with us
        self.averager = averager  # --resolution: readings averaged on the host before they are batched
        self.builder, self.book, self.timing = builder, book, timing
        self.clock = clock or Clock()
        self._progress = _Progress()
        self._batch_ends: dict[str, float] = {}  # batch id -> its last sample time, in a backfill
        self._track_acks = False

    # --- shared -------------------------------------------------------------------

    def sample_gpus(self, ts: float) -> None:
        readings = self.backend.read(ts)
        if self.averager is not None:
            readings = self.averager.add(readings)
            if not readings:  # no window closed: the host meter too is read once per window
                return
        self._add_gpu(readings)
        self._read_host_meter(ts)

    def _add_gpu(self, readings: list[GpuReading]) -> None:
        if not self.builder.has_room(gpu_rows=len(readings)):
            self.flush()
        self.builder.add_gpu(readings)

    def _read_host_meter(self, ts: float) -> None:
        if self.host_meter is not None and (host := self.host_meter.read()) is not None:
            self.builder.add_node_meter(
                ts, method=self.host_meter.method, epoch=self._host_epoch, power_w=host.power_w, energy_j=host.energy_j
            )

    def _flush_averaged(self) -> None:
        """On stop: the partly filled averaging windows go into the last batch too."""
        if self.averager is not None:
            self._add_gpu(self.averager.flush())

    def flush(self) -> SpooledBatch | None:
        """Build what was collected into a batch and spool it (durably)."""
        built = self.builder.build(sent_at=self.clock.wall())
        if built is None:
            return None
        body = built.encode()
        try:
            item = self.spool.put(built.batch_id, body)
        except OSError as exc:  # a full or failing disk must not stop the sampling
            self.spool.count_lost(1)
            log.error("batch %s lost: cannot write it to the spool: %s", built.batch_id, exc)
            return None
        self.book.save()
        self._progress.batches_spooled += 1
        if self._track_acks:
            self._batch_ends[built.batch_id] = built.last_ts or 0.0
        log.debug(
            "batch %s spooled: %d GPU rows, %d serving rows, %d bytes; %d pending",
            built.batch_id, built.gpu_rows, built.serving_rows, len(body), len(self.spool),
        )  # fmt: skip
        return item

    def on_ack(self, item: SpooledBatch) -> None:
        end = self._batch_ends.pop(item.batch_id, None)
        if end is not None:
            self._progress.acknowledged_until = max(self._progress.acknowledged_until, end)

    def _shutdown(self, stop: threading.Event, threads: list[threading.Thread]) -> None:
        """Spool the partial batch, then send for at most the grace period."""
        stop.set()
        self.spool.changed.set()  # wakes an idle uploader
        self._flush_averaged()
        self.flush()
        deadline = self.clock.monotonic() + self.timing.shutdown_grace_s
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - self.clock.monotonic()))
        self.flush()  # what a scrape in flight added meanwhile
        if all(not thread.is_alive() for thread in threads) and self.uploader.drain(deadline=deadline):
            log.info("stopped; every batch was acknowledged")
        else:
            log.info("stopped; %d batch(es) stay in the spool %s for the next start", len(self.spool), self.spool.root)

    # --- live ---------------------------------------------------------------------

    def run_live(self, stop: threading.Event) -> int:
        worker_stop = threading.Event()
        threads = [_thread("uploader", self.uploader.run, worker_stop)]
        if self.serving:
            threads.append(_thread("serving", self._poll_serving, worker_stop))
        log.info("collecting live: %d GPU(s), %d serving endpoint(s)", len(self.backend.inventory()), len(self.serving))
        self._live_loop(stop)
        self._shutdown(worker_stop, threads)
        return 0

    def _live_loop(self, stop: threading.Event) -> None:
        t = self.timing
        next_sample = self.clock.monotonic()
        next_flush = next_sample + t.batch_seconds
        next_summary = next_sample + SUMMARY_EVERY_S
        while not stop.is_set():
            now = self.clock.monotonic()
            if now >= next_sample:
                self.sample_gpus(self.clock.wall())
                next_sample = next_tick(next_sample, t.sample_interval_s, now)
            # A scrape adds a row per LLM model a server serves: room for as many as a batch may declare.
            if now >= next_flush or not self.builder.has_room(serving_rows=wire.MAX_ENDPOINTS):
                self.flush()
                next_flush = next_tick(next_flush, t.batch_seconds, now)
            if now >= next_summary:
                self._summary()
                next_summary = next_tick(next_summary, SUMMARY_EVERY_S, now)
            stop.wait(max(0.0, min(next_sample, next_flush) - self.clock.monotonic()))

    def _poll_serving(self, stop: threading.Event) -> None:
        next_scrape = self.clock.monotonic()
        while not stop.is_set():
            for source in self.serving:
                for reading in serving_readings(source.read(self.clock.wall())):
                    self.builder.add_serving(reading)
            next_scrape = next_tick(next_scrape, self.timing.serving_interval_s, self.clock.monotonic())
            stop.wait(max(0.0, next_scrape - self.clock.monotonic()))

    def _summary(self) -> None:
        s = self.uploader.stats
        log.info(
            "%d batches spooled, %d acknowledged, %d refused, %d retries; spool: %d pending, %d bytes, %d dropped",
            self._progress.batches_spooled, s.acknowledged, s.rejected, s.retries,
            len(self.spool), self.spool.pending_bytes, self.spool.dropped_batches,
        )  # fmt: skip

    # --- backfill -----------------------------------------------------------------

    def run_backfill(self, start: datetime, end: datetime, stop: threading.Event) -> int:
        worker_stop = threading.Event()
        self._track_acks = True
        threads = [_thread("uploader", self.uploader.run, worker_stop)]
        window = (start.timestamp(), end.timestamp())
        log.info("backfilling %s .. %s", start.isoformat(), end.isoformat())
        self._backfill_samples(window, stop)
        self._flush_averaged()
        self.flush()
        while len(self.spool) and not stop.is_set():
            self._print_progress(window)
            stop.wait(0.05)
        self._shutdown(worker_stop, threads)
        self._print_progress(window, force=True)
        refused = self.uploader.stats.rejected
        if refused:
            log.error("backfill done, but the server refused %d batch(es): see %s", refused, self.spool.rejected_dir)
        return 1 if refused else 0

    def _backfill_samples(self, window: tuple[float, float], stop: threading.Event) -> None:
        t = self.timing
        start, end = window
        next_scrape = start
        batch_end = start + t.batch_seconds
        for i in range(math.ceil((end - start) / t.sample_interval_s)):
            if stop.is_set():
                return
            ts = start + i * t.sample_interval_s
            if ts >= batch_end:
                self.flush()
                batch_end += t.batch_seconds
                self._wait_for_room(window, stop)
            self.sample_gpus(ts)
            if ts >= next_scrape:
                self._read_serving(ts)
                next_scrape += t.serving_interval_s

    def _read_serving(self, ts: float) -> None:
        for source in self.serving:
            for reading in serving_readings(source.read(ts)):
                self.builder.add_serving(reading)

    def _wait_for_room(self, window: tuple[float, float], stop: threading.Event) -> None:
        self._print_progress(window)
        while len(self.spool) >= BACKFILL_MAX_PENDING and not stop.is_set():
            stop.wait(0.02)
            self._print_progress(window)

    def _print_progress(self, window: tuple[float, float], *, force: bool = False) -> None:
        now = self.clock.monotonic()
        if not force and now - self._progress.last_print < PROGRESS_EVERY_S:
            return
        self._progress.last_print = now
        start, end = window
        acknowledged_s = self._progress.acknowledged_until + self.timing.sample_interval_s - start
        done = min(1.0, max(0.0, acknowledged_s / (end - start)))
        log.info(
            "backfill: %5.1f%% acknowledged (%d batches acknowledged, %d pending, %d refused)",
            100 * done, self.uploader.stats.acknowledged, len(self.spool), self.uploader.stats.rejected,
        )  # fmt: skip
