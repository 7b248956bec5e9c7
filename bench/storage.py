"""bench-storage: bytes on disk per raw GPU sample in PostgreSQL (heap + indexes), and dropping a day.

Rows go in the way ingest writes them (``telemetry.rawstore.rows_insert``: COPY
into the staging table, ``INSERT ... ON CONFLICT DO NOTHING``), in arrival
order: every node's 10-second batches, nodes interleaved, time moving forward.
One hour of 50 nodes x 8 GPUs (1.44M rows) by default; the bytes per row of a
whole day are the same, since every page and index leaf fills the same way.

    python -m bench.storage [--nodes 50] [--gpus 8] [--hours 1] [--columnar]

``--columnar`` (a Citus coordinator: ``make bench-citus``, bench/README.md "Citus"): the same
day, once measured in heap, is then converted to columnar storage the way the partition job
does it (``telemetry.columnar``) and measured again, with its primary key (as stored) and
without it (the key's shards' bytes taken off); sizes are summed over every shard on every
worker. Written to ``storage_columnar.json``.
"""

from __future__ import annotations

import argparse
import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import django_setup, raw_days_empty, results_write, table_print, target, targets_print, timed

TARGET_BYTES_PER_SAMPLE = 100
TARGET_COLUMNAR_WITH_PKEY = 40
TARGET_COLUMNAR_WITHOUT_PKEY = 12
BATCH_S = 10


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--columnar", action="store_true", help="also columnar (a Citus coordinator)")
    args = parser.parse_args(argv)
    django_setup()

    # Three days back: the rollup benchmark keeps its day two days back.
    day = (datetime.now(tz=UTC) - timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
    raw_days_empty([day.date()])
    with timed() as load_s:
        rows = _load(day, nodes=args.nodes, gpus=args.gpus, seconds=round(args.hours * 3600))
    sizes = _sizes(day)
    per_row = {name: size / rows for name, size in sizes.items()}
    columnar: dict[str, Any] = {}
    if args.columnar:
        columnar = _columnar(day, rows)
    with timed() as drop_s:
        _partition_drop(day)

    metrics = {
        "rows": rows,
        "load_s": round(load_s[0], 2),
        "load_rows_per_s": round(rows / load_s[0]),
        "bytes_total": sizes["total"],
        "bytes_per_sample_total": round(per_row["total"], 1),
        "bytes_per_sample_heap": round(per_row["heap"], 1),
        "bytes_per_sample_pkey": round(per_row["pkey"], 1),
        "bytes_per_sample_brin": round(per_row["brin"], 2),
        "bytes_per_sample_other": round(per_row["other"], 2),
        "mean_tuple_bytes": sizes["mean_tuple_bytes"],
        "drop_partition_ms": round(drop_s[0] * 1000, 1),
        "projected_day_gib_per_1000_gpus": round(per_row["total"] * 86400 * 1000 / 2**30, 1),
    }
    targets = {"bytes_per_sample": target(metrics["bytes_per_sample_total"], TARGET_BYTES_PER_SAMPLE)}
    if columnar:
        metrics.update(columnar)
        targets["columnar_bytes_per_sample_with_pkey"] = target(
            columnar["columnar_bytes_per_sample_with_pkey"], TARGET_COLUMNAR_WITH_PKEY
        )
        targets["columnar_bytes_per_sample_without_pkey"] = target(
            columnar["columnar_bytes_per_sample_without_pkey"], TARGET_COLUMNAR_WITHOUT_PKEY
        )
    table_print("bench-storage: raw GPU samples in PostgreSQL", list(metrics.items()))
    targets_print(targets)
    run = {"nodes": args.nodes, "gpus_per_node": args.gpus, "hours": args.hours, "batch_s": BATCH_S}
    name = "storage_columnar" if args.columnar else "storage"
    print(f"\nwrote {results_write(name, metrics=metrics, targets=targets, run=run)}")


def _columnar(day: datetime, rows: int) -> dict[str, Any]:
    """Convert the day's partition to columnar as the partition job does, and measure it again."""
    from django.db import connection

    from common.citus import citus_coordinator
    from telemetry.columnar import _convert, _extension_ensure

    if not citus_coordinator(connection):
        raise SystemExit("bench.storage --columnar needs a Citus coordinator (make bench-citus)")
    _extension_ensure()
    with timed() as convert_s:
        _convert("telemetry_gpusample", day.date(), attached=True)
    sizes = _sizes(day)
    return {
        "columnar_convert_s": round(convert_s[0], 2),
        "columnar_bytes_total": sizes["total"],
        "columnar_bytes_per_sample_data": round(sizes["heap"] / rows, 2),
        "columnar_bytes_per_sample_pkey": round(sizes["pkey"] / rows, 2),
        "columnar_bytes_per_sample_brin": round(sizes["brin"] / rows, 3),
        "columnar_bytes_per_sample_with_pkey": round(sizes["total"] / rows, 1),
        "columnar_bytes_per_sample_without_pkey": round((sizes["total"] - sizes["pkey"]) / rows, 1),
    }


def _load(day: datetime, *, nodes: int, gpus: int, seconds: int) -> int:
    """Insert ``seconds`` of samples of ``nodes`` x ``gpus`` the way ingest does; return the rows stored."""
    from django.db import transaction

    from telemetry.partitions import partitions_ensure
    from telemetry.rawstore import GPU_COLUMNS, rows_insert

    partitions_ensure(days=[day.date()])
    rng = random.Random(7)
    energy = [rng.uniform(1e6, 1e9) for _ in range(nodes * gpus)]
    stored = 0
    for start in range(0, seconds, BATCH_S):
        for node in range(nodes):  # one request per node, each its own transaction, as ingest does
            rows: list[tuple[Any, ...]] = []
            for t in range(start, min(start + BATCH_S, seconds)):
                ts = day + timedelta(seconds=t + node / nodes)
                for g in range(gpus):
                    gpu_id = node * gpus + g + 1
                    load = 0.5 + 0.4 * math.sin(t / 600 + gpu_id)
                    power = round(70 + 630 * load, 3)
                    energy[gpu_id - 1] += power
                    rows.append(
                        (
                            node + 1,
                            ts,
                            gpu_id,
                            gpu_id,
                            round(energy[gpu_id - 1], 3),
                            round(80 * 1024 * (0.9 + 0.02 * load)),  # MiB
                            power,
                            round(100 * load),
                            round(70 * load),
                            round(32 + 36 * load),
                        )
                    )
            with transaction.atomic():
                stored += rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)
    return stored


