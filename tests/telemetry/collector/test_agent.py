"""The collector's loops, in process: backfill end to end, waiting out an outage; live until stopped."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from telemetry.collector import wire
from telemetry.collector.agent import Collector, Timing, next_tick
from telemetry.collector.batching import BatchBuilder
from telemetry.collector.epochs import EpochBook
from telemetry.collector.simserving import SimulatedVllmEndpoint
from telemetry.collector.simulated import SimulatedBackend, parse_simulate_spec
from telemetry.collector.spool import Spool
from telemetry.collector.uploader import Outcome, Uploader

START = datetime(2025, 6, 1, tzinfo=UTC)


class FakeServer:
    """Answers ``failures`` retries, then refuses the batches listed, and acknowledges the rest."""

    def __init__(self, failures: int = 0, refuse: int = 0) -> None:
        self.failures, self.refuse = failures, refuse
        self.bodies: list[bytes] = []

    def post(self, body: bytes, _timeout_s: float) -> Outcome:
        if self.failures:
            self.failures -= 1
            return Outcome("retry", 503, "maintenance")
        if self.refuse:
            self.refuse -= 1
            return Outcome("reject", 422, "bad batch")
        self.bodies.append(body)
        return Outcome("ack", 200, "{}", answer={"stored": {}})


def collector(tmp_path: Path, server: FakeServer, timing: Timing, *, serving: bool = True) -> Collector:
    backend = SimulatedBackend(parse_simulate_spec("rtx-4090:2"), hostname="n1")
    spool = Spool(tmp_path)
    sources = [SimulatedVllmEndpoint(backend, hostname="n1", started_at=START.timestamp())] if serving else []
    uploader = Uploader(spool, post=server.post, sleep=lambda _s: None)
    built = Collector(
        backend=backend,
        serving=sources,  # type: ignore[arg-type]
        spool=spool,
        uploader=uploader,
        builder=BatchBuilder(hostname="n1", sample_interval_s=timing.sample_interval_s, spool_state=spool.state),
        book=EpochBook(tmp_path / "epochs.json"),
        timing=timing,
    )
    uploader.on_ack = built.on_ack
    return built


def decoded(server: FakeServer) -> list[wire.Batch]:
    return [wire.batch_decode(body, content_encoding="gzip") for body in server.bodies]


def test_backfill_sends_the_whole_window_through_an_outage_then_exits_0(tmp_path: Path) -> None:
    server = FakeServer(failures=5)
    backfill = collector(tmp_path, server, Timing(1.0, 60.0, 5.0, 2.0))

    status = backfill.run_backfill(START, START + timedelta(minutes=10), threading.Event())

    batches = decoded(server)
    stamps = sorted({ts for b in batches for ts in b.gpu_samples["ts"]})
    assert status == 0 and len(batches) == 10 and not len(backfill.spool)
    assert sum(b.gpu_row_count for b in batches) == 2 * 600 and all(b.gpu_row_count == 120 for b in batches)
    assert stamps == [START.timestamp() + s for s in range(600)]
    assert sum(b.serving_row_count for b in batches) == 120  # every 5 s
    assert backfill.uploader.stats.retries == 5


def test_backfill_with_a_refused_batch_exits_1(tmp_path: Path) -> None:
    server = FakeServer(refuse=1)
    backfill = collector(tmp_path, server, Timing(1.0, 60.0, 5.0, 2.0), serving=False)

    status = backfill.run_backfill(START, START + timedelta(minutes=3), threading.Event())

    assert status == 1 and len(server.bodies) == 2
    assert len(list((tmp_path / "rejected").glob("*.reason"))) == 1


def test_live_collects_until_stopped_then_flushes_everything(tmp_path: Path) -> None:
    server = FakeServer()
    live = collector(tmp_path, server, Timing(0.02, 0.2, 1.0, 2.0))
    live.backend.read(START.timestamp())  # the simulator tabulates its week on first use: not the loop's time
    sampled: list[float] = []
    read = live.backend.read
    live.backend.read = lambda ts: (sampled.append(round(ts, 3)), read(ts))[1]  # type: ignore[method-assign]
    stop = threading.Event()
    threading.Timer(0.7, stop.set).start()

    status = live.run_live(stop)

    batches = decoded(server)
    stamps = sorted({ts for b in batches for ts in b.gpu_samples["ts"]})
    assert status == 0 and not len(live.spool) and len(batches) >= 3
    # every tick sampled was sent (a loaded machine may skip ticks, never lose them), each once
    assert len(stamps) >= 10 and stamps == sorted(set(sampled)) and len(sampled) == len(set(sampled))
    assert sum(b.serving_row_count for b in batches) >= 1


def test_late_ticks_are_skipped_not_bunched() -> None:
    assert next_tick(10.0, 1.0, 10.2) == 11.0
    assert next_tick(10.0, 1.0, 13.5) == 14.0  # three late ticks skipped, the grid kept
    assert next_tick(10.0, 1.0, 10.99) == 12.0  # ran late to within a hair of 11: 11 is skipped, not bunched
    for late_s in (0.0, 0.3, 0.49, 0.5, 0.51, 0.999, 2.7):
        assert next_tick(10.0, 1.0, 10.0 + late_s) - (10.0 + late_s) >= 0.5


def test_a_failing_spool_disk_loses_the_batch_counted_but_keeps_sampling(tmp_path: Path, monkeypatch) -> None:
    live = collector(tmp_path, FakeServer(), Timing(1.0, 10.0, 5.0, 1.0), serving=False)
    live.sample_gpus(START.timestamp())

    def disk_full(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("telemetry.collector.spool._write_durably", disk_full)

    assert live.flush() is None
    assert live.spool.dropped_batches == 1 and not len(live.spool)
    live.sample_gpus(START.timestamp() + 1)
    assert live.builder.gpu_rows == 2
