"""The fault harness: simulated collectors, a fault proxy, gunicorn, PostgreSQL, Redis, Celery; faults; the oracle.

Everything runs on 127.0.0.1 on free ports, under one temporary folder:

    collectors (tests.faults.simcollector, one spool and token each)
        -> FaultProxy (drop, reset, delay, lose the response)
        -> gunicorn config.wsgi (2 workers)
        -> PostgreSQL (a cluster of its own)   Redis <- Celery worker + beat

The collectors backfill a window of past hours, paced so that it lasts the
run; faults are injected one after another, evenly over the run (cycled in a
long run); then the harness waits for every collector to have every batch
acknowledged, lets the worker finish the rollups and the ledger, stops the
services and hands the database to :mod:`tests.faults.oracle`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from telemetry.collector import wire

from .procs import (
    REPO,
    CitusCluster,
    PostgresCluster,
    Process,
    children,
    free_port,
    port_open,
    python_process,
    redis_process,
    wait_for,
)
from .proxy import FaultProxy

DB_NAME = "wattledger_faults"
WEB_THREADS = 4  # per gunicorn worker; one of them is kept for /healthz
NODES = (("faults-h100", "h100-sxm:2"), ("faults-4090", "rtx-4090:2"), ("faults-l4", "l4:2"))
# The organization whose admin follows a scenario run and a CSV upload through the API (its first fleet).
API_ORGANIZATION, API_FLEET = "Faults Org 1", "fleet-1"
# The long tasks' lease (TASK_LEASE_S) on the harness's servers: a killed worker's run lapses within the run.
TASK_LEASE_S = 4
PRICE_ROWS = 24  # node-price rows per CSV upload, one hour each, after the window (no ledger hour re-opened)
HOUR = timedelta(hours=1)
FAULTS = (
    "proxy_drop",
    "web_worker_kill",
    "proxy_reset",
    "collector_kill",
    "proxy_delay",
    "web_server_kill",
    "proxy_lose_response",
    "ingest_impossible_counter",
    "postgres_freeze",
    "postgres_freeze_every_thread_busy",
    "redis_restart",
    "postgres_kill",
    "celery_worker_kill_mid_rollup",
    "celery_worker_kill_mid_upload",
    "celery_worker_kill_mid_scenario",
)
# The Citus mode (a coordinator and two workers, ``make test-faults-citus``): a worker killed too, after PostgreSQL.
CITUS_FAULTS = (*FAULTS[: FAULTS.index("postgres_kill") + 1], "citus_worker_kill",
                *FAULTS[FAULTS.index("postgres_kill") + 1 :])  # fmt: skip
WORKER_DOWN_S = 2.0  # how long a killed Citus worker stays down


@dataclass(frozen=True)
class Scenario:
    name: str
    hours: int  # simulated hours backfilled by each collector
    speed: float  # simulated seconds per real second
    freeze_s: float  # how long PostgreSQL stays frozen (SIGSTOP)
    rounds: int = 1  # how many times the list of faults is gone through
    settle_s: float = 240  # the longest wait for the last batches and rollups after the run

    @property
    def run_s(self) -> float:
        return self.hours * 3600 / self.speed


SHORT = Scenario("short", hours=2, speed=80, freeze_s=8)
SOAK = Scenario("soak", hours=int(os.environ.get("SOAK_HOURS", "12")), speed=72, freeze_s=30, rounds=3)


@dataclass
class Event:
    at_s: float
    fault: str
    detail: str


@dataclass
class Tally:
    events: list[Event] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)

    def add(self, started: float, fault: str, detail: str) -> None:
        self.events.append(Event(round(time.monotonic() - started, 1), fault, detail))
        self.faults[fault] += 1


class Harness:
    def __init__(self, scenario: Scenario, workdir: Path | None = None, *, citus: bool = False) -> None:
        self.scenario = scenario
        self.citus = citus
        self.faults = CITUS_FAULTS if citus else FAULTS
        self.root = workdir or Path(tempfile.mkdtemp(prefix="wattledger-faults-"))
        self.logs = self.root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        now_hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        self.window_end = now_hour - timedelta(hours=1)
        self.window_start = self.window_end - timedelta(hours=scenario.hours)
        self.pg: PostgresCluster = CitusCluster(self.logs) if citus else PostgresCluster(self.logs)
        self.redis_port, self.web_port = free_port(), free_port()
        self.redis = redis_process(self.logs, self.redis_port)
        self.env = self._server_env()
        self.web = python_process("gunicorn", self._gunicorn_args(), self.env, self.logs)
        self.worker = python_process("celery-worker", self._worker_args(), self.env, self.logs)
        self.beat = python_process("celery-beat", self._beat_args(), self.env, self.logs)
        self.proxy = FaultProxy(self.web_port, delay_s=6.0)  # past the collectors' 5 s timeout
        self.collectors: dict[str, Process] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.usage_table = ""
        self.api: dict[str, Any] = {}  # the API user's token, the scenario, the tables the faults lock
        self.tally = Tally()
        self._started = time.monotonic()

    # --- the services -----------------------------------------------------------

    def _server_env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "CELERY_", "CACHE_", "DJANGO_"))}
        return {
            **keep,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": self.pg.url(DB_NAME),
            "CELERY_BROKER_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "DEBUG": "0",
            "SECRET_KEY": "faults-harness-only-" + "k" * 48,
            "SECURE_SSL_REDIRECT": "0",
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "SECURE_HSTS_SECONDS": "0",
            "WATTLEDGER_VAR_DIR": str(self.root / "var"),
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            "WEB_THREADS": str(WEB_THREADS),
            "TASK_LEASE_S": str(TASK_LEASE_S),
        }

    def _gunicorn_args(self) -> list[str]:
        # The product's own gunicorn settings (threaded workers, WEB_THREADS); the harness sets address and sizes.
        return ["-m", "gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi",
                "--bind", f"127.0.0.1:{self.web_port}", "--workers", "2", "--threads", str(WEB_THREADS),
                "--timeout", "20", "--graceful-timeout", "5"]  # fmt: skip

    @staticmethod
    def _worker_args() -> list[str]:
        return ["-m", "celery", "-A", "config", "worker", "--pool", "threads", "--concurrency", "2",
                "--loglevel", "INFO", "--without-gossip", "--without-mingle"]  # fmt: skip

    def _beat_args(self) -> list[str]:
        return ["-m", "celery", "-A", "config", "beat", "--loglevel", "INFO",
                "--schedule", str(self.root / "celerybeat-schedule")]  # fmt: skip

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, *args], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=600, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done.stdout

    def django(self, command: str, spec: dict[str, Any] | None = None) -> Any:
        return json.loads(self.manage("-m", "tests.faults.djangoside", command, json.dumps(spec or {})))

    def start(self) -> None:
        self.pg.init()
        self.pg.start()
        self.pg.create_database(DB_NAME)
        self.redis.start()
        wait_for("Redis", lambda: port_open(self.redis_port), 30)
        self.manage("manage.py", "migrate", "--noinput")
        commissioned_at = self.window_start - timedelta(days=1)  # the backfilled past belongs to the nodes
        spec = {"nodes": [n for n, _ in NODES], "commissioned_at": commissioned_at.isoformat()}
        enrolled = self.django("setup", spec)
        self.nodes, self.usage_table = enrolled["nodes"], enrolled["usage_table"]
        window = {"start": self.window_start.isoformat(), "end": self.window_end.isoformat()}
        self.api = self.django("api", {"organization": API_ORGANIZATION, "fleet": API_FLEET, **window})
        self._start_web()
        self.worker.start()
        self.beat.start()
        self.proxy.start()
        self._started = time.monotonic()
        for i, (hostname, spec_gpus) in enumerate(NODES):
            self.collectors[hostname] = self._collector(i, hostname, spec_gpus).start()

    def _start_web(self) -> None:
        self.web.start()
        wait_for("gunicorn", lambda: port_open(self.web_port), 60)

    def _collector(self, seed: int, hostname: str, gpus: str) -> Process:
        record = self.root / "collectors" / hostname
        args = ["-m", "tests.faults.simcollector", "--record", str(record), "--speed", str(self.scenario.speed), "--",
                "--server", f"http://127.0.0.1:{self.proxy.port}", "--token", self.nodes[hostname]["token"],
                "--hostname", hostname, "--spool", str(record / "spool"), "--simulate", gpus, "--simulate-serving",
                "--simulate-resets", "0.5", "--simulate-serving-restarts", "0.75", "--seed", str(seed),
                "--start", self.window_start.isoformat(), "--end", self.window_end.isoformat(),
                "--http-timeout", "5", "--max-backoff", "3", "--shutdown-grace", "1"]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("WATTLEDGER_")}
        return python_process(f"collector-{hostname}", args, env, self.logs)

    def stop(self) -> None:
        for process in [*self.collectors.values(), self.beat, self.worker, self.web]:
            process.stop()
        self.proxy.stop()
        self.redis.stop()
        self.pg.stop()

    # --- the faults ----------------------------------------------------------------

    def run_faults(self) -> None:
        """Inject the faults one after another, evenly over the run, ``rounds`` times (then while it lasts)."""
        spacing = max(4.0, 0.8 * self.scenario.run_s / (self.scenario.rounds * len(self.faults)))
        index = 0
        while index < len(self.faults) or self.elapsed() + spacing < 0.85 * self.scenario.run_s:
            time.sleep(max(0.0, 3.0 + index * spacing - self.elapsed()))
            fault = self.faults[index % len(self.faults)]
            self.tally.add(self._started, fault, getattr(self, fault)())
            index += 1

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def _proxy(self, mode: str) -> str:
        self.proxy.inject(mode, 3)
        wait_for(f"proxy {mode}", lambda: self.proxy.planned() == 0, 60, every_s=0.2)
        return f"the next 3 requests: {mode}"

    def proxy_drop(self) -> str:
        return self._proxy("drop")

    def proxy_reset(self) -> str:
        return self._proxy("reset")

    def proxy_delay(self) -> str:
        return self._proxy("delay")

    def proxy_lose_response(self) -> str:
        return self._proxy("lose_response")

    def web_worker_kill(self) -> str:
        workers = children(self.web.pid)
        os.kill(workers[0], signal.SIGKILL)
        return f"kill -9 gunicorn worker {workers[0]} (the master starts another)"

    def web_server_kill(self) -> str:
        self.web.kill9()
        time.sleep(1.0)
        self._start_web()
        return "kill -9 gunicorn master and workers; started again after 1 s"

    def collector_kill(self) -> str:
        hostname = list(self.collectors)[self.tally.faults["collector_kill"] % len(self.collectors)]
        process = self.collectors[hostname]
        if not process.running():
            return f"collector {hostname} had already finished"
        process.kill9()
        time.sleep(1.0)
        process.start()
        return f"kill -9 collector {hostname}; started again after 1 s"

    def postgres_freeze(self) -> str:
        pids = self.pg.freeze()
        try:
            time.sleep(self.scenario.freeze_s)
        finally:
            self.pg.thaw(pids)
        return f"SIGSTOP PostgreSQL ({len(pids)} processes) for {self.scenario.freeze_s:g} s, then SIGCONT"

    def postgres_freeze_every_thread_busy(self) -> str:
        """Freeze PostgreSQL, send more authenticated requests than the web server has threads, then ask /healthz."""
        token = next(iter(self.nodes.values()))["token"]

        def held() -> None:  # authentication reads the database: each waits on the frozen server
            request = urllib.request.Request(f"http://127.0.0.1:{self.web_port}/api/v1/ingest/",
                                             headers={"Authorization": f"Bearer {token}"})  # fmt: skip
            with contextlib.suppress(OSError):
                urllib.request.urlopen(request, timeout=self.scenario.freeze_s + 30).read()

        pids = self.pg.freeze()
        try:
            senders = [run_in_thread(held) for _ in range(4 * WEB_THREADS)]
            time.sleep(1.5)
            started = time.monotonic()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/healthz", timeout=10) as answer:
                    status = answer.status
            except urllib.error.HTTPError as error:
                status = error.code
            except OSError as error:
                status = f"no answer ({type(error).__name__})"  # type: ignore[assignment]
            answered_s = time.monotonic() - started
            time.sleep(max(0.0, self.scenario.freeze_s - 1.5 - answered_s))
        finally:
            self.pg.thaw(pids)
        for sender in senders:
            sender.join(timeout=60)
        return (f"SIGSTOP PostgreSQL with {len(senders)} requests held: /healthz answered {status} "
                f"in {answered_s:.2f} s; SIGCONT")  # fmt: skip

    def postgres_kill(self) -> str:
        self.pg.crash_and_restart()
        return "kill -9 PostgreSQL (postmaster and backends); restarted (crash recovery)"

    def citus_worker_kill(self) -> str:
        """kill -9 a Citus worker (in turn) while the collectors send; started again after WORKER_DOWN_S."""
        assert isinstance(self.pg, CitusCluster)
        port = self.pg.kill_worker(WORKER_DOWN_S)
        return (f"kill -9 Citus worker :{port} (postmaster and backends) mid-ingest; started again after "
                f"{WORKER_DOWN_S:g} s (crash recovery)")  # fmt: skip

    def redis_restart(self) -> str:
        self.redis.kill9()
        self.redis.start()
        wait_for("Redis", lambda: port_open(self.redis_port), 30)
        return "kill -9 Redis (queued tasks lost); restarted"

    def celery_worker_kill_mid_rollup(self) -> str:
        """Hold the usage table so the next rollup blocks inside its transaction, then kill -9 the worker."""
        from celery import Celery

        with psycopg.connect(self.pg.url(DB_NAME).replace("postgres://", "postgresql://")) as holder:
            holder.execute(f'LOCK TABLE "{self.usage_table}" IN EXCLUSIVE MODE')
            Celery(broker=self.env["CELERY_BROKER_URL"]).send_task("telemetry.rollup_pending_task")
            mid = _wait_true(lambda: _waiting_on_lock(holder), 30)
            self.worker.kill9()
            holder.rollback()
        time.sleep(0.5)
        self.worker.start()
        where = "inside a rollup transaction (waiting on the usage table)" if mid else "NOT caught mid-rollup"
        return f"kill -9 Celery worker {where}; started again"

    def ingest_impossible_counter(self) -> str:
        """POST straight to the web server a batch of a real GPU whose energy counter rises far past the board
        limit in one second, inside the window: refused (422), nothing stored (the oracle finds no row of it)."""
        hostname = NODES[0][0]
        gpu = self.django("gpu", {"hostname": hostname})
        if not gpu:
            return f"no GPU of {hostname} stored yet: nothing sent"
        ts = self.window_start.timestamp() + 1800.5  # inside the window, between the collectors' 1 Hz samples
        payload = impossible_batch(hostname, gpu["identity"], ts)
        code, body = self._http("POST", "/api/v1/ingest/", self.nodes[hostname]["token"],
                                wire.batch_encode(payload, compress=False), wire.CONTENT_TYPE)  # fmt: skip
        message = body.get("error", body) if isinstance(body, dict) else body
        with self._db() as db:
            row = db.execute(
                f'SELECT count(*) FROM "{self.api["gpu_sample_table"]}" WHERE gpu_id = %s AND ts = ANY(%s)',
                [gpu["id"], [wire.ts_datetime(ts), wire.ts_datetime(ts + 1.0)]],
            ).fetchone()
        stored = row[0] if row else "?"
        return (f"a batch of {hostname} GPU {gpu['identity']['uuid']}, energy_j 5.39e11 then 1.9e16 J 1 s apart "
                f"at {wire.ts_datetime(ts):%H:%M:%S}: answered {code} ({str(message)[:160]}); "
                f"rows stored at those instants: {stored}")  # fmt: skip

    def celery_worker_kill_mid_upload(self) -> str:
        """Hold the node-price table so a CSV upload blocks on its first row once running, kill -9 the worker,
        start it again; once the lease lapsed the upload reads failed, and the same file, sent again at once,
        is taken and ends done with every row saved (the killed run saved none)."""
        table = self.api["price_table"]
        content = self._price_csv(self.tally.faults["celery_worker_kill_mid_upload"])
        with self._db() as holder:
            holder.execute(f'LOCK TABLE "{table}" IN EXCLUSIVE MODE')  # reads go on; the rows' INSERTs wait
            code, body = self._upload(content)
            if code != 202:
                holder.rollback()
                return f"the upload answered {code} ({body}): no worker killed"
            url = body["status_url"]
            mid = _wait_true(lambda: self._field(url, "state") == "running" and _waiting_on(holder, table), 30)
            self.worker.kill9()
            holder.rollback()
        time.sleep(0.5)
        self.worker.start()
        where = "running, its first row waiting on the node-price table" if mid else "NOT caught running"
        lapsed = self._settled(url, "state", TASK_LEASE_S + 60)
        code, body = self._upload(content)
        ended = self._settled(body["status_url"], "state", 120) if code == 202 else {"state": "-"}
        return (f"kill -9 Celery worker with upload {url.rstrip('/').rsplit('/', 1)[-1]} {where}; started again; "
                f"after the lease it read {lapsed.get('state')} ({lapsed.get('error')}); the same file sent again "
                f"answered {code} and ended {ended.get('state')} "
                f"({ended.get('result_status')}: {ended.get('result')})")  # fmt: skip

    def celery_worker_kill_mid_scenario(self) -> str:
        """Hold the ledger table so a scenario run blocks in its replay once running, kill -9 the worker, start
        it again; once the lease lapsed the scenario reads failed, and a re-run is taken at once and ends done."""
        from celery import Celery

        table, url = self.api["ledger_table"], f"/api/v1/scenarios/{self.api['scenario_id']}/"
        app = Celery(broker=self.env["CELERY_BROKER_URL"])

        sent_at = [-math.inf]

        def ledger_rows() -> bool:  # the re-run replays the organization's ledger: it needs some
            # Asked for every 10 s at most: tasks queued faster than the worker drains them (a cluster's
            # ledger is slower) would still be running behind the lock below, the scenario waiting behind them.
            if time.monotonic() - sent_at[0] >= 10:
                app.send_task("telemetry.rollup_pending_task")
                app.send_task("accounting.ledger_pending_task")
                sent_at[0] = time.monotonic()
            time.sleep(1.0)
            with self._db() as db:
                sql = f'SELECT count(*) FROM "{table}" WHERE organization_id = %s'
                row = db.execute(sql, [self.api["organization_id"]]).fetchone()
            return bool(row and row[0])

        def worker_idle() -> bool:  # no task running or reserved: the run is taken at once, not queued behind one
            inspect = app.control.inspect(timeout=1.0)
            busy = [*(inspect.active() or {}).values(), *(inspect.reserved() or {}).values()]
            return not any(busy)

        _wait_true(ledger_rows, 90)
        _wait_true(worker_idle, 60)
        with self._db() as holder:
            holder.execute(f'LOCK TABLE "{table}" IN ACCESS EXCLUSIVE MODE')  # the replay's first read waits
            code, body = self._http("POST", url + "run/", self.api["token"])
            if code != 202:
                holder.rollback()
                return f"the run answered {code} ({body}): no worker killed"
            mid = _wait_true(lambda: self._field(url, "status") == "running" and _waiting_on(holder, table), 30)
            self.worker.kill9()
            holder.rollback()
        time.sleep(0.5)
        self.worker.start()
        where = "running, its replay waiting on the ledger table" if mid else "NOT caught running"
        lapsed = self._settled(url, "status", TASK_LEASE_S + 60)
        code, _ = self._http("POST", url + "run/", self.api["token"])
        ended = self._settled(url, "status", 120) if code == 202 else {"status": "-"}
        replayed = (ended.get("progress") or {}).get("node_hours_replayed")
        return (f"kill -9 Celery worker with scenario {self.api['scenario_id']} {where}; started again; "
                f"after the lease it read {lapsed.get('status')} ({lapsed.get('error')}); the re-run answered {code} "
                f"and ended {ended.get('status')} ({replayed} node-hours replayed)")  # fmt: skip

    # --- the API, as a user or a collector would call it (straight to the web server) ------

    def _db(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.pg.url(DB_NAME).replace("postgres://", "postgresql://"))

    def _http(
        self, method: str, path: str, token: str, body: bytes | None = None, content_type: str | None = None
    ) -> tuple[int, Any]:
        """Status and JSON body; a 5xx or no answer (the server recovering from the fault before) is tried again."""
        headers = {"Authorization": f"Bearer {token}", **({"Content-Type": content_type} if content_type else {})}
        code, answer = 0, None
        for _ in range(5):
            request = urllib.request.Request(
                f"http://127.0.0.1:{self.web_port}{path}", data=body, headers=headers, method=method
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    code, raw = response.status, response.read()
            except urllib.error.HTTPError as error:
                code, raw = error.code, error.read()
            except OSError as error:
                code, raw = 0, repr(error).encode()
            try:
                answer = json.loads(raw) if raw else None
            except ValueError:
                answer = raw.decode(errors="replace")[:300]
            if 0 < code < 500:
                break
            time.sleep(1.0)
        return code, answer

    def _field(self, path: str, name: str) -> Any:
        code, body = self._http("GET", path, self.api["token"])
        return body.get(name) if code == 200 and isinstance(body, dict) else None

    def _settled(self, path: str, name: str, timeout_s: float) -> dict[str, Any]:
        """The task's status once it is neither queued nor running (reading it fails it once its lease lapsed)."""
        deadline = time.monotonic() + timeout_s
        body: Any = {}
        while time.monotonic() < deadline:
            code, body = self._http("GET", path, self.api["token"])
            if code == 200 and isinstance(body, dict) and body.get(name) not in ("queued", "running"):
                return body
            time.sleep(0.5)
        return body if isinstance(body, dict) else {name: f"unreadable: {body}"}

    def _price_csv(self, occurrence: int) -> bytes:
        """Fleet-default rents, one hour each, after the window (each occurrence its own hours): no ledger hour
        of the window is re-opened, and a file saved twice would refuse every row as overlapping."""
        first = self.window_end + HOUR * (2 + occurrence * PRICE_ROWS)
        rows = ["fleet,node,kind,rate_per_h,rate_per,valid_from,valid_to"]
        for i in range(PRICE_ROWS):
            start, end = first + HOUR * i, first + HOUR * (i + 1)
            rows.append(f"{API_FLEET},,rented,2.50,gpu,{start.isoformat()},{end.isoformat()}")
        return ("\n".join(rows) + "\n").encode()

    def _upload(self, content: bytes) -> tuple[int, Any]:
        boundary = f"faults-{uuid.uuid4().hex}"
        head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="prices.csv"\r\n'
                "Content-Type: text/csv\r\n\r\n")  # fmt: skip
        body = head.encode() + content + f"\r\n--{boundary}--\r\n".encode()
        return self._http("POST", "/api/v1/node-prices/upload/", self.api["token"], body,
                          f"multipart/form-data; boundary={boundary}")  # fmt: skip

    # --- the end of the run -----------------------------------------------------------

    def wait_collectors(self) -> dict[str, int | None]:
        deadline = time.monotonic() + self.scenario.run_s + self.scenario.settle_s
        for process in self.collectors.values():
            assert process.popen is not None
            try:
                process.popen.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.stop()
        return {name: (p.popen.returncode if p.popen else None) for name, p in self.collectors.items()}

    def settle(self) -> dict[str, int]:
        """Ask the worker for rollups and ledger runs until nothing waits (beat alone runs them every minute)."""
        from celery import Celery

        app = Celery(broker=self.env["CELERY_BROKER_URL"])
        deadline = time.monotonic() + self.scenario.settle_s
        state: dict[str, int] = {}
        quiet = 0
        while time.monotonic() < deadline and quiet < 2:
            app.send_task("telemetry.rollup_pending_task")
            app.send_task("accounting.ledger_pending_task")
            time.sleep(3)
            state = self.django("state")
            quiet = quiet + 1 if not any(state.values()) else 0
        return state


