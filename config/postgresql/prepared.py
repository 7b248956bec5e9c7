"""Statements run on every ingest request: prepared, and sent through libpq with no cursor.

Django's PostgreSQL cursors bind parameters on the client, so the server
parses and plans each statement every time it runs; and psycopg's cursors, for
all their generality, cost more Python per statement than the few statements of
the ingest hot path (the token lookup, the GPU lookup, the collector status, the
rollup mark, the COPY) cost the database. Here they go straight to the libpq
connection under Django's own (same connection, same transaction, Django's
health check and thread check first): parameters dumped and rows loaded by
psycopg's C adapters, statements prepared once per connection, several sent in
one round trip (libpq's pipeline mode), a COPY written in one piece.

Parameters must be typed where PostgreSQL cannot infer them
(``%s::timestamptz IS NULL``). Django turns prepared statements off unless
``prepare_threshold`` is in the database options: ``config.env`` sets it, and
``?prepare_threshold=none`` in ``DATABASE_URL`` (for a transaction-pooling
PgBouncer) makes these statements unnamed, parsed each time. On SQLite they run
on Django's cursor.

Waiting is a ``poll()`` on the connection's socket, which releases the GIL, so
threaded servers keep serving while one thread waits for the database.
"""

from __future__ import annotations

import functools
import itertools
import re
import select
import weakref
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer

Statement: TypeAlias = tuple[str, Sequence[Any]]
# What a pipelined result is: a statement's (None), a BEGIN's (False), a PREPARE's (its key and name).
_Expected: TypeAlias = "Literal[False] | tuple[tuple[str, tuple[int, ...]], bytes] | None"

_OK = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)
_IDLE = pq.TransactionStatus.IDLE
_UNKNOWN_STATEMENT = b"26000"  # invalid_sql_statement_name: no prepared statement of that name
# Statement names this module prepared, per connection (a new connection starts empty).
_names: weakref.WeakKeyDictionary[psycopg.Connection[Any], dict[tuple[str, tuple[int, ...]], bytes]]
_names = weakref.WeakKeyDictionary()
_name_numbers = itertools.count()  # never reused: a name the server may still hold is not taken again
# Statements prepared per connection at most: the hot path's are few, but lookups have a placeholder per
# GPU or endpoint named, so an unusual batch makes a new statement; past this many they are not prepared.
PREPARED_MAX = 100


