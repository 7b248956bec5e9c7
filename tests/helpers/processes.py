"""The environment of the server and worker processes that tests start on the test database."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository, where the processes run


def database_url_for_subprocesses() -> str:
    """A DATABASE_URL naming the test database, for processes started by the tests."""
    from django.db import connection

    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"


def subprocess_env() -> dict[str, str]:
    """The environment for a server or worker process that the tests start on the test database."""
    database_url = database_url_for_subprocesses()
    return {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "config.settings_test"}


# Processes the tests start and stop (the fault harness, the Citus cluster tests): from /proc, no psutil.


def wait_for(what: str, check: Callable[[], bool], timeout_s: float, every_s: float = 0.1) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(every_s)
    raise TimeoutError(f"{what}: not ready after {timeout_s:g} s")


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc; no psutil needed)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
