"""bench-ingest: samples/s through HTTP into PostgreSQL, against a bare COPY of the same rows.

Simulated collectors (50 nodes x 8 GPUs by default) push gzipped wire-format
batches, as fast as the server answers, to gunicorn on the bench database; each
node has at most one request in flight, as a real collector does. Bodies are
built before the clock starts, so the load generator (on the same machine)
costs only the sending. Two batch sizes: the live default (10 s x 8 GPUs = 80
rows per request) and backfill-sized batches (60 s = 480 rows). Right after each
repeat's HTTP phases, the very same rows are loaded by one bare ``COPY`` into an
identical partitioned table (same columns, primary key and BRIN index), and each
phase's rate is compared to that COPY's: the two are taken within the same
minute, as the speed of a shared machine drifts by a third over minutes.

Reported: samples/s end to end (HTTP, token, validation, durable commit), its
ratio to the COPY rate, request latency p50/p99, server CPU per 1,000 samples
(gunicorn workers and PostgreSQL separately), and each web worker's peak RSS.
Every phase runs ``--repeats`` times on fresh rows; medians are reported (the
ratio: the median of the repeats' ratios).

    python -m bench.ingest [--nodes 50] [--gpus 8] [--workers 3] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gzip
import io
import random
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from bench.common import (
    Gunicorn,
    background_settle,
    django_setup,
    median,
    percentile,
    pids_cpu_s,
    postgres_backend_pids,
    primary_key_columns,
    proc_mem_kib,
    psql_url,
    results_write,
    server_tree_cpu_s,
    servers_parse,
    table_print,
    target,
    targets_print,
    timed,
)

TARGET_RATIO = {80: 0.10, 480: 0.35}  # the simple path (issue 12); 0.15 and 0.5 were the withdrawn ones
TARGET_WORKER_MIB = 250
SAMPLE_INTERVAL_S = 1
GIB = 2**30


# --- the simulated fleet ---------------------------------------------------------------------


@dataclass
class SimNode:
    """One simulated collector: its token, GPUs and counters."""

    index: int
    gpus: int
    token: str = ""
    energy_j: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        rng = random.Random(self.index)
        self.energy_j = [rng.uniform(1e8, 1e10) for _ in range(self.gpus)]

    @property
    def hostname(self) -> str:
        return f"bench-{self.index:03d}"

    def uuid(self, gpu: int) -> str:
        return f"GPU-bench-{self.index:03d}-{gpu}"

    def batch(self, start_s: int, seconds: int) -> dict[str, Any]:
        """``seconds`` of 1 Hz samples of every GPU from ``start_s``, time-major, as the collector builds a batch."""
        cols: dict[str, list[Any]] = {
            k: [] for k in ("gpu", "ts", "power_w", "energy_j", "util_pct", "mem_util_pct", "mem_used_bytes", "temp_c")
        }
        for t in range(start_s, start_s + seconds, SAMPLE_INTERVAL_S):
            for g in range(self.gpus):
                load = 0.5 + 0.35 * ((t * 7919 + g * 104729 + self.index) % 1000) / 1000
                power = round(70 + 630 * load, 3)
                self.energy_j[g] += power
                cols["gpu"].append(g)
                cols["ts"].append(float(t))
                cols["power_w"].append(power)
                cols["energy_j"].append(round(self.energy_j[g], 3))
                cols["util_pct"].append(min(100, round(100 * load)))
                cols["mem_util_pct"].append(round(70 * load))
                cols["mem_used_bytes"].append(int(80 * GIB * (0.9 + 0.02 * load)))
                cols["temp_c"].append(round(32 + 36 * load))
        return {
            "version": 1,
            "batch_id": uuid.uuid4().hex,
            "sent_at": float(start_s + seconds),
            "collector": {
                "version": "bench",
                "hostname": self.hostname,
                "dropped_batches": 0,
                "spool_bytes": 0,
                "sample_interval_s": 1.0,
            },
            "gpus": [
                {
                    "uuid": self.uuid(g),
                    "index": g,
                    "name": "NVIDIA H100 80GB HBM3",
                    "energy_counter_supported": True,
                    "epoch": f"boot-{self.index}/570.133.20",
                }
                for g in range(self.gpus)
            ],
            "gpu_samples": cols,
        }


def nodes_enroll(count: int, gpus: int) -> list[SimNode]:
    from fleets.services import node_enroll

    nodes = [SimNode(i, gpus) for i in range(count)]
    for node in nodes:
        node.token = node_enroll(
            organization_name="Bench Org", fleet_name="bench", site_name="bench-site", hostname=node.hostname
        ).token
    return nodes


@dataclass
class Phase:
    """Pre-built request bodies: ``per_node[i]`` is node i's batches in time order."""

    rows_per_request: int
    per_node: list[list[bytes]]
    batches: list[dict[str, Any]]  # the decoded batches, for the COPY of the same rows

    @property
    def requests(self) -> int:
        return sum(len(bodies) for bodies in self.per_node)

    @property
    def rows(self) -> int:
        return self.requests * self.rows_per_request


def phase_build(nodes: list[SimNode], *, start_s: int, seconds: int, batch_s: int) -> Phase:
    per_node: list[list[bytes]] = [[] for _ in nodes]
    batches = []
    for offset in range(0, seconds, batch_s):
        for node in nodes:
            batch = node.batch(start_s + offset, batch_s)
            per_node[node.index].append(gzip.compress(orjson.dumps(batch), compresslevel=6))
            batches.append(batch)
    return Phase(batch_s * nodes[0].gpus, per_node, batches)


# --- sending -------------------------------------------------------------------------------------


@dataclass
class SendResult:
    latencies_s: list[float]
    stored: int
    duplicates: int
    errors: list[str]
    wall_s: float


def phase_send(
    phase: Phase,
    nodes: list[SimNode],
    *,
    port: int,
    concurrency: int,
    path: str = "/api/v1/ingest/",
    extra_headers: dict[int, dict[str, str]] | None = None,
) -> SendResult:
    """Send every body, each node's in order, ``concurrency`` requests at a time (one per node at most).

    The load generator shares the machine's two cores with the server, so it is
    kept lean: each request's bytes (request line, headers, body) are built
    before the clock starts, and a lane thread only connects, sends and reads
    the answer to its end (gunicorn's sync workers close the connection after
    each answer, as they do for a real collector).
    """
    lanes: list[list[tuple[int, bytes]]] = [[] for _ in range(concurrency)]
    for node in nodes:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Encoding: gzip\r\nAuthorization: Bearer {node.token}\r\nConnection: close\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in (extra_headers or {}).get(node.index, {}).items())
        )
        lane = lanes[node.index % concurrency]
        for body in phase.per_node[node.index]:
            lane.append((node.index, f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body))
    latencies: list[float] = []
    totals = {"stored": 0, "duplicates": 0}
    errors: list[str] = []
    lock = threading.Lock()

    def lane_send(requests: list[tuple[int, bytes]]) -> None:
        local: list[float] = []
        stored = duplicates = 0
        for _, request in _interleaved(requests):
            begun = time.perf_counter()
            status, body = _exchange(port, request)
            local.append(time.perf_counter() - begun)
            if status != 200:
                with lock:
                    errors.append(f"{status}: {body[:200]!r}")
                continue
            answer = orjson.loads(body)
            stored += answer["stored"]["gpu_samples"]
            duplicates += answer["duplicates"]["gpu_samples"]
        with lock:
            latencies.extend(local)
            totals["stored"] += stored
            totals["duplicates"] += duplicates

    threads = [threading.Thread(target=lane_send, args=(requests,)) for requests in lanes if requests]
    begun = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - begun
    return SendResult(latencies, totals["stored"], totals["duplicates"], errors, wall)


