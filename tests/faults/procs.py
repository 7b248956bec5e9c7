"""The real services of the fault harness, each on 127.0.0.1 and a free port, each killable and restartable.

PostgreSQL is a cluster of its own (``initdb`` in a temporary folder, run as the
``postgres`` user when the harness runs as root: ``initdb`` refuses root), Redis
a ``redis-server`` of its own, then gunicorn, a Celery worker and Celery beat on
them. Nothing here knows the product's internals: they are started as an
operator would, with environment variables.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.helpers.processes import alive, children, signal_all, wait_for

REPO = Path(__file__).resolve().parents[2]
PG_USER = "postgres"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def pg_bin_dir() -> Path | None:
    """PostgreSQL's server binaries: $PG_BIN, else the newest /usr/lib/postgresql/*/bin, else the PATH."""
    candidates = [os.environ.get("PG_BIN", "")]
    candidates += [str(p) for p in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)]
    if (on_path := shutil.which("initdb")) is not None:
        candidates.append(str(Path(on_path).parent))
    return next((Path(c) for c in candidates if c and (Path(c) / "initdb").exists()), None)


def citus_missing(bin_dir: Path) -> str | None:
    """Why the harness's Citus mode cannot run with the server of ``bin_dir``, or ``None`` when it can."""
    pg_config = bin_dir / "pg_config"
    command = [str(pg_config) if pg_config.exists() else "pg_config", "--pkglibdir"]
    try:
        pkglibdir = subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pkglibdir = ""
    if not pkglibdir or not (Path(pkglibdir) / "citus.so").exists():
        return "the citus extension is not installed (sudo ../shared/bin/citus-install; docs/scaling.md, Citus)"
    return None


def missing_tools(*, citus: bool = False) -> str | None:
    """Why the harness cannot run here (in its Citus mode with ``citus``), or ``None`` when it can."""
    if pg_bin_dir() is None:
        return "PostgreSQL server binaries not found (set PG_BIN, or install postgresql: apt-get install postgresql)"
    if shutil.which("redis-server") is None:
        return "redis-server not found (apt-get install redis-server)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(PG_USER)
        except KeyError:
            return f"running as root and there is no {PG_USER!r} user to run initdb as"
    if citus:
        return citus_missing(pg_bin_dir() or Path("/nonexistent"))
    return None


@dataclass
class Process:
    """One long-running command, its log, and how to stop it."""

    name: str
    command: list[str]
    env: dict[str, str]
    log_dir: Path
    user: str | None = None
    popen: subprocess.Popen[bytes] | None = None
    starts: int = 0
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def start(self) -> Process:
        self.starts += 1
        self._log = open(self.log_dir / f"{self.name}.log", "ab")  # noqa: SIM115 - kept open for the process's life
        self._log.write(f"\n--- start {self.starts} at {time.time():.3f}: {' '.join(self.command)}\n".encode())
        self._log.flush()
        kwargs: dict[str, Any] = {"user": self.user} if self.user else {}
        self.popen = subprocess.Popen(
            self.command, env=self.env, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT, **kwargs
        )
        return self

    def kill9(self, *, with_children: bool = True) -> None:
        """SIGKILL, as a crash would: the process (and its children), no clean-up."""
        if self.popen is None:
            return
        pids = [self.pid, *children(self.pid)] if with_children else [self.pid]
        signal_all(pids, signal.SIGKILL)
        self.popen.wait(timeout=30)
        wait_for(f"{self.name} children exit", lambda: not any(alive(p) for p in pids), 30)

    def stop(self, timeout_s: float = 15) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.terminate()
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill9()

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None


