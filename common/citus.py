"""Whether the database is a Citus coordinator (the ``citus`` extension in it): docs/scaling.md, "Citus".

The product's code is the same on SQLite, PostgreSQL and Citus. The few places where Citus needs
another query shape ask :func:`citus_coordinator`; each is named in docs/scaling.md.
"""

from __future__ import annotations

from typing import Any

from django.db import connection as default_connection

# Per database (alias, name, host, port): the extension does not come and go under a running process.
_known: dict[tuple[str, str, str, str], bool] = {}


def citus_coordinator(connection: Any = default_connection) -> bool:
    """Whether ``connection`` is to a PostgreSQL database with the ``citus`` extension."""
    if connection.vendor != "postgresql":
        return False
    settings = connection.settings_dict
    key = (connection.alias, str(settings["NAME"]), str(settings.get("HOST", "")), str(settings.get("PORT", "")))
    if key not in _known:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
            _known[key] = cursor.fetchone() is not None
    return _known[key]


def primary_key(cursor: Any, table: str) -> tuple[str, list[str]]:
    """``table``'s primary key: its constraint's name and its columns in key order (from the catalog: the key
    a table has differs between one PostgreSQL server and a Citus coordinator, docs/scaling.md)."""
    cursor.execute(
        "SELECT conname, array_agg(a.attname::text ORDER BY k.ord) FROM pg_constraint c"
        " CROSS JOIN LATERAL unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)"
        " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum"
        " WHERE c.conrelid = %s::regclass AND c.contype = 'p' GROUP BY conname",
        [table],
    )
    name, columns = cursor.fetchone()
    return name, list(columns)
