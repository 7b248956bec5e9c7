"""``timestamptz`` values read through ``common.pg_timestamps`` are exactly those Django's own loader gives."""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader
from hypothesis import given, settings
from hypothesis import strategies as st

from common.pg_timestamps import UtcTimestamptzLoader

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a loader of PostgreSQL's timestamptz"),
    pytest.mark.django_db,
]
UTC = dt.UTC


def read(sql: str, params: list[Any], *, ours: bool, time_zone: str = "UTC") -> list[Any]:
    """Every value of ``sql`` read with our loader or Django's, in a session at ``time_zone``."""
    raw = connection.connection
    with raw.cursor() as cursor:
        cursor.execute("SELECT set_config('TimeZone', %s, true)", [time_zone])
        if ours:
            cursor.adapters.register_loader("timestamptz", UtcTimestamptzLoader)
        else:
            register_tzloader(UTC, cursor)
        try:
            cursor.execute(sql, params)
            return [value for row in cursor.fetchall() for value in row]
        except psycopg.DataError as error:
            return [type(error), str(error)]


def test_django_reads_timestamps_with_it_in_a_utc_session() -> None:
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(
        connection.connection.adapters.types["timestamptz"].oid, psycopg.pq.Format.TEXT
    )
    assert loader is UtcTimestamptzLoader
    with connection.cursor() as cursor:
        cursor.execute("SELECT '2026-09-22 09:00:00.5+02'::timestamptz")
        value = cursor.fetchone()[0]
    assert value == dt.datetime(2026, 9, 22, 7, 0, 0, 500000, tzinfo=UTC)
    assert value.tzinfo is UTC


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        # hypothesis bounds are naive; the values it draws are aware (UTC)
        st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=st.just(UTC)),  # noqa: DTZ001
        min_size=1,
        max_size=20,
    )
)
def test_any_utc_value_reads_as_djangos_loader_reads_it(values: list[dt.datetime]) -> None:
    sql = "SELECT unnest(%s::timestamptz[])"
    assert read(sql, [values], ours=True) == read(sql, [values], ours=False) == values


@pytest.mark.parametrize("time_zone", ["UTC", "Asia/Kolkata", "America/St_Johns", "Europe/Amsterdam"])
@pytest.mark.parametrize(
    "text",
    [
        "2026-09-22 09:00:00+00",
        "2026-09-22 09:00:00.000001+00",
        "2026-03-29 01:30:00+01",
        "1900-01-01 00:00:00+00",  # Amsterdam's offset then: +00:19:32
        "0001-01-01 00:00:00+00",
        "0044-03-15 12:00:00+00 BC",
        "infinity",
        "-infinity",
    ],
)
def test_every_other_text_reads_as_djangos_loader_reads_it(text: str, time_zone: str) -> None:
    # Another session time zone writes other offsets (Django keeps its sessions in UTC; both loaders then
    # give Django's reading); BC years and infinities are not ISO text: each goes to Django's loader.
    sql = "SELECT %s::timestamptz"
    assert read(sql, [text], ours=True, time_zone=time_zone) == read(sql, [text], ours=False, time_zone=time_zone)
