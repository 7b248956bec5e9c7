"""``python -m telemetry.collector``: wires the settings to a backend, a spool, an uploader and a loop."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from .agent import Clock, Collector, Timing
from .backend import GpuBackend, ServingSource
from .batching import BatchBuilder
from .config import Settings, load_settings
from .dcgm import DEFAULT_TIMEOUT_S, DcgmExporterBackend
from .epochs import EpochBook
from .hostmeter import host_meter_from_spec
from .nvml import NvmlBackend, NvmlUnavailable
from .resolution import GpuAverager
from .serving import PrometheusEndpoint, resolve_gpus
from .simserving import SimulatedVllmEndpoint
from .simulated import SimulatedBackend
from .spool import Spool
from .uploader import Backoff, Outcome, Post, Uploader, ingest_url, post_batch

log = logging.getLogger("telemetry.collector")


def make_backend(settings: Settings, book: EpochBook) -> GpuBackend:
    if settings.simulate:
        resets_s = round(settings.simulate_resets_h * 3600) or None
        return SimulatedBackend(
            list(settings.simulate),
            seed=settings.seed,
            hostname=settings.hostname,
            resets_every_s=resets_s,
            pattern=settings.simulate_pattern,
        )
    if settings.dcgm_exporters:
        # A scrape answers within the tick or is that tick's missing reading: no retry, no backlog.
        timeout_s = min(DEFAULT_TIMEOUT_S, 0.8 * settings.sample_interval_s)
        return DcgmExporterBackend(settings.dcgm_exporters, book=book, hostname=settings.hostname, timeout_s=timeout_s)
    return NvmlBackend(book=book)


def make_serving(settings: Settings, backend: GpuBackend, book: EpochBook, started_at: float) -> list[ServingSource]:
    inventory = backend.inventory()
    if len(settings.serving) > 1 and any(not target.gpus for target in settings.serving):
        log.warning("several --serving endpoints without @GPUs: each is attributed to all of this host's GPUs")
    sources: list[ServingSource] = [
        PrometheusEndpoint(
            t.url, resolve_gpus(t, inventory), book=book, timeout_s=min(3.0, settings.serving_interval_s)
        )
        for t in settings.serving
    ]
    if settings.simulate_serving and isinstance(backend, SimulatedBackend):
        restarts_s = round(settings.simulate_serving_restarts_h * 3600) or None
        simulated = SimulatedVllmEndpoint(
            backend,
            hostname=settings.hostname,
            started_at=started_at,
            restarts_every_s=restarts_s,
            llm=settings.simulate_llm,
        )
        sources.append(simulated)
    return sources


def http_post(settings: Settings) -> Post:
    """POST a batch to the settings' server with its token."""
    url = ingest_url(settings.server)

    def post(body: bytes, timeout_s: float) -> Outcome:
        return post_batch(url, settings.token, body, timeout_s=timeout_s)

    return post


def make_uploader(settings: Settings, spool: Spool, post: Post) -> Uploader:
    return Uploader(spool, post=post, timeout_s=settings.http_timeout_s, backoff=Backoff(cap_s=settings.max_backoff_s))


def make_collector(settings: Settings, clock: Clock, *, post: Post | None = None) -> Collector:
    """The collector the settings describe; ``post`` replaces the HTTP POST (a harness records answers)."""
    spool = Spool(settings.spool_dir, max_bytes=settings.spool_max_bytes)
    book = EpochBook(spool.root / "epochs.json")
    backend = make_backend(settings, book)
    started_at = settings.start.timestamp() if settings.start else clock.wall()
    uploader = make_uploader(settings, spool, post or http_post(settings))
    # The server is told the interval of the samples it receives: the resolution when averaged.
    builder = BatchBuilder(hostname=settings.hostname, sample_interval_s=settings.resolution_s, spool_state=spool.state)
    averager = GpuAverager(settings.resolution_s) if settings.resolution_s > settings.sample_interval_s else None
    timing = Timing(
        settings.sample_interval_s, settings.batch_seconds, settings.serving_interval_s, settings.shutdown_grace_s
    )
    collector = Collector(
        backend=backend, serving=make_serving(settings, backend, book, started_at), spool=spool,
        uploader=uploader, builder=builder, book=book, timing=timing, clock=clock,
        host_meter=host_meter_from_spec(settings.host_meter), averager=averager,
    )  # fmt: skip
    uploader.on_ack = collector.on_ack
    return collector


def _stop_on_signals(stop: threading.Event) -> None:
    def handle(signum: int, _frame: FrameType | None) -> None:
        log.info("%s: flushing and stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


def main(argv: Sequence[str] | None = None) -> int:
    settings = load_settings(argv)
    logging.basicConfig(
        stream=sys.stderr, level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        collector = make_collector(settings, Clock())
    except (NvmlUnavailable, ValueError, OSError) as exc:
        log.error("cannot start: %s", exc)
        return 2
    stop = threading.Event()
    _stop_on_signals(stop)
    log.info(
        "sending to %s; spool %s (%d batches pending)",
        ingest_url(settings.server),
        settings.spool_dir,
        len(collector.spool),
    )
    try:
        if settings.start is not None and settings.end is not None:
            return collector.run_backfill(settings.start, settings.end, stop)
        return collector.run_live(stop)
    finally:
        collector.backend.close()
        collector.spool.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:] if len(sys.argv) > 1 else None))
