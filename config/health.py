"""``/healthz``: is this process able to reach its database and its broker? Answered within 2 s.

A database that hangs (a lock held on what the check reads, a server stopped or
overloaded) must read as down, not hang the check: the query runs in a thread
of its own with a short ``statement_timeout``, and the answer does not wait
for it past ``DATABASE_CHECK_S``. At most one such thread per process waits on
a hung database; later checks answer "down" straight away until it returns.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from django.conf import settings
from django.db import connection, connections, transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.celery import app as celery_app

DATABASE_CHECK_S = 1.5
_check_running = threading.Lock()


def database_state() -> str:
    if not _check_running.acquire(blocking=False):
        return "down: an earlier check is still waiting for the database"
    answer: list[str] = []
    thread = threading.Thread(target=_database_check, args=(answer,), name="healthz-database", daemon=True)
    thread.start()
    thread.join(DATABASE_CHECK_S)
    return answer[0] if answer else f"down: no answer within {DATABASE_CHECK_S} s"


def _database_check(answer: list[str]) -> None:
    """On PostgreSQL, read a table every process needs (so a lock on it shows); on this thread's own connection."""
    try:
        if connection.vendor == "postgresql":
            # In a transaction of its own, so that the short timeout is local to it (set_config(..., true)).
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(int(DATABASE_CHECK_S * 1000))])
                _migrations_read(cursor)
        else:  # SQLite: no table locks to wait on (WAL readers never wait); the file opens or not
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                cursor.fetchone()
        answer.append("up")
    except Exception as exc:  # noqa: BLE001 - any failure means "down", reported by class name
        answer.append(f"down: {type(exc).__name__}")
    finally:
        connections.close_all()  # this thread's connections only
        _check_running.release()


def broker_state() -> str:
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        folder = settings.CELERY_BROKER_FOLDER
        return "up" if os.access(folder, os.W_OK) else f"down: {folder} is not writable"
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # noqa: BLE001
        return f"down: {type(exc).__name__}"
    return "up"


def _migrations_read(cursor: Any) -> None:
    cursor.execute("SELECT 1 FROM django_migrations LIMIT 1")
    cursor.fetchone()


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {"database": database_state(), "broker": broker_state()}
    healthy = all(state == "up" for state in checks.values())
    return JsonResponse({"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503)
