"""Django's PostgreSQL backend, with the persistent connection's health check at most once a second.

Django's ``CONN_HEALTH_CHECKS`` sends ``SELECT 1`` before the first query of
every request: one extra round trip per ingest request, paid hundreds of times
a second on a busy server. Here a connection that passed its check less than
``HEALTH_CHECK_INTERVAL_S`` ago is trusted without asking again. A connection
lost inside that second (the database restarted) fails that one request, and
Django discards the connection when the request ends; the next request
reconnects. Collectors retry a failed batch, so nothing is lost. An idle
server still checks before every request, as Django does.
"""

from __future__ import annotations

import time

from django.db.backends.postgresql import base

HEALTH_CHECK_INTERVAL_S = 1.0


class DatabaseWrapper(base.DatabaseWrapper):
    health_check_enabled: bool  # Django's, set on connecting (not in the type stubs)
    health_check_done: bool
    _health_checked_at = float("-inf")

    def close_if_health_check_failed(self) -> None:
        if self.connection is None or not self.health_check_enabled or self.health_check_done:
            return
        now = time.monotonic()
        if now - self._health_checked_at < HEALTH_CHECK_INTERVAL_S:
            self.health_check_done = True
            return
        super().close_if_health_check_failed()
        if self.connection is not None:  # it passed
            self._health_checked_at = now

    def connect(self) -> None:
        super().connect()
        self._health_checked_at = time.monotonic()  # a new connection is known good