def fetch_all(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The rows of ``sql``."""
    return run_together([(sql, params)])[0]


def execute(sql: str, params: Sequence[Any]) -> int:
    """Run ``sql``; the number of rows it changed."""
    db = _database()
    if db.vendor != "postgresql":
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.rowcount
    return _Pipeline(db, _connection(db)).run([(sql, params)])[0][1]


def run_together(statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
    """Run ``statements`` in order in one round trip; the rows each returned (``[]`` for none).

    For statements that need nothing from one another's results. If one fails,
    those after it do not run and its error is raised (as Django raises it).
    On SQLite they run one after the other.
    """
    db = _database()
    if db.vendor != "postgresql":
        with db.cursor() as cursor:
            answers = []
            for sql, params in statements:
                cursor.execute(sql, params)
                answers.append(cursor.fetchall() if cursor.description else [])
            return answers
    return [rows for rows, _ in _Pipeline(db, _connection(db)).run(statements)]


def copy_in(sql: str, payload: bytes, *, last_in_transaction: bool = False) -> int:
    """Run ``sql`` (a ``COPY ... FROM STDIN``) with ``payload`` as all its data; the rows it stored.

    A refused COPY raises psycopg's own error (``UniqueViolation`` for a row already
    stored), and the transaction is left to be rolled back, as with a cursor.

    ``last_in_transaction``: the caller runs nothing else before its outermost
    ``transaction.atomic()`` block ends, so the COMMIT goes with the COPY, in the
    same round trip (``COPY ...; COMMIT`` in one query: a refused COPY skips the
    COMMIT). Django's own commit at the end of the block then finds nothing to
    do. Inside a nested block (a savepoint, or an outer block such as a test's)
    the COMMIT is left to Django, as usual.
    """
    db = _database()
    raw = _connection(db)
    pgconn = raw.pgconn
    command = sql.encode()
    if _transaction_to_begin(raw):
        command = _begin(raw) + b"; " + command
    if last_in_transaction and _outermost_block(db):
        command += b"; COMMIT"
    with db.wrap_database_errors:
        pgconn.send_query(command)
        _flush(pgconn)
        result = _next_result(pgconn)
        while result is not None and result.status == pq.ExecStatus.COMMAND_OK:  # the BEGIN
            result = _next_result(pgconn)
        if result is None or result.status != pq.ExecStatus.COPY_IN:
            _drain(pgconn)
            raise _error(raw, result)
        while pgconn.put_copy_data(payload) == 0:  # libpq's buffer is full: send some, then again
            _wait(pgconn, select.POLLOUT)
            pgconn.flush()
        while pgconn.put_copy_end() == 0:
            _wait(pgconn, select.POLLOUT)
            pgconn.flush()
        _flush(pgconn)
        result = _next_result(pgconn)
        after = _next_result(pgconn)  # the COMMIT's, if there is one
        _drain(pgconn)
        for each in (result, after):
            if each is not None and each.status != pq.ExecStatus.COMMAND_OK:
                raise _error(raw, each)
        if result is None:
            raise _error(raw, result)
        return result.command_tuples or 0


# --- the connection ------------------------------------------------------------------------------


def _database() -> BaseDatabaseWrapper:
    """Django's default connection (``django.db.connection`` looks it up again at each attribute)."""
    return connections[DEFAULT_DB_ALIAS]


def _connection(db: BaseDatabaseWrapper) -> psycopg.Connection[Any]:
    """The psycopg connection of ``db``, after the checks Django makes before opening a cursor."""
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    return db.connection


def _transaction_to_begin(raw: psycopg.Connection[Any]) -> bool:
    """Inside ``transaction.atomic()`` with no statement run yet: the first one opens the transaction."""
    return not raw.autocommit and raw.pgconn.transaction_status == _IDLE


def _outermost_block(db: BaseDatabaseWrapper) -> bool:
    """Inside exactly one ``transaction.atomic()`` block, which commits on exit and has nothing to undo."""
    return (
        db.in_atomic_block
        and len(db.atomic_blocks) == 1
        and not db.savepoint_ids
        and db.commit_on_exit
        and not db.needs_rollback
    )


def _begin(raw: psycopg.Connection[Any]) -> bytes:
    """The ``BEGIN`` psycopg would send, with the connection's isolation level and access mode."""
    parts = [b"BEGIN"]
    if raw.isolation_level is not None:
        parts.append(b"ISOLATION LEVEL " + raw.isolation_level.name.replace("_", " ").encode())
    if raw.read_only is not None:
        parts.append(b"READ ONLY" if raw.read_only else b"READ WRITE")
    if raw.deferrable is not None:
        parts.append(b"DEFERRABLE" if raw.deferrable else b"NOT DEFERRABLE")
    return b" ".join(parts)


class _Pipeline:
    """Statements sent together in libpq's pipeline mode, their results read back in order."""

    def __init__(self, db: BaseDatabaseWrapper, raw: psycopg.Connection[Any]) -> None:
        self.db = db
        self.raw = raw
        self.pgconn = raw.pgconn
        self.transformer = Transformer.from_context(raw)

    def run(self, statements: Sequence[Statement]) -> list[tuple[list[tuple[Any, ...]], int]]:
        """Each statement's rows and its count of rows changed."""
        pgconn = self.pgconn
        with self.db.wrap_database_errors:
            pgconn.enter_pipeline_mode()
            try:
                expected = self._send(statements)
                pgconn.pipeline_sync()
                _flush(pgconn)
                return self._receive(expected)
            finally:
                try:
                    pgconn.exit_pipeline_mode()
                except psycopg.Error:  # results left unread (the link failed): not a connection to reuse
                    self.db.errors_occurred = True  # Django checks it at the end of the request

    def _send(self, statements: Sequence[Statement]) -> list[_Expected]:
        """Queue the statements; what each result to come is: a statement's (``None``), a BEGIN's
        (``False``), or a PREPARE's (its key and name, kept once the server has prepared it)."""
        pgconn, transformer = self.pgconn, self.transformer
        expected: list[_Expected] = []
        if _transaction_to_begin(self.raw):
            pgconn.send_query_params(_begin(self.raw), None)
            expected.append(False)
        names = None if self.raw.prepare_threshold is None else _names.setdefault(self.raw, {})
        preparing: dict[tuple[str, tuple[int, ...]], bytes] = {}  # in this pipeline
        for sql, params in statements:
            query = _numbered(sql)
            values = transformer.dump_sequence(params, [PyFormat.AUTO] * len(params))
            types, formats = transformer.types or (), transformer.formats
            key = (sql, types)
            name = None if names is None else names.get(key) or preparing.get(key)
            if name is None and names is not None and len(names) + len(preparing) < PREPARED_MAX:
                name = preparing[key] = b"wattledger_%d" % next(_name_numbers)
                pgconn.send_prepare(name, query, param_types=types)
                expected.append((key, name))
            if name is None:  # prepared statements off, or an unusual statement past the limit: parsed each time
                pgconn.send_query_params(query, values, param_types=types, param_formats=formats)
            else:
                pgconn.send_query_prepared(name, values, param_formats=formats)
            expected.append(None)
        return expected

    def _receive(self, expected: list[_Expected]) -> list[tuple[list[tuple[Any, ...]], int]]:
        pgconn, transformer = self.pgconn, self.transformer
        answers: list[tuple[list[tuple[Any, ...]], int]] = []
        failure = None
        for what in expected:
            result = _next_result(pgconn)
            if _next_result(pgconn) is not None:  # each command's results end with a None
                raise errors.InternalError("a pipelined statement returned more than one result")
            if result is None or result.status not in _OK:
                if failure is None and result is not None and result.status == pq.ExecStatus.FATAL_ERROR:
                    failure = result
                continue  # a PREPARE skipped after a failure is not kept: the next pipeline sends it again
            if what is None:
                transformer.set_pgresult(result)
                answers.append((transformer.load_rows(0, result.ntuples, tuple), result.command_tuples or 0))
            elif what:
                key, name = what
                _names.setdefault(self.raw, {})[key] = name
        sync = _next_result(pgconn)
        if sync is None or sync.status != pq.ExecStatus.PIPELINE_SYNC:
            raise errors.InternalError("the pipeline ended without its sync")
        if failure is not None:
            if failure.error_field(pq.DiagnosticField.SQLSTATE) == _UNKNOWN_STATEMENT:
                _names.pop(self.raw, None)  # the server forgot them (DISCARD ALL): prepare again next time
            raise _error(self.raw, failure)
        return answers


@functools.lru_cache(maxsize=256)
def _numbered(sql: str) -> bytes:
    """``%s`` placeholders as ``$1``, ``$2``, ... and ``%%`` as ``%``, as psycopg reads a query."""
    numbers = itertools.count(1)
    return _PLACEHOLDER.sub(lambda found: "%" if found[0] == "%%" else f"${next(numbers)}", sql).encode()


_PLACEHOLDER = re.compile(r"%%|%s")


# --- libpq, non-blocking --------------------------------------------------------------------------


def _wait(pgconn: pq.abc.PGconn, events: int) -> None:
    poller = select.poll()
    poller.register(pgconn.socket, events)
    poller.poll()


def _flush(pgconn: pq.abc.PGconn) -> None:
    while pgconn.flush() == 1:
        _wait(pgconn, select.POLLOUT | select.POLLIN)
        pgconn.consume_input()


def _next_result(pgconn: pq.abc.PGconn) -> pq.abc.PGresult | None:
    pgconn.consume_input()
    while pgconn.is_busy():
        _wait(pgconn, select.POLLIN)
        pgconn.consume_input()
    return pgconn.get_result()


def _drain(pgconn: pq.abc.PGconn) -> None:
    while _next_result(pgconn) is not None:
        pass


def _error(raw: psycopg.Connection[Any], result: pq.abc.PGresult | None) -> Exception:
    if result is None or result.status != pq.ExecStatus.FATAL_ERROR:
        if raw.pgconn.status == pq.ConnStatus.BAD:
            return errors.OperationalError(raw.pgconn.get_error_message(raw.info.encoding) or "connection lost")
        return errors.InternalError(f"unexpected result: {None if result is None else result.status!r}")
    return errors.error_from_result(result, encoding=raw.info.encoding)
