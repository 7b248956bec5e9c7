"""The servers of the test cluster, and collectors that send to a live server while a test breaks the cluster.

``bin/test-citus`` says where each server is (``CITUS_WORKER_PORTS``, ``CITUS_WORKER_DIRS``,
``CITUS_SPARE_PORT``, ``CITUS_SPARE_DIR``, ``CITUS_PG_BIN``, ``CITUS_PG_USER``); each server's
settings are in its ``postgresql.conf``, so ``pg_ctl start`` on its data folder brings it back on
its port after a ``kill -9``.

:class:`Collectors` are the collector's own spool and uploader (``telemetry.collector``): one per
node, each batch spooled on disk, then posted to the live server and retried with backoff until
acknowledged, exactly as ``python -m telemetry.collector`` sends. What each batch holds is known
(``ROWS_PER_BATCH`` GPU samples, ``SERVING_PER_BATCH`` serving samples at known instants), so a
test can tell, batch by batch, whether all of it, none of it, or part of it is stored.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection

from fleets.models import Node
from telemetry.collector import wire
from telemetry.collector.spool import Spool
from telemetry.collector.uploader import Backoff, Uploader, ingest_url, post_batch
from telemetry.models import GpuSample, ServingSample
from tests.helpers.batches import node_batch
from tests.helpers.processes import alive, children, signal_all, wait_for

GPUS, SECONDS = 2, 10  # per batch: 2 GPUs x 10 s at 1 Hz, and a serving sample every 5 s
ROWS_PER_BATCH, SERVING_PER_BATCH = GPUS * SECONDS, SECONDS // 5


@dataclass(frozen=True)
class Server:
    port: int
    data_dir: Path


def workers() -> list[Server]:
    ports = [int(p) for p in os.environ.get("CITUS_WORKER_PORTS", "").split(",") if p]
    dirs = [Path(d) for d in os.environ.get("CITUS_WORKER_DIRS", "").split(":") if d]
    if not ports or len(ports) != len(dirs):
        pytest.skip("needs the cluster of bin/test-citus (CITUS_WORKER_PORTS, CITUS_WORKER_DIRS): make test-citus")
    return [Server(port, path) for port, path in zip(ports, dirs, strict=True)]


def spare() -> Server:
    if not os.environ.get("CITUS_SPARE_PORT") or not os.environ.get("CITUS_SPARE_DIR"):
        pytest.skip("needs the spare server of bin/test-citus (CITUS_SPARE_PORT, CITUS_SPARE_DIR): make test-citus")
    return Server(int(os.environ["CITUS_SPARE_PORT"]), Path(os.environ["CITUS_SPARE_DIR"]))


def postmaster_pid(server: Server) -> int:
    return int((server.data_dir / "postmaster.pid").read_text().split()[0])


def kill9(server: Server) -> list[int]:
    """SIGKILL the server's postmaster and every backend, as a crash would (no shutdown, no checkpoint)."""
    pid = postmaster_pid(server)
    pids = [pid, *children(pid)]
    signal_all(pids, signal.SIGKILL)
    wait_for(f"server :{server.port} gone", lambda: not any(alive(p) for p in pids), 30)
    return pids


def start(server: Server) -> None:
    """``pg_ctl start`` on the server's data folder (crash recovery from its WAL), on its own port."""
    pg_ctl = Path(os.environ.get("CITUS_PG_BIN", "")) / "pg_ctl"
    log = server.data_dir.parent / f"{server.data_dir.name}.log"
    user = os.environ.get("CITUS_PG_USER") or None
    command = [str(pg_ctl), "-D", str(server.data_dir), "-l", str(log), "-w", "-t", "60", "start"]
    subprocess.run(command, check=True, capture_output=True, timeout=90, user=user)


def running(server: Server) -> None:
    """Start ``server`` again where it is down (a test that killed it and failed before its restart)."""
    pid_file = server.data_dir / "postmaster.pid"
    if not pid_file.exists() or not alive(postmaster_pid(server)):
        start(server)


