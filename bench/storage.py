"""bench-storage: bytes on disk per raw GPU sample in PostgreSQL (heap + indexes), and dropping a day.

Rows go in the way ingest writes them (``telemetry.rawstore.rows_insert``: COPY
into the staging table, ``INSERT ... ON CONFLICT DO NOTHING``), in arrival
order: every node's 10-second batches, nodes interleaved, time moving forward.
One hour of 50 nodes x 8 GPUs (1.44M rows) by default; the bytes per row of a
whole day are the same, since every page and index leaf fills the same way.

    python -m bench.storage [--nodes 50] [--gpus 8] [--hours 1]
"""

from __future__ import annotations

import argparse
import math
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import django_setup, raw_days_empty, results_write, table_print, target, targets_print, timed

TARGET_BYTES_PER_SAMPLE = 100
BATCH_S = 10


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    parser.add_argument("--hours", type=float, default=1.0)
    args = parser.parse_args(argv)
    django_setup()

    # Three days back: the rollup benchmark keeps its day two days back.
    day = (datetime.now(tz=UTC) - timedelta(days=3)).replace(hour=0, minute=0, second=0, microsecond=0)
    raw_days_empty([day.date()])
    with timed() as load_s:
        rows = _load(day, nodes=args.nodes, gpus=args.gpus, seconds=round(args.hours * 3600))
    sizes = _sizes(day)
    per_row = {name: size / rows for name, size in sizes.items()}
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
    table_print("bench-storage: raw GPU samples in PostgreSQL", list(metrics.items()))
    targets_print(targets)
    run = {"nodes": args.nodes, "gpus_per_node": args.gpus, "hours": args.hours, "batch_s": BATCH_S}
    print(f"\nwrote {results_write('storage', metrics=metrics, targets=targets, run=run)}")


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


def _sizes(day: datetime) -> dict[str, Any]:
    from django.db import connection

    from telemetry.partitions import partition_name

    name = partition_name("telemetry_gpusample", day.date())
    with connection.cursor() as cursor:
        cursor.execute(f'VACUUM ANALYZE "{name}"')  # the visibility and free-space maps exist in steady state
        cursor.execute(
            "SELECT pg_relation_size(%s, 'main') + pg_relation_size(%s, 'fsm') + pg_relation_size(%s, 'vm'), "
            "pg_total_relation_size(%s)",
            [name] * 4,
        )
        heap, total = cursor.fetchone()
        cursor.execute(
            "SELECT c.relname, am.amname, pg_relation_size(c.oid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam "
            "WHERE i.indrelid = %s::regclass",
            [name],
        )
        indexes = cursor.fetchall()
        cursor.execute(f'SELECT avg(pg_column_size(s.*))::int FROM (SELECT * FROM "{name}" LIMIT 10000) s')
        mean_tuple = cursor.fetchone()[0]
    pkey = sum(size for rel, _, size in indexes if rel.endswith("pkey"))
    brin = sum(size for _, am, size in indexes if am == "brin")
    other = sum(size for rel, am, size in indexes if am != "brin" and not rel.endswith("pkey"))
    return {"total": total, "heap": heap, "pkey": pkey, "brin": brin, "other": other, "mean_tuple_bytes": mean_tuple}


def _partition_drop(day: datetime) -> None:
    """What retention does for one day (``telemetry.partitions``): drop the day's partition."""
    from django.db import connection

    from telemetry.partitions import partition_name

    with connection.cursor() as cursor:
        cursor.execute(f'DROP TABLE "{partition_name("telemetry_gpusample", day.date())}"')


if __name__ == "__main__":
    main()
