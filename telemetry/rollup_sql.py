"""GPU hourly usage on PostgreSQL: samples fetched as columns, computed by ``telemetry.rollup_columns``.

Why the rollup keeps two implementations of one rule: the pure function
(``telemetry.energy.gpu_usage_by_hour``) is the rule, readable and tested
without a database, and it is what SQLite (the embedded default) runs. At
1 Hz a node-hour of 8 GPUs is ~29k samples; as Python objects that is ~0.45 s
of a core per node-hour, too slow for a fleet on one server, so PostgreSQL
ships the samples as binary columns and numpy computes the same sums (~25 ms).
The copy is kept equal, not merely close: ``tests/telemetry/test_rollup_implementations.py``
runs both on the same random data (hypothesis, PostgreSQL only) and asserts
equal hourly results to the last bit; any change to the rule goes into both.

The pure function ``telemetry.energy.gpu_usage_by_hour`` is the
specification; ``telemetry.rollup_columns`` is its translation into numpy,
equal to it to the last bit. This module feeds it: one ``COPY ... TO STDOUT
(FORMAT binary)`` per run of consecutive hours returns one row per GPU whose
samples are one ``bytea`` of fixed-size binary records (``string_agg`` of the
readings' ``*send`` functions, in storage order: the numpy side sorts by
time), read straight into numpy with no Python object per sample. Epochs are
sent per sample only for a run where a GPU has several. Per sample that costs
~0.55 µs in PostgreSQL (the scan, seven send functions) and ~0.3 µs here,
against ~3 µs when the spans and sums were computed in SQL.

Power is stored as ``real``; the pure function (the Python path) sees the float
of its text form, so the few values that need it (each hour's maximum, the ends
of spans that integrate power) are converted by PostgreSQL the same way
(``::text::float8``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from django.db import connection, transaction

from telemetry import energy
from telemetry.energy.hours import HOUR_S, sample_window_s
from telemetry.models import GpuSample
from telemetry.rollup_columns import GpuColumns, gpu_usage_by_hour_columns

# A span longer than an hour could cross two hour boundaries; the columns split across one.
MAX_GAP_S = HOUR_S
MIB = 1 << 20
_PG_EPOCH_US = 946_684_800_000_000  # 2000-01-01T00:00:00Z in Unix microseconds: binary timestamps count from it

# One sample's record: its readings in binary (big-endian), a NULL as a value no reading takes
# (a signalling NaN with a payload, an integer type's minimum; ingest bounds every reading far from
# them). The NULLs counted by the query prove it: otherwise the run is computed in Python.
_NULL_AS = {
    "energy_j": ("float8send", "7ff4000000000001", ">u8"),
    "power_w": ("float4send", "7fa00001", ">u4"),
    "util_pct": ("int2send", "8000", ">i2"),
    "mem_util_pct": ("int2send", "8000", ">i2"),
    "mem_used_mib": ("int4send", "80000000", ">i4"),
    "temp_c": ("int2send", "8000", ">i2"),
}
_RECORD = "timestamptz_send(ts) || " + " || ".join(
    f"coalesce({send}({column}), '\\x{null}'::bytea)" for column, (send, null, _) in _NULL_AS.items()
)
_RECORD_DTYPE = [("ts", ">i8"), *((column, dtype) for column, (_, _, dtype) in _NULL_AS.items())]
# Epochs ride along only for a run where a GPU has several (a driver reload): one int4 more a sample.
_EPOCH_RECORD = _RECORD + " || int4send(epoch_id)"
_EPOCH_RECORD_DTYPE = [*_RECORD_DTYPE, ("epoch_id", ">i4")]
# The window's samples, and each GPU's nearest sample either side of it within the bridge limit
# (the far end of a gap its counter may bridge: two index lookups per GPU), all of one node: every read
# names it (the key leads with it), so on Citus, where raw samples are distributed by node, the statement
# goes to the node's shard whole (a LATERAL ... LIMIT could not be split across shards).
_SQL = """
COPY (
    SELECT gpu_id, min(epoch_id), max(epoch_id),
           sum(num_nulls({nullable})),
           string_agg({record}, '')
    FROM (
        SELECT * FROM {table}
        WHERE node_id = %(node_id)s AND gpu_id = ANY(%(gpu_ids)s) AND ts >= %(first_ts)s AND ts <= %(last_ts)s
        UNION ALL
        SELECT n.* FROM unnest(%(gpu_ids)s::int[]) AS g (id) CROSS JOIN LATERAL (
            SELECT * FROM {table} WHERE node_id = %(node_id)s AND gpu_id = g.id
                AND ts < %(first_ts)s AND ts >= %(before_ts)s
            ORDER BY ts DESC LIMIT 1
        ) AS n
        UNION ALL
        SELECT n.* FROM unnest(%(gpu_ids)s::int[]) AS g (id) CROSS JOIN LATERAL (
            SELECT * FROM {table} WHERE node_id = %(node_id)s AND gpu_id = g.id
                AND ts > %(last_ts)s AND ts <= %(after_ts)s
            ORDER BY ts LIMIT 1
        ) AS n
    ) AS samples
    GROUP BY gpu_id
) TO STDOUT (FORMAT binary)
"""
_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_COPY_ROW = struct.Struct(">hiiiiiiiqi")  # fields; (length, value) of gpu_id, min and max epoch, NULLs; bytea length


def gpu_usage_by_hour_sql(
    *,
    node_id: int,
    gpu_ids: Sequence[int],
    hour_runs: Sequence[Sequence[int]],
    max_gap_s: float,
    max_bridge_s: float = energy.DEFAULT_MAX_BRIDGE_S,
    busy_above_util_pct: int = 0,
) -> list[tuple[int, energy.GpuHourUsage]] | None:
    """``(gpu id, usage)`` for every requested hour with data of node ``node_id``'s GPUs ``gpu_ids``, as
    ``telemetry.rollup`` gets from the pure function.

    ``hour_runs``: runs of consecutive hour starts (Unix seconds); each run is
    computed from the samples of its own window (``sample_window_s``) and each
    GPU's nearest sample beyond it within ``max_bridge_s``, as the pure function
    requires. PostgreSQL only, and ``max_gap_s`` at most an hour.
    ``None`` if a stored reading takes a value that stands for NULL here (ingest
    stores none): the caller computes these hours with the pure function.
    """
    if max_gap_s > MAX_GAP_S:
        raise ValueError(f"max_gap_s={max_gap_s} is over {MAX_GAP_S}: a span could cross two hour boundaries")
    if not gpu_ids or not hour_runs:
        return []
    usages: list[tuple[int, energy.GpuHourUsage]] = []
    with transaction.atomic(), connection.cursor() as cursor:
        # Room for a claim's records (~30 bytes a sample) in memory; compiling costs more than it saves
        # on a claim's ~170k rows; one process per claim (rollups scale by running workers side by side).
        cursor.execute("SET LOCAL work_mem = '64MB'")
        cursor.execute("SET LOCAL jit = off")
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        for run in hour_runs:
            columns = _run_columns(cursor, _run_params(node_id, run, gpu_ids, max_gap_s, max_bridge_s), epochs=False)
            if columns is None:
                return None
            usages += gpu_usage_by_hour_columns(
                columns,
                hour_starts_s=run,
                max_gap_s=max_gap_s,
                max_bridge_s=max_bridge_s,
                real_to_float=lambda values: _reals_read(cursor, values),
                busy_above_util_pct=busy_above_util_pct,
            )
    return sorted(usages, key=lambda pair: (pair[0], pair[1].hour_start_s))


def _run_params(
    node_id: int, run: Sequence[int], gpu_ids: Sequence[int], max_gap_s: float, max_bridge_s: float
) -> dict[str, Any]:
    # The bounds the Python path reads with (``rollup._ts_within``, ``_Source.nearest``); the window's
    # float bounds are applied after.
    first_s, last_s = sample_window_s(run, max_gap_s=max_gap_s)
    first_ts, last_ts = datetime.fromtimestamp(first_s, tz=UTC), datetime.fromtimestamp(last_s, tz=UTC)
    bridge = timedelta(seconds=max_bridge_s)
    return {
        "first_ts": first_ts,
        "last_ts": last_ts,
        "before_ts": first_ts - bridge,
        "after_ts": last_ts + bridge,
        "node_id": node_id,
        "gpu_ids": list(gpu_ids),
    }


def _run_columns(cursor: Any, params: dict[str, Any], *, epochs: bool) -> GpuColumns | None:
    """The run's samples of every GPU; ``None`` if a reading took a NULL's value."""
    sql = _SQL.format(
        table=f'"{GpuSample._meta.db_table}"',
        nullable=", ".join(_NULL_AS),
        record=_EPOCH_RECORD if epochs else _RECORD,
    )
    with cursor.cursor.copy(sql, params) as copy:
        data = b"".join(copy)
    gpus = sorted(_copy_rows(data))
    if not epochs and any(first != last for _, first, last, _, _ in gpus):
        return _run_columns(cursor, params, epochs=True)
    dtype = np.dtype(_EPOCH_RECORD_DTYPE if epochs else _RECORD_DTYPE)
    records = np.frombuffer(b"".join(records for *_, records in gpus), dtype=dtype)
    counts = [len(records) // dtype.itemsize for *_, records in gpus]
    columns, nulls = _columns(records, gpus, counts)
    return columns if nulls == [row[3] for row in gpus] else None


def _reals_read(cursor: Any, values: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Each ``real`` as Python reads it from PostgreSQL: the float of its shortest text (not its exact value)."""
    cursor.execute(
        "SELECT v::real::text::float8 FROM unnest(%s::float8[]) WITH ORDINALITY AS u (v, i) ORDER BY i",
        [values.astype(np.float64).tolist()],
    )
    return np.array([row[0] for row in cursor.fetchall()], dtype=np.float64)