def worker_of(table: str, value: int) -> int:
    """The port of the worker whose shard of ``table`` takes rows of distribution value ``value``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)"
            " WHERE p.shardid = get_shard_id_for_distribution_column(%s, %s)",
            [table, value],
        )
        return int(cursor.fetchone()[0])


def on_server(server: Server, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` run straight on one server, in the test database (not through the coordinator)."""
    name = connection.settings_dict["NAME"]
    with psycopg.connect(host="127.0.0.1", port=server.port, user="postgres", dbname=name, autocommit=True) as db:
        return db.execute(sql, params).fetchall()  # type: ignore[arg-type]


def coordinator(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` run on the coordinator in a session of its own: a session that had reached a worker
    before it was killed holds a broken connection to it, which fails its next statement there."""
    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"] or "127.0.0.1", port=settings["PORT"] or 5432, user=settings["USER"] or "postgres",
        dbname=settings["NAME"], autocommit=True,
    ) as db:  # fmt: skip
        cursor = db.execute(sql, params)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else []


def prepared_transactions(servers: list[Server]) -> dict[int, int]:
    return {s.port: on_server(s, "SELECT count(*) FROM pg_prepared_xacts")[0][0] for s in servers}


def distributed_placements() -> dict[str, set[int]]:
    """Each hash-distributed table (from pg_dist_partition, whatever its column) -> the ports holding its shards."""
    rows = coordinator(
        "SELECT p.logicalrelid::regclass::text, n.nodeport FROM pg_dist_partition p"
        " JOIN pg_dist_shard s USING (logicalrelid) JOIN pg_dist_placement pl USING (shardid)"
        " JOIN pg_dist_node n USING (groupid) JOIN pg_class c ON c.oid = p.logicalrelid"
        " WHERE p.partmethod = 'h' AND NOT c.relispartition"
        " GROUP BY 1, 2"
    )
    placed: dict[str, set[int]] = {}
    for table, port in rows:
        placed.setdefault(table, set()).add(port)
    return placed


class Collectors:
    """One collector per node (spool + uploader of ``telemetry.collector``), a batch every ``every_s`` each."""

    def __init__(self, server_url: str, nodes: list[Node], tokens: list[str], root: Path, every_s: float = 0.25):
        self.nodes, self.every_s = nodes, every_s
        self.base_s = float(int(time.time()) - 1800)  # batch k of a node: its GPUs' 10 s from base + 10 k
        self.spools = [Spool(root / f"spool-{n}") for n in range(len(nodes))]
        url = ingest_url(server_url)
        self.posts = [self._recorded(_post(url, token)) for token in tokens]
        self.produced = [0] * len(nodes)
        self.batch_of: dict[str, tuple[int, int]] = {}  # batch id -> (node index, k)
        self.answers: dict[tuple[int, int], list[str]] = {}  # (node index, k) -> the answers to its tries
        self.uploaders: list[Uploader] = []
        self.refused = 0  # tries answered "retry" or "wait" (a 503 with Retry-After) by uploaders stopped meanwhile
        self._stop_producing, self._stop_sending = threading.Event(), threading.Event()
        self._threads: list[threading.Thread] = []
        self._producer: threading.Thread | None = None

    def __enter__(self) -> Collectors:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop_producing()
        self.pause()

    def start(self) -> Collectors:
        self._stop_producing.clear()
        self._producer = _thread(self._produce)
        return self.send()

    def send(self) -> Collectors:
        self._stop_sending.clear()
        self.uploaders = [
            Uploader(spool, post=post, timeout_s=30, backoff=Backoff(base_s=0.2, cap_s=1.0))
            for spool, post in zip(self.spools, self.posts, strict=True)
        ]
        self._threads = [_thread(functools.partial(u.run, self._stop_sending)) for u in self.uploaders]
        return self

    def _produce(self) -> None:
        while not self._stop_producing.wait(self.every_s):
            for n, (node, spool) in enumerate(zip(self.nodes, self.spools, strict=True)):
                k = self.produced[n]
                batch = node_batch(n, start_s=self.base_s + SECONDS * k, gpus=GPUS, seconds=SECONDS)
                batch["collector"]["hostname"] = node.hostname
                self.batch_of[batch["batch_id"]] = (n, k)
                spool.put(batch["batch_id"], wire.batch_encode(batch))
                self.produced[n] = k + 1

    def _recorded(self, post: Any) -> Any:
        def recorded(body: bytes, timeout_s: float) -> Any:
            outcome = post(body, timeout_s)
            key = self.batch_of.get(json.loads(gzip.decompress(body))["batch_id"], (-1, -1))
            self.answers.setdefault(key, []).append(f"{outcome.kind} {outcome.status} {outcome.detail[:200]}")
            return outcome

        return recorded

    def stop_producing(self) -> None:
        self._stop_producing.set()
        if self._producer is not None:
            self._producer.join(timeout=30)

    def pause(self) -> None:
        """Stop sending (what is on its way is answered first); the spools keep what is unacknowledged."""
        self._stop_sending.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self.refused += sum(u.stats.retries + u.stats.waits for u in self.uploaders)

    def failures(self) -> int:
        """Tries not acknowledged and to be sent again: errors and timeouts (retry) and the server's 503 with a
        ``Retry-After`` when the database is unavailable (wait)."""
        return self.refused + sum(u.stats.retries + u.stats.waits for u in self.uploaders)

    def acknowledged(self) -> int:
        return sum(u.stats.acknowledged for u in self.uploaders)

    def pending(self) -> int:
        return sum(len(spool) for spool in self.spools)

    def drain(self, timeout_s: float) -> None:
        self.stop_producing()
        wait_for("every batch acknowledged", lambda: self.pending() == 0, timeout_s, every_s=0.2)
        self.pause()

    def batches(self) -> int:
        return sum(self.produced)

    def stored(self) -> tuple[Counter[tuple[int, int]], Counter[tuple[int, int]], int]:
        """GPU and serving rows stored per batch ((node index, k) -> rows), and the distinct (GPU, ts) count."""
        index = {node.pk: n for n, node in enumerate(self.nodes)}
        gpu_rows = GpuSample.objects.filter(gpu__node__in=self.nodes).values_list("gpu__node_id", "gpu_id", "ts")
        serving = ServingSample.objects.filter(endpoint__node__in=self.nodes).values_list("endpoint__node_id", "ts")
        per_gpu: Counter[tuple[int, int]] = Counter()
        distinct = set()
        for node_id, gpu_id, ts in gpu_rows:
            per_gpu[(index[node_id], self._batch_of(ts))] += 1
            distinct.add((gpu_id, ts))
        per_serving: Counter[tuple[int, int]] = Counter((index[node_id], self._batch_of(ts)) for node_id, ts in serving)
        return per_gpu, per_serving, len(distinct)

    def _batch_of(self, ts: datetime) -> int:
        return int((ts.astimezone(UTC).timestamp() - self.base_s) // SECONDS)

    def all_or_nothing(self) -> list[str]:
        """The batches stored in part (some of their rows, or their GPU samples without their serving ones)."""
        per_gpu, per_serving, _ = self.stored()
        partial = []
        for n, produced in enumerate(self.produced):
            for k in range(produced):
                rows = (per_gpu[(n, k)], per_serving[(n, k)])
                if rows not in ((0, 0), (ROWS_PER_BATCH, SERVING_PER_BATCH)):
                    answers = "; ".join(self.answers.get((n, k), ["not sent"]))
                    partial.append(f"node {n} batch {k}: {rows[0]} GPU and {rows[1]} serving rows (answers: {answers})")
        return partial


def _post(url: str, token: str) -> Any:
    def post(body: bytes, timeout_s: float) -> Any:
        return post_batch(url, token, body, timeout_s=timeout_s)

    return post


def _thread(target: Any) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread
