"""Shared helpers for the benchmarks: the bench database, Django, gunicorn, /proc readings, results.

Every benchmark runs against ``BENCH_DATABASE_URL`` (default
``postgres://postgres@127.0.0.1:5432/wattledger_bench``), which it creates and
migrates if needed, with production-like settings (``DEBUG=0``, a bench
secret, plain HTTP). Results go to ``bench/results/NAME.json``::

    {"metrics": {...}, "targets": {"NAME": {"value": x, "target": y, "met": true}},
     "machine": {...}, "run": {...}}
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
# ``BENCH_RESULTS_DIR`` moves them (``bench.smoke`` writes its tiny runs apart from the real ones).
RESULTS_DIR = Path(os.environ.get("BENCH_RESULTS_DIR") or ROOT / "bench" / "results")
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/wattledger_bench"
BENCH_SECRET_KEY = "bench-only-key-" + "Zq4Wm8Xr2Tn6Ls1Vb9Hk3Jd7Fp5Gc0Ya" * 2
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def database_url() -> str:
    return os.environ.get("BENCH_DATABASE_URL") or DEFAULT_DATABASE_URL


def bench_env(url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a Wattledger process (this one, gunicorn, a worker) on the bench database."""
    env = {
        **os.environ,
        "DATABASE_URL": url or database_url(),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": BENCH_SECRET_KEY,
        "DEBUG": "0",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        "WATTLEDGER_VAR_DIR": str(ROOT / "var" / "bench"),
        "STATIC_ROOT": str(ROOT / "var" / "bench" / "static"),
        # Ingest refuses samples older than retention: the benchmarks write recent ones.
        "TELEMETRY_RETENTION_DAYS": os.environ.get("TELEMETRY_RETENTION_DAYS", "30"),
        # One user times every report many times a minute: the per-user report throttle (120/minute) would
        # answer 429s, which are fast and time nothing.
        "THROTTLE_REPORTS_RATE": "100000/minute",
    }
    # The servers and workers a benchmark starts keep the product's request timeout (its default);
    # only the benchmark's own process, which bulk-loads millions of rows, lifts it (``django_setup``).
    env.pop("DATABASE_STATEMENT_TIMEOUT_S", None)
    env.update(extra)
    return env


def database_create(url: str) -> None:
    """Create the bench database if it does not exist (PostgreSQL only)."""
    import psycopg

    parts = urlsplit(url)
    if not parts.scheme.startswith("postgres"):
        raise SystemExit(f"the benchmarks need PostgreSQL; BENCH_DATABASE_URL={url!r}")
    name = parts.path.lstrip("/")
    admin_url = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')


# The benchmark process's own statement timeout: none (0). Its bulk loads (8.64M samples for the
# rollup) run for minutes; the product's 30 s limit is for requests.
LOADER_STATEMENT_TIMEOUT_S = "0"


def django_setup(*, migrate: bool = True) -> None:
    """Point this process at the bench database, set Django up, and migrate."""
    url = database_url()
    database_create(url)
    (ROOT / "var" / "bench" / "static").mkdir(parents=True, exist_ok=True)
    os.environ.update(bench_env(url, DATABASE_STATEMENT_TIMEOUT_S=LOADER_STATEMENT_TIMEOUT_S))
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)


def primary_key_columns(cursor: Any, table: str) -> str:
    """``table``'s primary key columns, quoted, in key order: a copy of a raw table takes the key the
    migrations gave it (``(gpu_id, ts)`` on one server, ``(node_id, gpu_id, ts)`` on Citus)."""
    from common.citus import primary_key

    return ", ".join(f'"{column}"' for column in primary_key(cursor, table)[1])


def raw_days_empty(days: Iterable[date]) -> None:
    """Empty the raw sample partitions of ``days`` (each benchmark writes its own days and leaves the others)."""
    from django.db import connection

    from telemetry.partitions import RAW_TABLES, partition_name

    with connection.cursor() as cursor:
        for table in RAW_TABLES:
            for day in days:
                cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [partition_name(table, day)])
                if cursor.fetchone()[0]:
                    cursor.execute(f'TRUNCATE "{partition_name(table, day)}"')


def psql_url() -> str:
    """A libpq URL for the bench database (psycopg.connect, psql)."""
    return database_url().replace("postgres://", "postgresql://", 1)


# --- /proc readings ------------------------------------------------------------------


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_mem_kib(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (peak) of a process, KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def proc_children(pid: int) -> list[int]:
    with contextlib.suppress(FileNotFoundError):
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def server_tree_cpu_s(data_dir: str | Path) -> float:
    """CPU seconds of a whole PostgreSQL server: its postmaster and every child, living or ended.

    The postmaster's pid is the first line of ``DATA_DIR/postmaster.pid``. A child that has ended
    (a backend whose connection closed) is counted in its parent's ``cutime``/``cstime`` once
    reaped, so the sum over the postmaster and its living children of utime + stime + cutime +
    cstime holds every process the server ever ran: backends, Citus's connections between nodes,
    its maintenance daemon, autovacuum, the WAL writer and checkpointer.
    """
    postmaster = int(Path(data_dir, "postmaster.pid").read_text().split()[0])
    total = 0.0
    for pid in [postmaster, *proc_children(postmaster)]:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / CLK_TCK
    return total


def servers_parse(spec: str) -> dict[str, str]:
    """``name=data-dir,name=data-dir`` (bin/bench-citus's BENCH_CITUS_SERVERS) as a dict."""
    return dict(item.split("=", 1) for item in spec.split(",") if item)


def postgres_backend_pids(dbname: str) -> list[int]:
    """PIDs of the PostgreSQL backends connected to ``dbname`` (same machine), for their CPU time."""
    import psycopg

    with psycopg.connect(psql_url(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [dbname]
        ).fetchall()
    return [row[0] for row in rows]


def pids_cpu_s(pids: Sequence[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += proc_cpu_s(pid)
    return total


# --- gunicorn --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Gunicorn:
    """A gunicorn serving Wattledger on the bench database, on 127.0.0.1."""

    workers: int = 2
    worker_class: str = "sync"
    threads: int = 1
    settings_module: str = "config.settings"
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, timeout_s: float = 60.0) -> None:
        log = ROOT / "var" / "bench" / "gunicorn.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "gunicorn", "config.wsgi:application",
            "--bind", f"127.0.0.1:{self.port}", "--workers", str(self.workers),
            "--worker-class", self.worker_class, "--threads", str(self.threads),
            "--backlog", "2048", "--timeout", "120", "--log-level", "warning", "--error-logfile", str(log),
        ]  # fmt: skip
        env = bench_env(DJANGO_SETTINGS_MODULE=self.settings_module)
        self.process = subprocess.Popen(command, env=env, cwd=ROOT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}; see {log}")
            with contextlib.suppress(OSError), urllib.request.urlopen(self.url + "/healthz", timeout=2) as answer:  # noqa: S310
                if answer.status == 200 and len(self.worker_pids()) == self.workers:
                    return
            time.sleep(0.2)
        raise RuntimeError("gunicorn did not become healthy")

    def worker_pids(self) -> list[int]:
        return proc_children(self.process.pid) if self.process else []

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Gunicorn:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


# --- figures -----------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return float(ordered[rank - 1])


def target(value: float | None, limit: float, *, at_least: bool = False) -> dict[str, Any]:
    """A target entry: met when ``value <= limit`` (or ``>=`` with ``at_least``)."""
    met = value is not None and (value >= limit if at_least else value <= limit)
    return {"value": value, "target": (">= " if at_least else "<= ") + f"{limit:g}", "met": met}


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gib": round(os.sysconf("SC_PHYS_PAGES") * PAGE_SIZE / 2**30, 1),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    with contextlib.suppress(Exception):
        import psycopg

        with psycopg.connect(psql_url(), autocommit=True) as conn:
            info["postgresql"] = conn.execute("SHOW server_version").fetchone()[0]
            for name in (
                "shared_buffers",
                "work_mem",
                "fsync",
                "synchronous_commit",
                "max_parallel_workers_per_gather",
            ):
                info[f"pg_{name}"] = conn.execute(f"SHOW {name}").fetchone()[0]
    return info


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def results_write(name: str, *, metrics: dict[str, Any], targets: dict[str, Any], run: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    doc = {
        "benchmark": name,
        "finished_at": datetime.now(tz=UTC).isoformat(timespec="seconds"),
        "metrics": metrics,
        "targets": targets,
        "machine": machine_info(),
        "run": run,
    }
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return path


def table_print(title: str, rows: Sequence[Sequence[Any]], *, header: Sequence[str] = ("figure", "value")) -> None:
    """A plain aligned table on stdout."""
    cells = [[str(c) for c in header], *[[_cell(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(len(header))]
    print(f"\n{title}")
    for n, row in enumerate(cells):
        print("  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(row)))
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))


def targets_print(targets: dict[str, Any]) -> None:
    rows = [(name, t["value"], t["target"], "yes" if t["met"] else "NO") for name, t in targets.items()]
    table_print("targets", rows, header=("target", "value", "limit", "met"))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


@contextlib.contextmanager
def timed() -> Iterator[list[float]]:
    """``with timed() as t: ...`` then ``t[0]`` is the wall seconds."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)


def background_settle(*, timeout_s: float = 300.0) -> float:
    """Wait until no autovacuum worker runs on the cluster (a benchmark's load, or the one before it,
    sets autovacuum off on millions of new rows, and its CPU would be charged to the next timing).
    Return the seconds waited."""
    import psycopg

    begun = time.perf_counter()
    with psycopg.connect(psql_url(), autocommit=True) as conn:
        while time.perf_counter() - begun < timeout_s:
            busy = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'")
            if busy.fetchone() == (0,):
                break
            time.sleep(1)
    return time.perf_counter() - begun


# --- seeding the bench organizations ---------------------------------------------------------------

GPUS_PER_NODE = 8
BENCH_FLEETS = (("enterprise", "NVIDIA H100 80GB HBM3"), ("consumer", "NVIDIA GeForce RTX 4090"))
# SQL over every hour ``h`` of ``[%(start)s, %(end)s)``, and a load of 0.15-0.85 varying by hour and row ``o``.
SQL_HOURS = "generate_series(%(start)s::timestamptz, %(end)s::timestamptz - interval '1 hour', interval '1 hour') h"
SQL_LOAD = "(0.5 + 0.35 * sin(extract(epoch FROM h) / 13751.0 + o.id))"


def bench_nodes(*, organization_name: str, prefix: str, gpus: int, gpu_prefix: str | None = None) -> list[Any]:
    """Nodes of ``organization_name`` with ``gpus`` GPUs, 8 a node, the nodes alternating between an H100
    fleet (``enterprise``) and an RTX 4090 one (``consumer``) over three sites in zone DE. Hostnames
    ``PREFIX-NNN``, GPU UUIDs ``GPU-GPU_PREFIX-NNN-I`` (``gpu_prefix`` defaults to ``prefix``)."""
    from fleets.models import Gpu
    from fleets.services import node_enroll

    nodes = []
    for n in range((gpus + GPUS_PER_NODE - 1) // GPUS_PER_NODE):
        fleet, name = BENCH_FLEETS[n % len(BENCH_FLEETS)]
        node = node_enroll(
            organization_name=organization_name,
            fleet_name=fleet,
            site_name=f"site-{n % 3}",
            hostname=f"{prefix}-{n:03d}",
            site_defaults={"grid_zone": "DE", "country": "DE"},
        ).node
        for i in range(min(GPUS_PER_NODE, gpus - n * GPUS_PER_NODE)):
            Gpu.objects.get_or_create(
                uuid=f"GPU-{prefix}-{n:03d}-{i}", defaults={"node": node, "index": i, "name": name}
            )
        nodes.append(node)
    return nodes


def ledger_seeded(nodes: list[Any], start: datetime, end: datetime) -> bool:
    """Whether every node has a ledger line for every hour of ``[start, end)``."""
    from accounting.models import NodeHourLedger

    hours = int((end - start).total_seconds() // 3600)
    rows = NodeHourLedger.objects.filter(node__in=nodes, hour_start__gte=start, hour_start__lt=end).count()
    return rows == len(nodes) * hours


def sql_insert(
    cursor: Any, model: Any, from_sql: str, where: str, params: dict[str, Any], values: dict[str, str]
) -> None:
    """INSERT ... SELECT over every concrete column: ``values`` where given, else a default for the column's kind."""
    columns, expressions = [], []
    for column in model._meta.concrete_fields:
        if column.primary_key:
            continue
        columns.append(f'"{column.column}"')
        expressions.append(values.get(column.column) or _sql_default(column))
    cursor.execute(
        f"INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "
        f"SELECT {', '.join(expressions)} FROM {from_sql} WHERE {where}",
        params,
    )


def _sql_default(field: Any) -> str:
    if field.null:
        return "NULL"
    kind = field.get_internal_type()
    if kind in ("CharField", "TextField", "SlugField"):
        return "''"
    if kind == "BooleanField":
        return "false"
    if kind == "DateTimeField":
        return "now()"
    if kind == "JSONField":
        return "'[]'::jsonb"
    return "0"
