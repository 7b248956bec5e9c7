"""The PostgreSQL backend's health check: at most once a second per connection, and still effective."""

from __future__ import annotations

import pytest
from django.db import connection, connections

from config.postgresql import base as backend

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL backend only"),
]


@pytest.fixture
def fresh():
    """A connection of its own, so the test's transaction is not the one checked or killed."""
    conn = backend.DatabaseWrapper({**connections["default"].settings_dict, "CONN_HEALTH_CHECKS": True}, "default")
    conn.ensure_connection()
    yield conn
    conn.close()


def check(conn) -> None:
    conn.health_check_done = False  # what Django does at the start of each request
    conn.close_if_health_check_failed()


def test_a_connection_checked_under_a_second_ago_is_not_asked_again(fresh, monkeypatch):
    calls = []
    monkeypatch.setattr(backend.DatabaseWrapper, "is_usable", lambda self: calls.append(self) or True)
    clock = [1000.0]
    monkeypatch.setattr(backend.time, "monotonic", lambda: clock[0])
    fresh._health_checked_at = clock[0]

    check(fresh)
    clock[0] += 0.5
    check(fresh)
    assert calls == []

    clock[0] += 0.6  # 1.1 s after the last check
    check(fresh)
    assert len(calls) == 1
    check(fresh)  # and that check counts from now
    assert len(calls) == 1


def test_a_dead_connection_is_replaced_when_its_check_is_due(fresh):
    pid = fresh.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    fresh._health_checked_at = float("-inf")

    check(fresh)

    assert fresh.connection is None
    with fresh.cursor() as cursor:  # reconnects
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid
