"""The ingest hot path's statements: prepared once per connection, pipelined, in Django's transaction."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from psycopg import pq

from config.postgresql import prepared

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="libpq's pipeline and COPY: PostgreSQL only"),
]

TABLE = "test_prepared_rows"


@pytest.fixture
def table():
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {TABLE} (id integer PRIMARY KEY, label text, at timestamptz)")
    yield TABLE
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")


def our_statements() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE 'wattledger_%%'")
        return {row[0] for row in cursor.fetchall()}


def count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
        return cursor.fetchone()[0]


def test_statements_run_together_and_each_gives_its_rows(table):
    answers = prepared.run_together(
        [
            (f"INSERT INTO {table} (id, label) VALUES (%s, %s), (%s, %s)", [1, "one", 2, "two"]),
            (f"SELECT id, label FROM {table} WHERE id >= %s ORDER BY id", [1]),
            ("SELECT %s::timestamptz IS NULL", [None]),
        ]
    )

    assert answers == [[], [(1, "one"), (2, "two")], [(True,)]]
    assert prepared.execute(f"UPDATE {table} SET label = %s WHERE id = %s", ["uno", 1]) == 1
    assert prepared.fetch_all(f"SELECT label FROM {table} WHERE id = %s", [1]) == [("uno",)]


def test_a_statement_is_prepared_once_per_connection(table):
    sql = f"SELECT count(*) FROM {table} WHERE id > %s"
    before = our_statements()
    prepared.fetch_all(sql, [0])
    after_first = our_statements()
    for n in range(5):
        prepared.fetch_all(sql, [n])

    assert len(after_first - before) == 1
    assert our_statements() == after_first

    connection.close()  # a new connection prepares again, under a name it has not used
    prepared.fetch_all(sql, [0])
    assert len(our_statements()) == 1


def test_with_prepare_threshold_none_nothing_is_prepared(table, monkeypatch):
    connection.ensure_connection()
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    before = our_statements()

    assert prepared.fetch_all(f"SELECT count(*) FROM {table} WHERE id > %s", [0]) == [(0,)]
    assert our_statements() == before


def test_inside_atomic_they_join_the_transaction(table):
    with pytest.raises(RuntimeError), transaction.atomic():
        prepared.run_together([(f"INSERT INTO {table} (id) VALUES (%s)", [1])])
        prepared.copy_in(f"COPY {table} (id, label) FROM STDIN", b"2\ttwo\n3\tthree\n")
        assert count(table) == 3
        raise RuntimeError("roll back")

    assert count(table) == 0


def test_a_failing_statement_stops_those_after_it_and_is_raised_as_django_raises_it(table):
    prepared.execute(f"INSERT INTO {table} (id) VALUES (%s)", [1])

    with pytest.raises(IntegrityError, match="duplicate key"), transaction.atomic():
        prepared.run_together(
            [
                (f"INSERT INTO {table} (id) VALUES (%s)", [2]),
                (f"INSERT INTO {table} (id) VALUES (%s)", [1]),  # refused
                (f"INSERT INTO {table} (id) VALUES (%s)", [3]),
            ]
        )

    assert count(table) == 1
    assert prepared.fetch_all(f"SELECT id FROM {table}", []) == [(1,)]  # the connection is usable


def test_copy_in_stores_the_payload_and_a_refused_copy_raises(table):
    assert prepared.copy_in(f"COPY {table} (id, label) FROM STDIN", b"1\tone\n2\ttwo\n") == 2

    with pytest.raises(IntegrityError, match="duplicate key"), transaction.atomic():
        prepared.copy_in(f"COPY {table} (id, label) FROM STDIN", b"3\tthree\n1\tagain\n")
    with pytest.raises(DatabaseError, match="does not exist"):
        prepared.copy_in("COPY no_such_table (id) FROM STDIN", b"1\n")

    assert prepared.fetch_all(f"SELECT id, label FROM {table} ORDER BY id", []) == [(1, "one"), (2, "two")]


def test_statements_the_server_forgot_are_prepared_again(table):
    sql = f"SELECT count(*) FROM {table} WHERE id > %s"
    prepared.fetch_all(sql, [0])
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # as a pooler's DISCARD ALL does

    with pytest.raises(DatabaseError, match="does not exist"):
        prepared.fetch_all(sql, [0])
    assert prepared.fetch_all(sql, [0]) == [(0,)]


def test_the_last_copy_of_the_outermost_block_commits_with_it(table):
    with transaction.atomic():
        prepared.run_together([(f"INSERT INTO {table} (id) VALUES (%s)", [1])])
        prepared.copy_in(f"COPY {table} (id) FROM STDIN", b"2\n", last_in_transaction=True)
        assert connection.connection.pgconn.transaction_status == pq.TransactionStatus.IDLE  # committed already

    assert count(table) == 2


def test_inside_a_nested_block_the_commit_is_left_to_django(table):
    with pytest.raises(RuntimeError), transaction.atomic():
        with transaction.atomic():
            prepared.copy_in(f"COPY {table} (id) FROM STDIN", b"1\n", last_in_transaction=True)
        assert connection.connection.pgconn.transaction_status != pq.TransactionStatus.IDLE
        raise RuntimeError("roll back the outer block")

    assert count(table) == 0


def test_a_refused_last_copy_commits_nothing(table):
    prepared.execute(f"INSERT INTO {table} (id) VALUES (%s)", [1])

    with pytest.raises(IntegrityError), transaction.atomic():
        prepared.run_together([(f"INSERT INTO {table} (id) VALUES (%s)", [5])])
        prepared.copy_in(f"COPY {table} (id) FROM STDIN", b"6\n1\n", last_in_transaction=True)

    assert prepared.fetch_all(f"SELECT id FROM {table}", []) == [(1,)]


def test_placeholders_are_numbered_and_a_doubled_percent_is_a_percent(table):
    prepared.execute(f"INSERT INTO {table} (id, label) VALUES (%s, %s)", [1, "50%"])

    assert prepared.fetch_all(f"SELECT id FROM {table} WHERE label LIKE %s || '%%'", ["50"]) == [(1,)]


def test_past_the_limit_statements_run_unprepared(table, monkeypatch):
    monkeypatch.setattr(prepared, "PREPARED_MAX", len(prepared._names.get(connection.connection, {})) + 2)
    before = our_statements()

    answers = [prepared.fetch_all(f"SELECT %s::int + {n}", [1]) for n in range(5)]

    assert answers == [[(1 + n,)] for n in range(5)]
    assert len(our_statements() - before) == 2


def test_a_statement_skipped_by_an_earlier_failure_is_prepared_next_time(table):
    prepared.execute(f"INSERT INTO {table} (id) VALUES (%s)", [1])
    new = f"SELECT count(*) FROM {table} WHERE label IS NULL AND id > %s"

    with pytest.raises(IntegrityError), transaction.atomic():
        prepared.run_together([(f"INSERT INTO {table} (id) VALUES (%s)", [1]), (new, [0])])  # the PREPARE is skipped

    assert prepared.fetch_all(new, [0]) == [(1,)]
