"""Old raw-sample day partitions in Citus columnar storage (docs/scaling.md, "Columnar partitions").

On a Citus coordinator only (``common.citus``): the daily partitions of the raw sample tables
(``telemetry.partitions``) whose day ended more than ``TELEMETRY_COLUMNAR_AFTER_DAYS`` ago
(default 3) are rewritten in the ``columnar`` access method, compressed column by column, with
their primary key kept (a btree on a columnar table): a re-sent batch into such a day is still
recognised and skipped, and rollup's per-GPU reads still use the key. Nothing happens on plain
PostgreSQL or SQLite, where partitions stay heap as they are.

A partition cannot change its access method while attached: the parent's BRIN index on ``ts``
has an inherited copy on the partition, which ``alter_table_set_access_method`` must drop and
PostgreSQL forbids dropping. So each day goes through three steps, each its own transaction:

1. detach it from the parent (brief: the catalog only);
2. drop its BRIN index, put its rows in primary-key order (``CLUSTER``: each node's GPUs'
   readings in time order, which compress far better) and rewrite it as columnar
   (``alter_table_set_access_method``: the parent is not locked, ingest into the other days
   carries on), zstd at ``TELEMETRY_COLUMNAR_COMPRESSION_LEVEL`` (default 15);
3. attach it again, which gives it back the parent's BRIN index.

Between 1 and 3 samples of that day are refused by the database (no partition holds them) and
the collector sends them again later; a day this old gets almost none. A run that stops half way
is finished by the next one: a detached day partition is found by its name and carried on from
where it stood. Retention drops columnar partitions as it drops heap ones.
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import connection

from common.citus import citus_coordinator
from telemetry.partitions import _PARTITION_NAME, RAW_TABLES, partition_name, partitions_existing

logger = logging.getLogger(__name__)

# Index methods a columnar table can hold (Citus 13); any other index is dropped before the rewrite
# (only the BRIN on ts, which the attach gives back).
COLUMNAR_INDEX_METHODS = ("btree", "hash")


def columnar_cutoff(*, now: datetime, after_days: int | None = None) -> date:
    """The first day kept in heap storage: every day partition before it is columnar."""
    days = after_days if after_days is not None else settings.TELEMETRY_COLUMNAR_AFTER_DAYS
    return (now - timedelta(days=days)).date()


def columnar_apply(*, now: datetime, after_days: int | None = None) -> dict[str, int]:
    """Convert the raw-sample day partitions before the horizon to columnar; return how many per table.

    ``{}`` where the database is not a Citus coordinator, and inside a transaction: Citus runs an
    extension command or a day's detach, rewrite and attach only in a transaction without earlier
    parallel work on a distributed table ("cannot run extension command because there was a parallel
    operation"), so the partition job converts in its own transactions, never inside a caller's.
    """
    if not citus_coordinator(connection) or connection.in_atomic_block:
        return {}
    cutoff = columnar_cutoff(now=now, after_days=after_days)
    retention_start = (now - timedelta(days=settings.TELEMETRY_RETENTION_DAYS)).date()
    _extension_ensure()
    converted: dict[str, int] = {}
    for table in RAW_TABLES:
        count = 0
        for day in _detached_days(table):  # a run stopped half way: finish it
            _convert(table, day, attached=False)
            count += 1
        for day in partitions_existing(table=table):
            if retention_start <= day < cutoff and access_method(partition_name(table, day)) != "columnar":
                _convert(table, day, attached=True)
                count += 1
        converted[table] = count
    return converted


def access_method(relation: str) -> str | None:
    """The access method of a table (``heap``, ``columnar``), ``None`` where there is no such table."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam WHERE c.oid = to_regclass(%s)",
            [relation],
        )
        row = cursor.fetchone()
    return row[0] if row else None


def _extension_ensure() -> None:
    # Citus 12 and later ship columnar as an extension of its own, not created with ``citus``.
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus_columnar'")
        if cursor.fetchone() is None:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS citus_columnar")


def _detached_days(table: str) -> list[date]:
    """Day partitions of ``table`` that exist but are not attached (a conversion stopped after step 1)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE %s "
            "AND c.relnamespace = 'public'::regnamespace "
            "AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)",
            [table.replace("_", r"\_") + r"\_p%"],
        )
        names = [row[0] for row in cursor.fetchall()]
    return sorted(
        date.fromisoformat(m.group(1))
        for n in names
        if (m := _PARTITION_NAME.search(n)) and n == partition_name(table, date.fromisoformat(m.group(1)))
    )


# One shard (``%1$s``: its name, from run_command_on_shards' format()) rewritten in the order of its primary key.
_CLUSTER_SHARD = (
    "DO $$ DECLARE key text; BEGIN"
    " SELECT c.relname INTO key FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
    " WHERE i.indrelid = '%1$s'::regclass AND i.indisprimary;"
    " EXECUTE format('CLUSTER %%s USING %%I', '%1$s', key); END $$"
)


def _convert(table: str, day: date, *, attached: bool) -> None:
    name = partition_name(table, day)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    with connection.cursor() as cursor:
        if attached:
            cursor.execute(f'ALTER TABLE "{table}" DETACH PARTITION "{name}"')
        if access_method(name) != "columnar":
            cursor.execute(
                "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "JOIN pg_am am ON am.oid = c.relam WHERE i.indrelid = %s::regclass AND am.amname <> ALL(%s)",
                [name, list(COLUMNAR_INDEX_METHODS)],
            )
            for (index,) in cursor.fetchall():
                cursor.execute(f'DROP INDEX "{index}"')
            # Rows in key order (node, GPU or endpoint, time) before the rewrite, which copies them in the
            # order it reads them: a column then holds runs of one node's and one GPU's readings in time
            # order, which compress far better than the batches' interleaving (bench/README.md, "Citus").
            # Citus refuses CLUSTER on a distributed table (its "ALTER TABLE ... CLUSTER ON" step), so it
            # runs on each shard (run_command_on_shards), by that shard's own primary-key index.
            # An empty day (created ahead, or one the fleet sent nothing for) has nothing to sort.
            cursor.execute(f'SELECT EXISTS (SELECT 1 FROM "{name}")')  # noqa: S608 (a partition's own name)
            if cursor.fetchone()[0]:
                cursor.execute(
                    "SELECT shardid, result FROM run_command_on_shards(%s::regclass, %s) WHERE NOT success",
                    [name, _CLUSTER_SHARD],
                )
                failed = cursor.fetchall()
                if failed:
                    raise RuntimeError(f"CLUSTER of {name}'s shards failed: {failed}")
            # The rewrite creates the columnar table (and each shard) with the session's columnar options.
            cursor.execute("SELECT set_config('columnar.compression', 'zstd', false)")
            cursor.execute(
                "SELECT set_config('columnar.compression_level', %s, false)",
                [str(settings.TELEMETRY_COLUMNAR_COMPRESSION_LEVEL)],
            )
            try:
                cursor.execute("SELECT alter_table_set_access_method(%s::regclass, 'columnar')", [name])
            finally:
                cursor.execute("RESET columnar.compression_level")
                cursor.execute("RESET columnar.compression")
        cursor.execute(
            f'ALTER TABLE "{table}" ATTACH PARTITION "{name}" FOR VALUES FROM (%s) TO (%s)',
            [start, start + timedelta(days=1)],
        )
    logger.info("partition %s now in columnar storage", name)
