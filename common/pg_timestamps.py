"""PostgreSQL ``timestamptz`` values read in C where they are UTC, the same values as Django's own loader.

With ``USE_TZ`` Django registers on every psycopg connection a loader of its own for ``timestamptz``
(``django.db.backends.postgresql.psycopg_any.BaseTzLoader``): psycopg's pure-Python parser (a regular
expression per value), then ``replace(tzinfo=UTC)``. psycopg's C loader cannot take its place (Django reads
the registered loader's ``timezone`` attribute on every cursor, which the C class has not, and the C class
cannot be subclassed). The reports read thousands of hourly rows a request (the sustainability page ~8,700
timestamps): ~4 µs a value there, a sixth of a second's CPU per ten requests.

``UtcTimestamptzLoader`` is Django's loader with a fast path: the text PostgreSQL writes for a UTC value in
the ISO date style (``2026-09-22 09:00:00+00``, ``...:00.5+00``) is read by ``datetime.fromisoformat``
(C; ~0.2 µs), whose result for a ``+00`` offset is ``datetime.timezone.utc``, the value Django's loader gives.
Any other text — another offset (a session not in UTC), a year past 9999 or BC, ``infinity``, another date
style — goes to Django's loader unchanged, so every value reads exactly as before (``tests/test_pg_timestamps.py``
compares both over generated values). Registered per connection with psycopg's public adapters API when
Django opens it (``connection_created``; ``common.apps``), only where Django's session time zone is UTC.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

# The loader Django registers with psycopg 3 (the project's driver, requirements.txt).
from django.db.backends.postgresql.psycopg_any import BaseTzLoader

_UTC = dt.UTC  # the object Django and psycopg give a UTC value (datetime.timezone.utc)


class UtcTimestamptzLoader(BaseTzLoader):
    """Django's ``timestamptz`` loader for a UTC session (``timezone``, which Django checks), reading a UTC value
    in C."""

    timezone = _UTC

    def load(self, data: Any) -> dt.datetime:
        try:
            value = dt.datetime.fromisoformat(bytes(data).decode())
        except ValueError:
            return super().load(data)
        if value.tzinfo is not _UTC:  # another offset: psycopg's own conversion, then Django's
            return super().load(data)
        return value


def utc_loader_register(*, sender: Any, connection: Any, **kwargs: Any) -> None:
    """``connection_created`` receiver: on a PostgreSQL (psycopg 3) connection whose session time zone is UTC
    and which Django reads as UTC, read ``timestamptz`` with ``UtcTimestamptzLoader``."""
    if connection.vendor != "postgresql" or connection.timezone is not _UTC:
        return
    raw = connection.connection
    adapters = getattr(raw, "adapters", None)  # psycopg 3's; psycopg2 has none
    if adapters is None or raw.info.parameter_status("TimeZone") != "UTC":
        return
    adapters.register_loader("timestamptz", UtcTimestamptzLoader)
