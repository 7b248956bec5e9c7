"""A bare Django view that stores a batch by COPY through a staging table: no DRF, no token, no validation.

The reference for ``bench.ingest``: what Django, gunicorn and PostgreSQL cost on
this machine with nothing of Wattledger's own on the path. It parses the gzipped
wire batch, takes the node's id from the ``X-Bench-Node-Id`` header, its GPU ids from
``X-Bench-Gpu-Ids`` and their epoch ids from ``X-Bench-Epoch-Ids`` (comma-separated, by GPU
index), COPYs the rows into a
session-local staging table and moves them with ``INSERT ... ON CONFLICT DO
NOTHING`` into ``bench_bare_gpusample`` (a copy of the raw table), in one
transaction.
"""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from functools import partial

import orjson
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

TABLE = "bench_bare_gpusample"
COLUMNS = "node_id, ts, gpu_id, epoch_id, energy_j, mem_used_mib, power_w, util_pct, mem_util_pct, temp_c"
_utc = partial(datetime.fromtimestamp, tz=UTC)


@csrf_exempt
def bare_ingest(request: HttpRequest) -> HttpResponse:
    columns = orjson.loads(gzip.decompress(request.body))["gpu_samples"]
    gpu_ids = [int(i) for i in request.headers["X-Bench-Gpu-Ids"].split(",")]
    epoch_ids = [int(i) for i in request.headers["X-Bench-Epoch-Ids"].split(",")]
    node_id = int(request.headers["X-Bench-Node-Id"])
    rows = zip(
        [node_id] * len(columns["ts"]),
        map(_utc, columns["ts"]), map(gpu_ids.__getitem__, columns["gpu"]), map(epoch_ids.__getitem__, columns["gpu"]),
        columns["energy_j"], ((b + 2**19) >> 20 for b in columns["mem_used_bytes"]), columns["power_w"],
        columns["util_pct"],
        columns["mem_util_pct"], columns["temp_c"], strict=True,
    )  # fmt: skip
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS bare_stage (LIKE {TABLE} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
        )
        with cursor.cursor.copy(f"COPY bare_stage ({COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(f"INSERT INTO {TABLE} ({COLUMNS}) SELECT {COLUMNS} FROM bare_stage ON CONFLICT DO NOTHING")
        stored = cursor.rowcount
    return HttpResponse(orjson.dumps({"stored": {"gpu_samples": stored}, "duplicates": {"gpu_samples": 0}}),
                        content_type="application/json")  # fmt: skip