class PostgresCluster:
    """A throwaway PostgreSQL cluster in ``root``, listening on 127.0.0.1 only."""

    settings: tuple[str, ...] = ("listen_addresses=127.0.0.1", "max_connections=60", "shared_buffers=64MB")

    def __init__(self, log_dir: Path) -> None:
        self.bin = pg_bin_dir() or Path("/nonexistent")
        # A folder of its own under /tmp: the postgres user must reach it, and not the harness's (0700) folders.
        self.root = Path(tempfile.mkdtemp(prefix="wattledger-faults-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.user = PG_USER if os.geteuid() == 0 else None
        self.process = self._server("postgresql", self.data, self.port, log_dir)

    def _server(self, name: str, data: Path, port: int, log_dir: Path) -> Process:
        command = [str(self.bin / "postgres"), "-D", str(data), "-p", str(port), "-k", str(self.root)]
        for setting in self.settings:
            command += ["-c", setting]
        return Process(name, command, dict(os.environ), log_dir, user=self.user)

    def url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def init(self) -> None:
        if self.user:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._initdb(self.data)

    def _initdb(self, data: Path) -> None:
        command = [str(self.bin / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"]
        kwargs: dict[str, Any] = {"user": self.user} if self.user else {}
        subprocess.run([*command, "-E", "UTF8", "--locale", "C"], check=True, capture_output=True, **kwargs)

    def start(self) -> None:
        self.process.start()
        wait_for("PostgreSQL", self.ready, 60, every_s=0.2)

    def ready(self, port: int | None = None) -> bool:
        command = [str(self.bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(port or self.port), "-q"]
        return subprocess.run(command, check=False).returncode == 0

    def psql(self, port: int, database: str, sql: str) -> str:
        command = [str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", database]
        done = subprocess.run([*command, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], check=True, capture_output=True)
        return done.stdout.decode()

    def server_pids(self) -> list[int]:
        return [self.process.pid, *children(self.process.pid)]

    def create_database(self, name: str) -> None:
        self.psql(self.port, "postgres", f'CREATE DATABASE "{name}"')

    def freeze(self) -> list[int]:
        """SIGSTOP the postmaster and every backend: PostgreSQL hangs (it does not die)."""
        pids = self.server_pids()
        signal_all(pids, signal.SIGSTOP)
        return pids

    @staticmethod
    def thaw(pids: list[int]) -> None:
        signal_all(pids, signal.SIGCONT)

    def crash_and_restart(self) -> None:
        """kill -9 the postmaster and all backends, then start again (crash recovery from the WAL)."""
        self.process.kill9()
        self.start()

    def stop(self) -> None:
        self.process.stop()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class CitusCluster(PostgresCluster):
    """A throwaway Citus cluster: the coordinator (``process``, ``port``, what ``url`` names; the faults that
    freeze or kill "PostgreSQL" hit it) and two workers, each a PostgreSQL with the ``citus`` extension, as
    ``bin/test-citus`` starts them. :meth:`kill_worker` is the fault only a cluster has."""

    settings = (*PostgresCluster.settings, "shared_preload_libraries=citus", "max_prepared_transactions=100",
                "citus.node_conninfo=sslmode=disable", "citus.enable_create_database_propagation=off")  # fmt: skip

    def __init__(self, log_dir: Path) -> None:
        super().__init__(log_dir)
        self.worker_ports = [free_port(), free_port()]
        self.workers = [
            self._server(f"citus-worker{i + 1}", self.root / f"worker{i + 1}", port, log_dir)
            for i, port in enumerate(self.worker_ports)
        ]
        self.kills = 0

    def init(self) -> None:
        super().init()
        for i in range(len(self.workers)):
            self._initdb(self.root / f"worker{i + 1}")

    def start(self) -> None:
        for worker, port in zip(self.workers, self.worker_ports, strict=True):
            if not worker.running():
                worker.start()
                wait_for(f"Citus worker :{port}", lambda port=port: self.ready(port), 60, every_s=0.2)
        super().start()

    def create_database(self, name: str) -> None:
        """The database on every server (Citus keeps its nodes per database), the coordinator told its workers."""
        for port in (self.port, *self.worker_ports):
            self.psql(port, "postgres", f'CREATE DATABASE "{name}"')
            self.psql(port, name, "CREATE EXTENSION citus")
        nodes = [f"SELECT citus_set_coordinator_host('127.0.0.1', {self.port})"]
        nodes += [f"SELECT citus_add_node('127.0.0.1', {port})" for port in self.worker_ports]
        self.psql(self.port, name, "; ".join(nodes))

    def kill_worker(self, down_s: float) -> int:
        """kill -9 one worker (postmaster and backends; each in turn), start it again after ``down_s``."""
        index = self.kills % len(self.workers)
        self.kills += 1
        worker, port = self.workers[index], self.worker_ports[index]
        worker.kill9()
        time.sleep(down_s)
        worker.start()
        wait_for(f"Citus worker :{port}", lambda: self.ready(port), 60, every_s=0.2)
        return port

    def prepared_transactions(self, name: str) -> dict[int, int]:
        """After Citus's recovery on the coordinator: each worker's prepared transactions left."""
        self.psql(self.port, name, "SELECT recover_prepared_transactions()")
        count = "SELECT count(*) FROM pg_prepared_xacts"
        return {port: int(self.psql(port, name, count)) for port in self.worker_ports}

    def stop(self) -> None:
        super().stop()
        for worker in self.workers:
            worker.stop()


def python_process(name: str, args: list[str], env: dict[str, str], log_dir: Path) -> Process:
    return Process(name, [sys.executable, *args], env, log_dir)


def redis_process(log_dir: Path, port: int) -> Process:
    command = ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    return Process("redis", command, dict(os.environ), log_dir)