def _waiting_on_lock(holder: psycopg.Connection[Any]) -> bool:
    with psycopg.connect(holder.info.dsn, autocommit=True) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> %s",
            [holder.info.backend_pid],
        ).fetchone()
    return bool(row and row[0])


def impossible_batch(hostname: str, gpu: dict[str, Any], ts: float) -> dict[str, Any]:
    """A batch of one GPU whose energy counter reads 5.39e11 J, then 1.9e16 J a second later (the wire's largest
    value): a rise of ~1.9e16 J where the board limit allows 2,000 J."""
    return {
        "version": wire.WIRE_VERSION, "batch_id": f"faults-impossible-{uuid.uuid4().hex[:12]}", "sent_at": time.time(),
        "collector": {"version": "faults", "hostname": hostname, "dropped_batches": 0, "spool_bytes": 0,
                      "sample_interval_s": 1.0},
        "gpus": [gpu],
        "gpu_samples": {"gpu": [0, 0], "ts": [ts, ts + 1.0], "power_w": [400.0, 400.0],
                        "energy_j": [5.39e11, 1.9e16], "util_pct": [50, 50], "mem_util_pct": [10, 10],
                        "mem_used_bytes": [2**30, 2**30], "temp_c": [60, 60]},
        "endpoints": [],
    }  # fmt: skip


def _waiting_on(holder: psycopg.Connection[Any], table: str) -> bool:
    """Whether another session waits for a lock on ``table`` (which ``holder`` holds)."""
    with psycopg.connect(holder.info.dsn, autocommit=True) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_locks WHERE relation = to_regclass(%s) AND NOT granted AND pid <> %s",
            [f'"{table}"', holder.info.backend_pid],
        ).fetchone()
    return bool(row and row[0])


def _wait_true(check: Callable[[], bool], timeout_s: float) -> bool:
    try:
        wait_for("condition", check, timeout_s, every_s=0.2)
    except TimeoutError:
        return False
    return True


def clean(harness: Harness, *, keep: bool) -> None:
    harness.stop()
    if not keep:
        harness.pg.remove()
        shutil.rmtree(harness.root, ignore_errors=True)


def _signal_stop(harness: Harness) -> None:
    def handle(signum: int, _frame: Any) -> None:
        clean(harness, keep=True)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)


def run_in_thread(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread
