"""What a request gets while a service it needs is down or stuck: 503 with ``Retry-After``, never a 500 or a hang.

``ServiceUnavailable``: a database or broker that cannot be reached, a statement
cancelled by the database's timeout, SQLite's "database is locked" after its
busy timeout — the request is answered 503 with ``Retry-After`` and one log
line (no traceback): nothing is wrong with the request, so the client (the
collector backs off on 503) sends it again later, and nothing was written
(each view's writes are one transaction).

``HealthReserved``: each web process answers at most ``WEB_THREADS - 1``
requests at once, so one thread is always free for ``/healthz``; a stuck
database that holds every other thread cannot starve the check, which answers
503 within 2 s (``config.health``). A request that finds no free thread for
``WEB_BUSY_WAIT_S`` (default 0: at once, so that the waiting itself holds no
thread the check needs) answers 503 with ``Retry-After`` instead of queueing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.signals import request_finished
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)
RETRY_AFTER_S = 5
# Set on a request answered 503 here, whose one log line is already written (``AnsweredUnavailable``).
_LOGGED = "wattledger_unavailable_logged"


def _unavailable(request: HttpRequest, detail: str) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=503)
    response["Retry-After"] = str(RETRY_AFTER_S)
    setattr(request, _LOGGED, True)
    return response


class AnsweredUnavailable(logging.Filter):
    """Drops ``django.request``'s "Service Unavailable" record of a 503 answered here: its one line (what was
    unavailable, why) is written already, and a database busy under load is back-pressure, not an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return not (getattr(record, "status_code", None) == 503 and getattr(request, _LOGGED, False))


def _service_down(exception: BaseException) -> str | None:
    """What is down, if ``exception`` says a service is unreachable or stuck (not that the request is wrong)."""
    if isinstance(exception, OperationalError | InterfaceError):
        # SQLite's "database is locked" / "database is busy": another write held it past the busy timeout.
        busy = isinstance(exception, OperationalError) and any(w in str(exception) for w in ("locked", "busy"))
        return "the database (busy with other writes)" if busy else "the database"
    try:
        from kombu.exceptions import OperationalError as BrokerError
    except ImportError:  # pragma: no cover - kombu comes with Celery
        return None
    if isinstance(exception, BrokerError):
        return "the task broker"
    try:
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError
    except ImportError:  # Redis is optional (the embedded default uses none)
        return None
    if isinstance(exception, RedisConnectionError | RedisTimeoutError):
        return "the cache or task broker"
    return None


class ServiceUnavailable:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        down = _service_down(exception)
        if down is None:
            return None
        logger.warning("503 for %s %s: %s unavailable (%s: %s)", request.method, request.path, down,
                       type(exception).__name__, str(exception).splitlines()[0] if str(exception) else "")  # fmt: skip
        detail = f"{down} is unavailable for the moment; nothing was changed: retry after {RETRY_AFTER_S} s"
        return _unavailable(request, detail)


class HealthReserved:
    """Leaves one of the process's threads to ``/healthz`` (see the module's docstring).

    A permit is held from the request's start until Django's ``request_finished``, which the WSGI
    server's ``close()`` of the response sends on the request's thread: a streamed CSV keeps its
    thread busy while it is sent, and holds its permit as long.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.permits = threading.BoundedSemaphore(max(1, settings.WEB_THREADS - 1))
        self.held = threading.local()
        request_finished.connect(self._release, weak=False, dispatch_uid=f"health-reserved-{id(self)}")

    def __call__(self, request: HttpRequest) -> Any:
        if request.path == "/healthz":
            return self.get_response(request)
        if not self.permits.acquire(timeout=settings.WEB_BUSY_WAIT_S):  # 0: at once
            logger.warning("503 for %s %s: every request thread of this process is busy", request.method, request.path)
            return _unavailable(request, f"the server is busy; retry after {RETRY_AFTER_S} s")
        self.held.permit = True
        try:
            return self.get_response(request)
        except BaseException:
            self._release()
            raise

    def _release(self, **_: Any) -> None:
        if getattr(self.held, "permit", False):
            self.held.permit = False
            self.permits.release()
