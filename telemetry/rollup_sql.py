"""GPU hourly usage computed inside PostgreSQL: the same numbers as ``telemetry.energy.gpu_usage_by_hour``.

The pure function is the specification; this is its translation into one
query per run of consecutive hours, so that a rollup reads no raw sample into
Python. As the pure function does it (``telemetry.energy.gpu``):

1. each sample's ``ts_s`` is the float Python sees (``date_part('epoch', ts)``:
   microseconds / 1e6, correctly rounded), its hour ``floor(t / 3600) * 3600``
   (exact for timestamps on whole microseconds, as Python's ``ts // 3600``);
2. the span ending at each sample (``lag``, in time order) is bridged when no
   longer than ``max_gap_s``; its rates: the counter's increase with the reset
   rule over the span, or the trapezoid of power where a counter is missing,
   and the pair means of busy, utilization, memory utilization, temperature;
3. per GPU-hour, ``sum(rate * seconds in the hour)`` and the seconds where the
   rate is known, over the spans ending in the hour (the whole span, or its
   tail if it began in the hour before), restarts counted in the hour of the
   span's end, maxima over the hour's samples;
4. the span that begins in an hour and ends in the next adds its head to the
   first hour last (its ``head`` array is read from the next hour's first
   sample); that addition is done here in Python, the same IEEE addition.

The sums add in the pure function's order: the window sorts each GPU's samples
by (hour, time), and the groups read them in that order, no sort between (the
plan is pinned: no incremental sort, which is unstable). Every float operation
is the pure function's own, in the same order, so results are equal to the
last bit; a test on PostgreSQL checks it against the pure function on awkward
data. Power is stored as ``real``: Python reads it as the float of its shortest
decimal text, so it is converted the same way here (``power_w::text::float8``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction

from telemetry import energy
from telemetry.energy.hours import HOUR_S, sample_window_s
from telemetry.models import GpuSample

# A span longer than an hour could cross two hour boundaries; the query splits across one.
MAX_GAP_S = HOUR_S

# The rates of the span from the previous sample (suffix 0) to this one (suffix 1): what
# ``_GpuTally.span_add`` multiplies by the span's seconds in an hour. NULL where the pure function
# has ``None`` (NULL propagates through the arithmetic; CASE where the rule is more than that).
_RATES = {
    "counter": "CASE WHEN energy0 IS NOT NULL AND energy1 IS NOT NULL THEN "
    "CASE WHEN e0 <> e1 OR energy1 < energy0 THEN energy1 ELSE energy1 - energy0 END / (t1 - t0) END",
    "integrated": "CASE WHEN energy0 IS NULL OR energy1 IS NULL THEN "
    "(power0::text::float8 + power1::text::float8) / 2 * (t1 - t0) / (t1 - t0) END",
    "busy": "((util0 > %(busy_above)s)::int::float8 + (util1 > %(busy_above)s)::int::float8) / 2",
    "util": "(util0 + util1)::float8 / 2",
    "mem_util": "(mem_util0 + mem_util1)::float8 / 2",
    "temp": "(temp0 + temp1)::float8 / 2",
}
# Rates whose known seconds make a mean (busy's integral is busy seconds itself).
_KNOWN = ("counter", "integrated", "util", "mem_util", "temp")


def _rate_columns() -> str:
    # Computed for every span; an unbridged one's rates are never used (its seconds are NULL).
    return ",\n           ".join(f"{sql} AS {name}" for name, sql in _RATES.items())


def _sum_columns() -> str:
    sums = [f"sum({name} * in_s) AS {name}_int" for name in _RATES]
    sums += [f"sum(in_s) FILTER (WHERE {name} IS NOT NULL) AS {name}_known_s" for name in _KNOWN]
    # The head of a span that crosses into this hour, for the hour before: its seconds there, then
    # each rate times them (NULL where the rate is). One sample per hour has one.
    head = ", ".join(f"{name} * head_s" for name in _RATES)
    sums.append(f"max(CASE WHEN head_s IS NOT NULL THEN ARRAY[head_s, {head}] END) AS head")
    return ",\n       ".join(sums)


_SQL = """
SELECT gpu_id, hour_s, sum(in_s) AS observed_s,
       {sums},
       max(power1)::text::float8 AS max_power_w, max(temp1) AS max_temp_c,
       max(mem_used_bytes) AS max_mem_used_bytes, count(*) FILTER (WHERE restarted) AS reset_count
FROM (
    SELECT gpu_id, hour_s, power1, temp1, mem_used_bytes,
           bridged AND (e0 <> e1 OR energy1 < energy0) AS restarted,
           -- The span's seconds in this hour: all of it, or its tail when it began in the hour before.
           CASE WHEN bridged AND hour_s < t1 THEN least(t1, hour_s + {hour}) - greatest(t0, hour_s) END AS in_s,
           -- ... and in the hour before, when it began there.
           CASE WHEN bridged AND t0 < hour_s THEN least(t1, hour_s) - greatest(t0, hour_s - {hour}) END AS head_s,
           {rates}
    FROM (
        SELECT *, t0 IS NOT NULL AND t1 - t0 <= %(max_gap_s)s AS bridged
        FROM (
            SELECT s.gpu_id, h.hour_s, s.power_w AS power1, s.temp_c AS temp1, s.mem_used_bytes, x.t AS t1,
                   s.epoch_id AS e1, s.energy_j AS energy1, s.util_pct AS util1, s.mem_util_pct AS mem_util1,
                   lag(x.t) OVER w AS t0, lag(s.epoch_id) OVER w AS e0, lag(s.energy_j) OVER w AS energy0,
                   lag(s.power_w) OVER w AS power0, lag(s.util_pct) OVER w AS util0,
                   lag(s.mem_util_pct) OVER w AS mem_util0, lag(s.temp_c) OVER w AS temp0
            FROM {table} s
            CROSS JOIN LATERAL (SELECT date_part('epoch', s.ts) AS t) x
            CROSS JOIN LATERAL (SELECT floor(x.t / {hour}) * {hour} AS hour_s) h
            WHERE s.gpu_id = ANY(%(gpu_ids)s) AND s.ts >= %(first_ts)s AND s.ts <= %(last_ts)s
              AND x.t >= %(first_s)s AND x.t <= %(last_s)s
            -- By hour, then time (the same order): the order the groups read.
            WINDOW w AS (PARTITION BY s.gpu_id ORDER BY h.hour_s, x.t)
        ) neighbours
    ) spans
    -- The requested hours, and the next one for the head of the span that leaves the last.
    WHERE hour_s >= %(first_hour_s)s AND hour_s <= %(last_hour_s)s + {hour}
) parts
GROUP BY gpu_id, hour_s
"""


def gpu_usage_by_hour_sql(
    *, gpu_ids: Sequence[int], hour_runs: Sequence[Sequence[int]], max_gap_s: float, busy_above_util_pct: int = 0
) -> list[tuple[int, energy.GpuHourUsage]]:
    """``(gpu id, usage)`` for every requested hour with data, as ``telemetry.rollup`` gets from the pure function.

    ``hour_runs``: runs of consecutive hour starts (Unix seconds); each run is
    computed from the samples of its own window (``sample_window_s``), as the
    pure function requires. PostgreSQL only, and ``max_gap_s`` at most an hour.
    """
    if max_gap_s > MAX_GAP_S:
        raise ValueError(f"max_gap_s={max_gap_s} is over {MAX_GAP_S}: a span could cross two hour boundaries")
    if not gpu_ids or not hour_runs:
        return []
    sql = _SQL.format(table=f'"{GpuSample._meta.db_table}"', hour=HOUR_S, rates=_rate_columns(), sums=_sum_columns())
    usages: list[tuple[int, energy.GpuHourUsage]] = []
    with transaction.atomic(), connection.cursor() as cursor:
        # Room to sort a claim's samples (~100 bytes each) in memory; no incremental sort (unstable,
        # and never needed: the groups' order is the window's); compiling costs more than it saves on
        # a claim's ~170k rows; one process per claim (rollups scale by running workers side by side,
        # measured faster on two cores than parallel queries, and leave parallel workers to pages).
        cursor.execute("SET LOCAL work_mem = '64MB'")
        cursor.execute("SET LOCAL enable_incremental_sort = off")
        cursor.execute("SET LOCAL jit = off")
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        for run in hour_runs:
            cursor.execute(sql, _run_params(run, gpu_ids, max_gap_s, busy_above_util_pct))
            names = [column.name for column in cursor.description]
            groups = {(row[0], int(row[1])): dict(zip(names, row, strict=True)) for row in cursor.fetchall()}
            usages += _run_usages(groups, run)
    return sorted(usages, key=lambda pair: (pair[0], pair[1].hour_start_s))


def _run_params(run: Sequence[int], gpu_ids: Sequence[int], max_gap_s: float, busy_above: int) -> dict[str, Any]:
    first_s, last_s = sample_window_s(run, max_gap_s=max_gap_s)
    return {
        "first_s": float(first_s),
        "last_s": float(last_s),
        "first_ts": datetime.fromtimestamp(first_s, tz=UTC),
        "last_ts": datetime.fromtimestamp(last_s, tz=UTC),
        "first_hour_s": float(run[0]),
        "last_hour_s": float(run[-1]),
        "gpu_ids": list(gpu_ids),
        "max_gap_s": float(max_gap_s),
        "busy_above": busy_above,
    }


def _run_usages(groups: dict[tuple[int, int], dict[str, Any]], run: Sequence[int]) -> list[tuple[int, Any]]:
    """Each requested hour's group, with the head that the next hour's group carries for it added last."""
    hours = set(run)
    usages = []
    for (gpu_id, hour_s), group in groups.items():
        if hour_s in hours:
            following = groups.get((gpu_id, hour_s + HOUR_S))
            usages.append((gpu_id, _usage(hour_s, group, following["head"] if following else None)))
    return usages


def _then(total: float | None, last: float | None) -> float | None:
    """``total + last``: the running sum with one more term (``None``: no term, or no sum yet)."""
    if total is None:
        return last
    return total if last is None else total + last


def _usage(hour_s: int, group: dict[str, Any], head: list[float | None] | None) -> energy.GpuHourUsage:
    """The pure function's final step (``_GpuTally.usage``) on the sums; ``None`` sums are its zeros."""
    head_s, *head_terms = head or [None] * (len(_RATES) + 1)
    terms = dict(zip(_RATES, head_terms, strict=True))
    integral = {name: _then(group[f"{name}_int"], terms[name]) or 0.0 for name in _RATES}
    known_s = {
        name: _then(group[f"{name}_known_s"], head_s if terms[name] is not None else None) or 0.0 for name in _KNOWN
    }
    energy_j = integral["counter"] + integral["integrated"]
    covered_s = known_s["counter"] + known_s["integrated"]
    return energy.GpuHourUsage(
        hour_start_s=hour_s,
        energy_j=energy_j,
        energy_counter_j=integral["counter"],
        energy_integrated_j=integral["integrated"],
        energy_method=_method(known_s["counter"], known_s["integrated"]),
        observed_s=_then(group["observed_s"], head_s) or 0.0,
        energy_covered_s=covered_s,
        busy_s=integral["busy"],
        mean_power_w=energy_j / covered_s if covered_s > 0 else None,
        max_power_w=group["max_power_w"],
        mean_util_pct=_mean(integral["util"], known_s["util"]),
        mean_mem_util_pct=_mean(integral["mem_util"], known_s["mem_util"]),
        mean_temp_c=_mean(integral["temp"], known_s["temp"]),
        max_temp_c=group["max_temp_c"],
        max_mem_used_bytes=group["max_mem_used_bytes"],
        reset_count=group["reset_count"],
    )


def _mean(integral: float, seconds: float) -> float | None:
    return integral / seconds if seconds > 0 else None


def _method(counter_s: float, integrated_s: float) -> energy.EnergyMethod:
    if counter_s > 0 and integrated_s > 0:
        return energy.EnergyMethod.MIXED
    if counter_s > 0:
        return energy.EnergyMethod.COUNTER
    return energy.EnergyMethod.INTEGRATED if integrated_s > 0 else energy.EnergyMethod.NONE
