"""One simulated collector of the fault harness: the project's own collector, paced and recorded.

``python -m tests.faults.simcollector --record DIR --speed X -- COLLECTOR OPTIONS``

It builds the collector exactly as ``python -m telemetry.collector`` does (the
simulated backend and simulated vLLM endpoint, the spool, the uploader) from
the same options, and runs a backfill of ``--start .. --end``. Three things are
added for the harness:

* Pacing: sample ``ts`` is taken no sooner than ``(ts - start) / speed`` real
  seconds after the run began, so simulated hours pass in real minutes while
  faults are injected.
* The truth: every batch is written to ``DIR/batches/`` before it enters the
  spool, so ``DIR`` holds everything this collector produced for the server.
* The answers: every answer of the server (or connection error) goes to
  ``DIR/answers.jsonl`` with the batch id, its stored and duplicate counts.

After a ``kill -9`` it is started again with the same options: it resumes on
the next serving tick after the last batch it recorded (what was only in
memory is produced again), and what waits in its spool is sent as usual.
Should a kill land between recording a batch and spooling it, that batch is
lost; ``DIR/restarts.jsonl`` names the last recorded batch at each restart so
the oracle can tell that loss from a lost sample. Its simulated vLLM carries on
its latency histograms from the last recorded reading (a real vLLM keeps
counting while its collector restarts).
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import math
import signal
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from telemetry.collector.agent import Clock
from telemetry.collector.backend import GpuBackend, GpuIdentity, GpuReading
from telemetry.collector.cli import http_post, make_collector
from telemetry.collector.config import load_settings
from telemetry.collector.simserving import SimulatedVllmEndpoint, _Histogram
from telemetry.collector.uploader import Outcome, Post

log = logging.getLogger("faults.simcollector")


def decode(body: bytes) -> dict[str, Any]:
    return dict(json.loads(gzip.decompress(body)))


def recorded_batches(record: Path) -> list[dict[str, Any]]:
    """Every batch this collector produced, oldest first (by when it was recorded)."""
    return [decode(path.read_bytes()) for path in sorted((record / "batches").glob("*.json.gz"))]


def last_ts(batch: dict[str, Any]) -> float:
    return max(batch["gpu_samples"]["ts"] + batch["serving_samples"]["ts"])


def resume_at(record: Path, start: float, serving_interval_s: float) -> float:
    """The next serving tick after the last recorded sample (so serving stays on its grid), or ``start``."""
    batches = recorded_batches(record)
    if not batches:
        return start
    newest = max(last_ts(b) for b in batches)
    with open(record / "restarts.jsonl", "a") as handle:
        last = max(batches, key=last_ts)["batch_id"]
        handle.write(json.dumps({"at": time.time(), "newest_ts": newest, "last_batch_id": last}) + "\n")
    return start + (math.floor((newest - start) / serving_interval_s) + 1) * serving_interval_s


def histograms_resume(serving: list[Any], batches: list[dict[str, Any]]) -> None:
    """Seed each simulated vLLM's TTFT and inter-token latency histograms with its last recorded reading.

    The simulation adds each read's new observations at that moment's load, so a histogram depends on the
    reads before it: started afresh, it would spread the whole epoch's observations at the current load, some
    bucket would read fewer than the server stored, and the server refuses such a drop as impossible.
    """
    for source in serving:
        if not isinstance(source, SimulatedVllmEndpoint):
            continue
        last: tuple[float, str, dict[str, Any]] | None = None
        for batch in batches:
            samples = batch["serving_samples"]
            for ref, endpoint in enumerate(batch["endpoints"]):
                if endpoint["url"] != source.url:
                    continue
                for row in (r for r, e in enumerate(samples["endpoint"]) if e == ref):
                    if last is None or samples["ts"][row] > last[0]:
                        readings = {m: (samples[f"{m}_bucket_counts"][row], samples[f"{m}_sum_s"][row])
                                    for m in ("ttft", "itl") if f"{m}_bucket_counts" in samples}  # fmt: skip
                        last = (samples["ts"][row], endpoint["epoch"], readings)
        if last is None:
            continue
        for metric, (counts, sum_s) in last[2].items():
            if counts:  # cumulative per bound, the total (+Inf) last
                seeded = _Histogram.from_cumulative(last[1], [int(c) for c in counts], float(sum_s or 0.0))
                source._histograms[metric] = seeded  # the simulation's own state, restored


class PacedBackend:
    """The simulated backend, read no faster than ``speed`` simulated seconds per real second."""

    def __init__(self, backend: GpuBackend, *, origin_ts: float, speed: float) -> None:
        self._backend, self._origin_ts, self._speed = backend, origin_ts, speed
        self._t0 = time.monotonic()

    def inventory(self) -> list[GpuIdentity]:
        return self._backend.inventory()

    def read(self, ts: float) -> list[GpuReading]:
        wait_s = self._t0 + (ts - self._origin_ts) / self._speed - time.monotonic()
        if wait_s > 0:
            time.sleep(wait_s)
        return self._backend.read(ts)

    def close(self) -> None:
        self._backend.close()


def recording_post(post: Post, answers: Path) -> Post:
    def recorded(body: bytes, timeout_s: float) -> Outcome:
        outcome = post(body, timeout_s)
        answer = outcome.answer if isinstance(outcome.answer, dict) else {}
        line = {
            "at": time.time(),
            "batch_id": decode(body)["batch_id"],
            "kind": outcome.kind,
            "status": outcome.status,
            "stored": answer.get("stored"),
            "duplicates": answer.get("duplicates"),
            "detail": outcome.detail[:200] if outcome.kind != "ack" else "",
        }
        with open(answers, "a") as handle:
            handle.write(json.dumps(line) + "\n")
        return outcome

    return recorded


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.simcollector")
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--speed", type=float, required=True, help="simulated seconds per real second")
    ours, collector_argv = parser.parse_known_args(argv)
    settings = load_settings([a for a in collector_argv if a != "--"])
    logging.basicConfig(stream=sys.stderr, level=settings.log_level, format="%(asctime)s %(levelname)s %(message)s")
    assert settings.start is not None and settings.end is not None, "the harness runs backfills"
    (ours.record / "batches").mkdir(parents=True, exist_ok=True)
    start = resume_at(ours.record, settings.start.timestamp(), settings.serving_interval_s)
    collector = make_collector(
        settings, Clock(), post=recording_post(http_post(settings), ours.record / "answers.jsonl")
    )
    histograms_resume(list(collector.serving), recorded_batches(ours.record))
    collector.backend = PacedBackend(collector.backend, origin_ts=start, speed=ours.speed)
    spool_put = collector.spool.put

    def put_recorded(batch_id: str, body: bytes) -> Any:
        (ours.record / "batches" / f"{time.time_ns()}-{batch_id}.json.gz").write_bytes(body)
        return spool_put(batch_id, body)

    collector.spool.put = put_recorded  # type: ignore[method-assign]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    log.info("resuming at %s (%d pending in the spool)", datetime.fromtimestamp(start, UTC), len(collector.spool))
    try:  # past the end, the backfill only sends what waits in the spool
        begin = datetime.fromtimestamp(min(start, settings.end.timestamp()), UTC)
        return collector.run_backfill(begin, settings.end, stop)
    finally:
        collector.spool.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
