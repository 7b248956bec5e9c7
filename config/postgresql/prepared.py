"""Statements run on every ingest request, as prepared statements on PostgreSQL.

Django's PostgreSQL cursors bind parameters on the client, so the server
parses and plans each statement every time it runs. For the few statements of
the ingest hot path (the token lookup, the GPU lookup, the collector status)
that is a large share of the database's work per request. Here they run on a
server-binding psycopg cursor of Django's own connection (same transaction,
same checks: Django's cursor is opened first) with ``prepare=True``: parsed and
planned once per connection. Parameters must be typed where PostgreSQL cannot
infer them (``%s::timestamptz IS NULL``). On SQLite they run on Django's cursor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from django.db import connection


def fetch_all(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows of ``sql``."""
    with connection.cursor() as cursor:  # health check, connection, thread and transaction checks
        if connection.vendor != "postgresql":
            cursor.execute(sql, params)
            return cursor.fetchall()
        with connection.wrap_database_errors, psycopg.Cursor(cursor.cursor.connection) as prepared:
            prepared.execute(sql, params, prepare=True)
            return prepared.fetchall()


def execute(sql: str, params: Sequence[Any]) -> int:
    """Run ``sql``; the number of rows it changed."""
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(sql, params)
            return cursor.rowcount
        with connection.wrap_database_errors, psycopg.Cursor(cursor.cursor.connection) as prepared:
            prepared.execute(sql, params, prepare=True)
            return prepared.rowcount