# --- reading COPY's binary format ----------------------------------------------------


def _copy_rows(data: bytes) -> Iterator[tuple[int, int, int, int, bytes]]:
    """``(gpu id, first epoch, last epoch, NULLs, records)`` of each row of the binary COPY."""
    if not data.startswith(_COPY_SIGNATURE):
        raise ValueError("not a binary COPY")
    (extension,) = struct.unpack_from(">i", data, 15)
    at = 19 + extension
    while struct.unpack_from(">h", data, at)[0] != -1:
        fields, _, gpu_id, _, first_epoch, _, last_epoch, _, nulls, length = _COPY_ROW.unpack_from(data, at)
        if fields != 5:
            raise ValueError(f"a COPY row of {fields} fields, not 5")
        at += _COPY_ROW.size
        yield gpu_id, first_epoch, last_epoch, nulls, data[at : at + length]
        at += length


def _columns(
    records: npt.NDArray[Any], gpus: list[tuple[int, int, int, int, bytes]], counts: list[int]
) -> tuple[GpuColumns, list[int]]:
    """The records as GpuColumns (native types; NULLs as known = False), and the NULLs of each GPU."""
    gpu_ids = [row[0] for row in gpus]
    starts = np.cumsum([0, *counts[:-1]])
    fields: dict[str, npt.NDArray[Any]] = {}
    null_count = np.zeros(len(records), dtype=np.int64)
    for column, (_, null, _) in _NULL_AS.items():
        values = records[column].astype(records.dtype[column].newbyteorder("="))
        known = values != int.from_bytes(bytes.fromhex(null), "big", signed=values.dtype.kind == "i")
        null_count += ~known
        fields[f"{column}_known"] = known
        fields[column] = np.where(known, values, 0)  # no NaN stand-in left to compute with
    epoch = (
        records["epoch_id"]
        if "epoch_id" in (records.dtype.names or ())
        else np.repeat([row[1] for row in gpus], counts)
    )
    nulls = np.add.reduceat(null_count, starts).tolist() if len(records) else [0] * len(gpus)
    return GpuColumns(
        gpu_id=np.repeat(np.array(gpu_ids, dtype=np.int64), counts),
        ts_us=records["ts"].astype(np.int64) + _PG_EPOCH_US,
        epoch_id=epoch.astype(np.int64),
        energy_j=fields["energy_j"].view(np.float64),
        energy_known=fields["energy_j_known"],
        power_w=fields["power_w"].view(np.float32),
        power_known=fields["power_w_known"],
        util_pct=fields["util_pct"].astype(np.int64),
        util_known=fields["util_pct_known"],
        mem_util_pct=fields["mem_util_pct"].astype(np.int64),
        mem_util_known=fields["mem_util_pct_known"],
        mem_used_bytes=fields["mem_used_mib"].astype(np.int64) * MIB,
        mem_used_known=fields["mem_used_mib_known"],
        temp_c=fields["temp_c"].astype(np.int64),
        temp_known=fields["temp_c_known"],
    ), nulls
