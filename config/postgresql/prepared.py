"""Statements run on every ingest request, as prepared statements on PostgreSQL.

Django's PostgreSQL cursors bind parameters on the client, so the server
parses and plans each statement every time it runs. For the few statements of
the ingest hot path (the token lookup, the GPU lookup, the collector status)
that is a large share of the database's work per request. Here they run on a
server-binding psycopg cursor of Django's own connection (same transaction,
same checks: Django's cursor is opened first) with ``prepare=True``: parsed and
planned once per connection. Parameters must be typed where PostgreSQL cannot
infer them (``%s::timestamptz IS NULL``). On SQLite they run on Django's cursor.
Django turns psycopg's prepared statements off unless ``prepare_threshold`` is in
the database options: ``config.env`` sets it (``?prepare_threshold=none`` in
``DATABASE_URL`` turns them off, and these statements run unprepared).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, TypeAlias

import psycopg
from django.db import connection

Statement: TypeAlias = tuple[str, Sequence[Any]]


def fetch_all(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows of ``sql``."""
    with _executed(sql, params) as cursor:
        return cursor.fetchall()


def execute(sql: str, params: Sequence[Any]) -> int:
    """Run ``sql``; the number of rows it changed."""
    with _executed(sql, params) as cursor:
        return cursor.rowcount


@contextlib.contextmanager
def _executed(sql: str, params: Sequence[Any]) -> Iterator[Any]:
    """A cursor that has run ``sql``: prepared on PostgreSQL, Django's own elsewhere."""
    with connection.cursor() as cursor:  # health check, connection, thread and transaction checks
        if connection.vendor != "postgresql":
            cursor.execute(sql, params)
            yield cursor
            return
        with connection.wrap_database_errors, psycopg.Cursor(cursor.cursor.connection) as prepared:
            prepared.execute(sql, params, prepare=True)
            yield prepared


def run_together(statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
    """Run ``statements`` in order in one round trip (a psycopg pipeline); the rows each returned.

    For statements that need nothing from one another's results. A statement
    that returns no rows gives ``[]``. On SQLite they run one after the other.
    """
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            answers = []
            for sql, params in statements:
                cursor.execute(sql, params)
                answers.append(cursor.fetchall() if cursor.description else [])
            return answers
        raw = cursor.cursor.connection
        with connection.wrap_database_errors:
            cursors = [psycopg.Cursor(raw) for _ in statements]
            try:
                with raw.pipeline():
                    for each, (sql, params) in zip(cursors, statements, strict=True):
                        each.execute(sql, params, prepare=True)
                return [each.fetchall() if each.description else [] for each in cursors]
            finally:
                for each in cursors:
                    each.close()
