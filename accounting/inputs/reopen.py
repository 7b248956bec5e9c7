"""Re-open exactly the stored ledger lines an input change affects, and count them.

Only lines that exist are marked: an hour with no line yet is computed when its
usage arrives (or by the held-hours sweep) with the inputs then in force. Marks
go into the ledger's own queue (``LedgerPending``), consumed by
``ledger_pending_run`` like every other mark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from accounting.models import LedgerPending, NodeHourLedger
from governance.intervals import Window

# Every hour a line can have: for inputs without a period (a node's policy, a profile, the site's own PUE).
EVERY_HOUR: list[Window] = [(datetime(1970, 1, 1, tzinfo=UTC), None)]


def _at(instant: datetime) -> Any:
    """An instant as the backend stores it (SQLite compares text: the ORM's own format, not Python's)."""
    return connection.ops.adapt_datetimefield_value(instant)


def ledger_lines_reopen(*, node_windows: Mapping[int, Iterable[Window]], now: datetime) -> int:
    """Mark the stored lines of each node within its windows; return how many were marked.

        One ``INSERT ... SELECT`` per node and window: a year of hours never passes
        through Python objects. The one way lines are re-opened: by input changes,
    policy and profile changes (over ``EVERY_HOUR``) alike.
    """
    pending, ledger = LedgerPending._meta.db_table, NodeHourLedger._meta.db_table
    marked = 0
    with connection.cursor() as cursor:
        for node_id, windows in node_windows.items():
            for start, end in windows:
                until = "" if end is None else " AND hour_start < %s"
                cursor.execute(
                    f"INSERT INTO {pending} (node_id, hour_start, marked_at) "  # noqa: S608 - constant table names
                    f"SELECT node_id, hour_start, %s FROM {ledger} WHERE node_id = %s AND hour_start >= %s{until} "
                    "ON CONFLICT (node_id, hour_start) DO UPDATE SET marked_at = excluded.marked_at",
                    [_at(now), int(node_id), _at(start)] + ([] if end is None else [_at(end)]),
                )
                marked += cursor.rowcount
    return marked