def _interleaved(requests: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Round-robin over the lane's nodes, each node's requests in their order."""
    by_node: dict[int, list[tuple[int, bytes]]] = {}
    for item in requests:
        by_node.setdefault(item[0], []).append(item)
    queues = list(by_node.values())
    return [queue[k] for k in range(max(map(len, queues))) for queue in queues if k < len(queue)]


def _exchange(port: int, request: bytes) -> tuple[int, bytes]:
    """One request on a fresh connection; the status and the body, read to the connection's end."""
    for attempt in range(2):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
                sock.sendall(request)
                chunks = []
                while chunk := sock.recv(65536):
                    chunks.append(chunk)
            answer = b"".join(chunks)
            head, _, body = answer.partition(b"\r\n\r\n")
            return int(head.split(b" ", 2)[1]), body
        except (ConnectionError, IndexError, ValueError):
            if attempt:
                raise
    raise AssertionError("unreachable")


# --- the bare COPY ---------------------------------------------------------------------------------

COPY_TABLE = "bench_copy_gpusample"
COPY_COLUMNS = (
    "ts",
    "gpu_id",
    "epoch_id",
    "energy_j",
    "mem_used_mib",
    "power_w",
    "util_pct",
    "mem_util_pct",
    "temp_c",
    "node_id",
)


def copy_table_create(days: set[Any], table: str = COPY_TABLE) -> None:
    """An empty table identical to the raw GPU sample table: columns, partitions, primary key, BRIN."""
    import psycopg

    with psycopg.connect(psql_url(), autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(
            f"CREATE TABLE {table} (LIKE telemetry_gpusample INCLUDING DEFAULTS INCLUDING CONSTRAINTS) "
            'PARTITION BY RANGE ("ts")'
        )
        key = primary_key_columns(conn.cursor(), "telemetry_gpusample")
        conn.execute(f"ALTER TABLE {table} ADD PRIMARY KEY ({key}) WITH (fillfactor = 100)")
        conn.execute(f'CREATE INDEX {table}_ts_brin ON {table} USING brin ("ts")')
        for day in sorted(days):
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            conn.execute(
                f"CREATE TABLE {table}_p{day:%Y%m%d} PARTITION OF {table} "
                f"FOR VALUES FROM ('{start.isoformat()}') TO ('{(start + timedelta(days=1)).isoformat()}')"
            )


def copy_text(batches: list[dict[str, Any]], ids: dict[str, tuple[int, int]]) -> list[bytes]:
    """The rows of ``batches`` as COPY text, in arrival order, in ~1 MiB chunks (built before timing)."""
    chunks, out = [], io.StringIO()
    for batch in batches:
        refs = [ids[g["uuid"]] for g in batch["gpus"]]
        c = batch["gpu_samples"]
        for r in range(len(c["ts"])):
            gpu_id, epoch_id, node_id = refs[c["gpu"][r]]
            ts = datetime.fromtimestamp(c["ts"][r], tz=UTC).isoformat()
            out.write(
                f"{ts}\t{gpu_id}\t{epoch_id}\t{c['energy_j'][r]}\t{(c['mem_used_bytes'][r] + 2**19) >> 20}\t"
                f"{c['power_w'][r]}\t{c['util_pct'][r]}\t{c['mem_util_pct'][r]}\t{c['temp_c'][r]}\t{node_id}\n"
            )
        if out.tell() > 2**20:
            chunks.append(out.getvalue().encode())
            out = io.StringIO()
    chunks.append(out.getvalue().encode())
    return chunks


def copy_load(chunks: list[bytes]) -> float:
    """One COPY of every chunk and a commit; return the wall seconds."""
    import psycopg

    with psycopg.connect(psql_url()) as conn:
        begun = time.perf_counter()
        with conn.cursor() as cursor, cursor.copy(f"COPY {COPY_TABLE} ({', '.join(COPY_COLUMNS)}) FROM STDIN") as copy:
            for chunk in chunks:
                copy.write(chunk)
        conn.commit()
        return time.perf_counter() - begun


def gpu_ids() -> dict[str, tuple[int, int, int]]:
    from telemetry.models import GpuEpoch

    return {e.gpu.uuid: (e.gpu_id, e.pk, e.gpu.node_id) for e in GpuEpoch.objects.select_related("gpu").all()}


# --- the run -----------------------------------------------------------------------------------------


def raw_tables_empty(first_s: int, last_s: int) -> None:
    """Empty the days this run writes, and the rollup queue its batches fill."""
    from django.db import connection

    from bench.common import raw_days_empty

    first, last = datetime.fromtimestamp(first_s, tz=UTC).date(), datetime.fromtimestamp(last_s, tz=UTC).date()
    raw_days_empty(first + timedelta(days=n) for n in range((last - first).days + 1))
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE telemetry_rolluppending")


def server_cpu_s(server: Gunicorn, db_pids: list[int]) -> tuple[float, float]:
    return pids_cpu_s(server.worker_pids()), pids_cpu_s(db_pids)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    parser.add_argument("--batch-seconds", default="10,60", help="seconds per request, comma-separated")
    parser.add_argument("--rows-per-phase", type=int, default=120_000, help="GPU samples sent per phase and repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers")
    parser.add_argument("--worker-class", default="sync")
    parser.add_argument("--concurrency", type=int, default=6, help="requests in flight (nodes sending at once)")
    parser.add_argument("--no-reference", dest="reference", action="store_false",
                        help="skip the bare reference view (bench.bare)")  # fmt: skip
    parser.add_argument("--servers", default="",
                        help="name=data-dir,...: charge database CPU per server, each server's whole process tree "
                             "(bench.citus passes the cluster's); default: the bench database's backends")  # fmt: skip
    parser.add_argument("--name", default="ingest", help="result file name (bench.citus: ingest_citus, ingest_single)")
    args = parser.parse_args(argv)
    servers = servers_parse(args.servers)
    django_setup()
    nodes = nodes_enroll(args.nodes, args.gpus)
    batch_sizes = [int(s) for s in args.batch_seconds.split(",")]

    # Fresh time ranges per phase and repeat, all recent (inside retention, not in the future).
    per_phase_s = {b: max(b, args.rows_per_phase // (args.nodes * args.gpus) // b * b) for b in batch_sizes}
    span_s = args.repeats * sum(per_phase_s.values()) + 60
    clock = int(time.time()) // 60 * 60 - span_s - 600
    raw_tables_empty(clock, clock + span_s + 60)
    print(
        f"building bodies: {args.nodes} nodes x {args.gpus} GPUs, batches of {batch_sizes} s, "
        f"{args.repeats} repeats ...",
        flush=True,
    )
    warmup = phase_build(nodes, start_s=clock, seconds=10, batch_s=10)
    clock += 60
    phases: dict[int, list[Phase]] = {b: [] for b in batch_sizes}
    for _ in range(args.repeats):
        for b in batch_sizes:
            phases[b].append(phase_build(nodes, start_s=clock, seconds=per_phase_s[b], batch_s=b))
            clock += per_phase_s[b]

    import psycopg

    dbname = psycopg.conninfo.conninfo_to_dict(psql_url())["dbname"]
    figures: dict[int, dict[str, list[float]]] = {b: {} for b in batch_sizes}
    background_settle()  # autovacuum of an earlier benchmark's rows would be charged to this one
    with Gunicorn(workers=args.workers, worker_class=args.worker_class) as server:
        warm = phase_send(warmup, nodes, port=server.port, concurrency=args.concurrency)  # GPUs join the inventory
        assert not warm.errors, warm.errors[:3]
        ids = gpu_ids()
        days = {datetime.fromtimestamp(t, tz=UTC).date() for t in (clock - span_s - 60, clock + 60)}
        copy_rates = []
        for rep in range(args.repeats):
            # The same rows by a bare COPY, right after this repeat's HTTP phases: the machine's speed
            # drifts by a third over minutes, so each ratio compares rates taken within the same minute.
            batches = [batch for b in batch_sizes for batch in phases[b][rep].batches]
            chunks = copy_text(batches, ids)
            for b in batch_sizes:
                phase = phases[b][rep]
                db_pids = postgres_backend_pids(dbname)
                web0, db0 = server_cpu_s(server, db_pids)
                per0 = {name: server_tree_cpu_s(path) for name, path in servers.items()}
                sent = phase_send(phase, nodes, port=server.port, concurrency=args.concurrency)
                per1 = {name: server_tree_cpu_s(path) for name, path in servers.items()}
                web1, db1 = server_cpu_s(server, db_pids)
                if servers:  # the whole servers' CPU, not only the bench database's backends
                    db0, db1 = sum(per0.values()), sum(per1.values())
                    for name in servers:
                        per_1k = (per1[name] - per0[name]) * 1e6 / phase.rows
                        figures[b].setdefault(f"server_{name}_cpu_ms_per_1k", []).append(per_1k)
                if sent.errors or sent.stored != phase.rows:
                    raise SystemExit(f"phase {b} s: stored {sent.stored} of {phase.rows}; errors {sent.errors[:3]}")
                f = figures[b]
                f.setdefault("samples_per_s", []).append(phase.rows / sent.wall_s)
                f.setdefault("requests_per_s", []).append(phase.requests / sent.wall_s)
                f.setdefault("p50_ms", []).append(percentile(sent.latencies_s, 50) * 1000)
                f.setdefault("p99_ms", []).append(percentile(sent.latencies_s, 99) * 1000)
                f.setdefault("web_cpu_ms_per_1k", []).append((web1 - web0) * 1e6 / phase.rows)
                f.setdefault("db_cpu_ms_per_1k", []).append((db1 - db0) * 1e6 / phase.rows)
                print(
                    f"  repeat {rep + 1}, {phase.rows_per_request} rows/request: "
                    f"{phase.rows / sent.wall_s:,.0f} samples/s",
                    flush=True,
                )
            copy_table_create(days)  # fresh per repeat
            rows = sum(len(batch["gpu_samples"]["ts"]) for batch in batches)
            with timed() as copy_s:
                copy_load(chunks)
            copy_rates.append(rows / copy_s[0])
            for b in batch_sizes:
                figures[b].setdefault("ratio_to_copy", []).append(figures[b]["samples_per_s"][-1] / copy_rates[-1])
            print(f"  repeat {rep + 1}, bare COPY: {rows / copy_s[0]:,.0f} rows/s", flush=True)
        worker_peak_mib = [proc_mem_kib(pid).get("VmHWM", 0) / 1024 for pid in server.worker_pids()]
    copy_table_drop()
    reference = reference_run(phases, nodes, days, args) if args.reference else {}

    copy_rate = median(copy_rates)
    metrics: dict[str, Any] = {"copy_rows_per_s": round(copy_rate)}
    targets: dict[str, Any] = {}
    rows_out = [("bare COPY rows/s", round(copy_rate), "", "", "", "", "", "")]
    for b in batch_sizes:
        rows_per_request = b * args.gpus
        med = {name: median(values) for name, values in figures[b].items()}
        ratio = med["ratio_to_copy"]  # the median of each repeat's ratio to its own COPY
        key = f"{rows_per_request}_rows"
        metrics[key] = {name: round(value, 3) for name, value in med.items()}
        metrics[key]["runs_samples_per_s"] = [round(v) for v in figures[b]["samples_per_s"]]
        metrics[key]["runs_ratio_to_copy"] = [round(v, 3) for v in figures[b]["ratio_to_copy"]]
        if rows_per_request in TARGET_RATIO:
            targets[f"ratio_at_{key}"] = target(round(ratio, 3), TARGET_RATIO[rows_per_request], at_least=True)
        rows_out.append(
            (
                f"ingest, {rows_per_request} rows/request",
                round(med["samples_per_s"]),
                round(ratio, 3),
                round(med["requests_per_s"]),
                round(med["p50_ms"], 1),
                round(med["p99_ms"], 1),
                round(med["web_cpu_ms_per_1k"], 1),
                round(med["db_cpu_ms_per_1k"], 1),
            )
        )
        if b in reference:
            metrics[key]["bare_reference_samples_per_s"] = round(reference[b])
            metrics[key]["bare_reference_ratio_to_copy"] = round(reference[b] / copy_rate, 3)
            metrics[key]["share_of_bare_reference"] = round(med["samples_per_s"] / reference[b], 3)
            rows_out.append((f"bare reference view, {rows_per_request} rows", round(reference[b]),
                             round(reference[b] / copy_rate, 3), "", "", "", "", ""))  # fmt: skip
    metrics["web_worker_peak_rss_mib"] = [round(m, 1) for m in worker_peak_mib]
    if servers:
        metrics["rows_per_worker"] = rows_per_worker()
    targets["web_worker_peak_rss_mib"] = target(round(max(worker_peak_mib), 1), TARGET_WORKER_MIB)
    header = ("what", "samples/s", "ratio", "req/s", "p50 ms", "p99 ms", "web CPU ms/1k", "db CPU ms/1k")
    table_print("bench-ingest (medians)", rows_out, header=header)
    print(f"  web workers' peak RSS (MiB): {metrics['web_worker_peak_rss_mib']}")
    targets_print(targets)
    run = {
        "nodes": args.nodes,
        "gpus_per_node": args.gpus,
        "batch_seconds": batch_sizes,
        "rows_per_phase": {b: phases[b][0].rows for b in batch_sizes},
        "repeats": args.repeats,
        "gunicorn_workers": args.workers,
        "worker_class": args.worker_class,
        "concurrency": args.concurrency,
        "load_generator": "same machine, one process, bodies pre-built (gzip level 6)",
        "bare_reference": "bench.bare: Django view, no DRF/token/validation, text COPY via staging table"
        if args.reference
        else None,
    }
    run["servers"] = sorted(servers)
    print(f"\nwrote {results_write(args.name, metrics=metrics, targets=targets, run=run)}")


def rows_per_worker() -> dict[str, int]:
    """Raw GPU samples held by each Citus worker (``host:port``), over every shard; ``{}`` off Citus."""
    from django.db import connection

    from common.citus import citus_coordinator

    if not citus_coordinator(connection):
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.nodename || ':' || s.nodeport, sum(r.result::bigint) "
            "FROM run_command_on_shards('telemetry_gpusample', 'SELECT count(*) FROM %s') r "
            "JOIN citus_shards s ON s.shardid = r.shardid GROUP BY 1 ORDER BY 1"
        )
        return {worker: int(rows) for worker, rows in cursor.fetchall()}


def copy_table_drop(table: str = COPY_TABLE) -> None:
    import psycopg

    with psycopg.connect(psql_url(), autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def reference_run(
    phases: dict[int, list[Phase]], nodes: list[SimNode], days: set[Any], args: argparse.Namespace
) -> dict[int, float]:
    """Samples/s of the bare reference view (``bench.bare``) on the same bodies: median per batch size."""
    from bench.bare import TABLE

    ids = gpu_ids()
    headers = {
        node.index: {
            "X-Bench-Gpu-Ids": ",".join(str(ids[node.uuid(g)][0]) for g in range(node.gpus)),
            "X-Bench-Epoch-Ids": ",".join(str(ids[node.uuid(g)][1]) for g in range(node.gpus)),
            "X-Bench-Node-Id": str(ids[node.uuid(0)][2]),
        }
        for node in nodes
    }
    rates: dict[int, list[float]] = {b: [] for b in phases}
    with Gunicorn(workers=args.workers, worker_class=args.worker_class, settings_module="bench.settings") as server:
        for rep in range(args.repeats):
            copy_table_create(days, TABLE)
            for b, reps in phases.items():
                phase = reps[rep]
                sent = phase_send(phase, nodes, port=server.port, concurrency=args.concurrency,
                                  path="/bench/bare-ingest/", extra_headers=headers)  # fmt: skip
                if sent.errors or sent.stored != phase.rows:
                    raise SystemExit(f"reference, {b} s: stored {sent.stored} of {phase.rows}; {sent.errors[:3]}")
                rates[b].append(phase.rows / sent.wall_s)
                print(f"  repeat {rep + 1}, bare reference view, {phase.rows_per_request} rows/request: "
                      f"{phase.rows / sent.wall_s:,.0f} samples/s", flush=True)  # fmt: skip
    copy_table_drop(TABLE)
    return {b: median(values) for b, values in rates.items()}


if __name__ == "__main__":
    main()
