"""``/healthz``: is this process able to reach its database and its broker?"""

from __future__ import annotations

import os

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.celery import app as celery_app


def database_state() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure means "down", reported by class name
        return f"down: {type(exc).__name__}"
    return "up"


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


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {"database": database_state(), "broker": broker_state()}
    healthy = all(state == "up" for state in checks.values())
    return JsonResponse({"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503)
