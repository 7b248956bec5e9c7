"""Daily partitions of the raw sample tables on PostgreSQL, and retention everywhere.

Partitions are named ``<table>_pYYYYMMDD`` and hold one UTC day. A beat task
creates them a few days ahead and drops those past retention; ingest also
ensures the days a batch touches exist (cached per process), so a late task
never makes ingest fail. On SQLite retention deletes old rows instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, ProgrammingError, connection, transaction

from telemetry.models import GpuSample, ServingSample

logger = logging.getLogger(__name__)

RAW_TABLES = (GpuSample._meta.db_table, ServingSample._meta.db_table)
_PARTITION_NAME = re.compile(r"_p(\d{8})$")
_known: set[tuple[str, date]] = set()


def partition_name(table: str, day: date) -> str:
    return f"{table}_p{day:%Y%m%d}"


def _is_postgres() -> bool:
    return connection.vendor == "postgresql"


def partitions_ensure(*, days: Iterable[date]) -> int:
    """Create the daily partitions for ``days`` that do not exist yet; return how many were created."""
    if not _is_postgres():
        return 0
    created = 0
    for table in RAW_TABLES:
        for day in sorted(set(days)):
            if (table, day) in _known:
                continue
            created += _partition_create(table, day)
            # Remembered once committed: a rolled-back creation must be retried.
            transaction.on_commit(partial(_known.add, (table, day)))
    return created


def _partition_create(table: str, day: date) -> int:
    name = partition_name(table, day)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        if cursor.fetchone()[0]:
            return 0
        # A savepoint: a concurrent creator makes this fail harmlessly, not the caller's transaction
        # (IF NOT EXISTS does not cover a creation that commits while this one runs).
        try:
            with transaction.atomic():
                cursor.execute(
                    f'CREATE TABLE IF NOT EXISTS "{name}" PARTITION OF "{table}" FOR VALUES FROM (%s) TO (%s)',
                    [start, start + timedelta(days=1)],
                )
        except (ProgrammingError, IntegrityError):
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
            if not cursor.fetchone()[0]:
                raise
            return 0
    logger.info("created partition %s", name)
    return 1


def partitions_existing(*, table: str) -> list[date]:
    if not _is_postgres():
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s",
            [table],
        )
        names = [row[0] for row in cursor.fetchall()]
    return sorted(date.fromisoformat(m.group(1)) for n in names if (m := _PARTITION_NAME.search(n)))


def retention_apply(*, now: datetime, retention_days: int | None = None) -> dict[str, int]:
    """Drop (PostgreSQL) or delete (SQLite) raw samples older than retention; return what went per table."""
    days = retention_days if retention_days is not None else settings.TELEMETRY_RETENTION_DAYS
    cutoff = (now - timedelta(days=days)).date()
    if _is_postgres():
        return {table: _partitions_drop_before(table, cutoff) for table in RAW_TABLES}
    start = datetime(cutoff.year, cutoff.month, cutoff.day, tzinfo=UTC)
    return {
        GpuSample._meta.db_table: GpuSample.objects.filter(ts__lt=start).delete()[0],
        ServingSample._meta.db_table: ServingSample.objects.filter(ts__lt=start).delete()[0],
    }


def _partitions_drop_before(table: str, cutoff: date) -> int:
    dropped = 0
    for day in partitions_existing(table=table):
        if day < cutoff:
            with connection.cursor() as cursor:
                cursor.execute(f'DROP TABLE IF EXISTS "{partition_name(table, day)}"')
            _known.discard((table, day))
            dropped += 1
    return dropped


def partitions_maintain(*, now: datetime) -> dict[str, object]:
    """The daily job: partitions from the oldest accepted day to a few days ahead, retention applied,
    and on Citus the days past the columnar horizon converted (``telemetry.columnar``)."""
    today = now.date()
    oldest = today - timedelta(days=settings.TELEMETRY_RETENTION_DAYS)
    ahead = today + timedelta(days=settings.TELEMETRY_PARTITIONS_AHEAD_DAYS)
    days = [oldest + timedelta(days=n) for n in range((ahead - oldest).days + 1)]
    created = partitions_ensure(days=days)
    removed = retention_apply(now=now)
    from telemetry.columnar import columnar_apply  # on a Citus coordinator only; imports this module

    return {"created": created, "removed": removed, "columnar": columnar_apply(now=now)}
