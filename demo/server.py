"""A temporary web server for the demo backfill: gunicorn on 127.0.0.1, a free port, the configured database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import connection

# Two cores serve 8 collectors best with a few workers; SQLite serializes the writes anyway.
WORKERS = 3
START_TIMEOUT_S = 60.0


class ServerError(RuntimeError):
    pass


def database_url(settings_dict: dict[str, Any]) -> str:
    """A ``DATABASE_URL`` naming the database this process uses (the test database, under pytest)."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(settings_dict['NAME']).resolve()}"
    user = quote(settings_dict.get("USER") or "", safe="")
    password = settings_dict.get("PASSWORD") or ""
    auth = user + (f":{quote(password, safe='')}" if password else "")
    host, port = settings_dict.get("HOST") or "localhost", settings_dict.get("PORT") or 5432
    options = "&".join(f"{key}={quote(str(value))}" for key, value in (settings_dict.get("OPTIONS") or {}).items())
    name = quote(settings_dict["NAME"], safe="")
    return f"postgres://{auth}@{host}:{port}/{name}" + (f"?{options}" if options else "")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answering(url: str) -> bool:
    """Whether the server answers at all: a 503 (the broker is down) still serves ingest."""
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=5):  # noqa: S310 - our own loopback server
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@contextmanager
def temporary_server(*, log_path: Path) -> Iterator[str]:
    """Run gunicorn on this process's database until the block ends; yields its base URL.

    It serves 127.0.0.1 only, over plain HTTP, so the HTTPS redirect and the host
    list of a production configuration are turned off for it alone.
    """
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
    }
    command = [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", str(WORKERS), "--timeout", "120"]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=log)  # noqa: S603
    try:
        _wait_healthy(process, url, log_path)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _answering(url):
        if process.poll() is not None:
            raise ServerError(f"the temporary server exited with status {process.returncode}; see {log_path}")
        if time.monotonic() > deadline:
            raise ServerError(f"the temporary server did not answer /healthz within {START_TIMEOUT_S:.0f} s")
        time.sleep(0.2)