# One relation's figures as JSON: run on the partition itself (PostgreSQL) or on each of its shards (Citus,
# where ``{rel}`` is the shard's name and the coordinator's table holds nothing).
SIZES_SQL = (
    "SELECT json_build_object("
    "'heap', pg_relation_size('{rel}', 'main') + pg_relation_size('{rel}', 'fsm') + pg_relation_size('{rel}', 'vm'), "
    "'total', pg_total_relation_size('{rel}'), "
    "'pkey', (SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) FROM pg_index i "
    "WHERE i.indrelid = '{rel}'::regclass AND i.indisprimary), "
    "'brin', (SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) FROM pg_index i "
    "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam "
    "WHERE i.indrelid = '{rel}'::regclass AND am.amname = 'brin'))"
)


def _sizes(day: datetime) -> dict[str, Any]:
    import json

    from django.db import connection

    from common.citus import citus_coordinator
    from telemetry.partitions import partition_name

    name = partition_name("telemetry_gpusample", day.date())
    with connection.cursor() as cursor:
        cursor.execute(f'VACUUM ANALYZE "{name}"')  # the visibility and free-space maps exist in steady state
        if citus_coordinator(connection):
            cursor.execute("SELECT result FROM run_command_on_shards(%s, %s)", [name, SIZES_SQL.format(rel="%1$s")])
        else:
            cursor.execute(SIZES_SQL.format(rel=name))
        parts = [json.loads(row[0]) if isinstance(row[0], str) else row[0] for row in cursor.fetchall()]
        cursor.execute(f'SELECT avg(pg_column_size(s.*))::int FROM (SELECT * FROM "{name}" LIMIT 10000) s')
        mean_tuple = cursor.fetchone()[0]
    sizes = {key: sum(int(part[key]) for part in parts) for key in ("heap", "total", "pkey", "brin")}
    # The rest: other indexes, the BRIN's free-space map (a few pages per partition or shard), TOAST.
    sizes["other"] = sizes["total"] - sizes["heap"] - sizes["pkey"] - sizes["brin"]
    return {**sizes, "mean_tuple_bytes": mean_tuple}


def _partition_drop(day: datetime) -> None:
    """What retention does for one day (``telemetry.partitions``): drop the day's partition."""
    from django.db import connection

    from telemetry.partitions import partition_name

    with connection.cursor() as cursor:
        cursor.execute(f'DROP TABLE "{partition_name("telemetry_gpusample", day.date())}"')


if __name__ == "__main__":
    main()
