"""GPU hourly usage from columns of samples (numpy): the same numbers as ``telemetry.energy.gpu_usage_by_hour``.

The pure function is the specification; this is its translation into array
operations, so that a rollup makes no Python object per sample (why both
exist: ``telemetry.rollup_sql``'s docstring; one property test runs both on
the same random data on PostgreSQL). Every float
operation is the pure function's own, on the same operands:

1. ``ts_s`` is the float Python sees (``datetime.timestamp()``: integer
   microseconds / 1e6, correctly rounded), the hour ``ts_s // 3600 * 3600``
   (numpy's float floor division is Python's);
2. the span between consecutive samples of a GPU is observed when no longer than
   ``max_gap_s``; its rates are the counter's increase with the reset rule
   divided by its seconds, or the trapezoid of power divided by them where a
   counter is missing, and the pair means of busy, utilization, memory
   utilization and temperature;
3. each observed span adds ``rate * seconds in the hour`` to the hour it starts
   in and, when it crosses a boundary, to the next; restarts count in the hour
   of the span's end; maxima are over the hour's samples;
4. a longer span (a gap) that the counter bridges (``energy.gaps_bridged``)
   may cross many hours: these are few, and are added one by one in Python
   with the pure function's own code (``_bridged_sums``), into sums of their own.

The sums are sequential, in span order, from ``0.0`` as the pure function adds
them (``np.add.accumulate`` down a grid with one column per GPU-hour; a span
whose rate is unknown adds ``0.0``, which leaves a sum unchanged): results are
equal to the pure function's to the last bit.

Power is stored as ``real`` (float32); the pure function sees the float that the
database's text form of it reads as. That conversion is the caller's
(``real_to_float``), applied only to the values that need it: each hour's
maximum and the ends of spans that integrate power.

Pure arithmetic: nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from telemetry import energy
from telemetry.collector.wire import ENERGY_BOUND, CounterBound
from telemetry.energy.counters import CounterImpossible, increase_checked
from telemetry.energy.gpu import energy_method_of
from telemetry.energy.hours import HOUR_S, hour_overlaps_s, hours_validated, max_gap_checked, sample_window_s

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

# Size of one grid of sequential sums (term positions x GPU-hours), 8 bytes each, twice (terms and running sums).
_GRID_CELLS = 4_000_000


@dataclass(frozen=True)
class GpuColumns:
    """Samples of one or more GPUs, one entry per sample, in any order (one per GPU and timestamp).

    ``ts_us``: Unix microseconds. ``*_known``: the reading was measured (its value is
    meaningless otherwise). ``power_w``: float32, as stored.
    """

    gpu_id: Ints
    ts_us: Ints
    epoch_id: Ints
    energy_j: Floats
    energy_known: Mask
    power_w: npt.NDArray[np.float32]
    power_known: Mask
    util_pct: Ints
    util_known: Mask
    mem_util_pct: Ints
    mem_util_known: Mask
    mem_used_bytes: Ints
    mem_used_known: Mask
    temp_c: Ints
    temp_known: Mask

    def taken(self, index: npt.NDArray[np.intp] | Mask) -> GpuColumns:
        return GpuColumns(*(getattr(self, name)[index] for name in self.__dataclass_fields__))


RealToFloat = Callable[[npt.NDArray[np.float32]], Floats]


def gpu_usage_by_hour_columns(
    columns: GpuColumns,
    *,
    hour_starts_s: Sequence[int],
    max_gap_s: float,
    real_to_float: RealToFloat,
    max_bridge_s: float = energy.DEFAULT_MAX_BRIDGE_S,
    busy_above_util_pct: int = 0,
    energy_bound: CounterBound = ENERGY_BOUND,
) -> list[tuple[int, energy.GpuHourUsage]]:
    """``(gpu id, usage)`` per requested hour with a sample, sorted, as the rollup gets them from the pure function.

    Raises the pure function's ``CounterImpossible`` (naming the GPU: ``"GPU <id>: …"``, as the rollup
    names it) for the first GPU, and its first interval, whose counter counts more than ``energy_bound``.

    The samples used are those in the hours' window (``sample_window_s``) and
    each GPU's nearest one beyond it on either side within ``max_bridge_s``, as
    ``telemetry.rollup`` gives the pure function; ``max_gap_s`` at most an hour.
    """
    hours = hours_validated(hour_starts_s)
    if max_gap_checked(max_gap_s) > HOUR_S:
        raise ValueError(f"max_gap_s={max_gap_s} is over {HOUR_S}: a span could cross two hour boundaries")
    first_s, last_s = sample_window_s(hours, max_gap_s=max_gap_s)
    cols = _in_order(columns)
    ts_s = cols.ts_us / 1e6
    inside = _window_and_neighbours(cols.gpu_id, ts_s, first_s, last_s, max_bridge_s)
    if not inside.all():
        cols, ts_s = cols.taken(inside), ts_s[inside]
    hour_s = _hour_of(ts_s)
    grid = _HourGrid(cols.gpu_id, hour_s, hours)
    with np.errstate(divide="ignore", invalid="ignore"):  # rates of spans between two GPUs: never used
        spans = _Spans(cols, ts_s, hour_s, max_gap_s, busy_above_util_pct, real_to_float)
    bridges = _bridge_candidates(cols, ts_s, max_gap_s, max_bridge_s)
    _impossible_raised(grid, cols, ts_s, spans, bridges, energy_bound)
    with np.errstate(invalid="ignore"):  # inf x 0 of spans between two GPUs: masked out, never used
        sums = grid.sums(spans)
    bridged = _bridged_sums(grid, cols, ts_s, bridges)
    resets = grid.counts(spans.restarted)
    maxima = _Maxima(grid, cols, real_to_float)
    return [
        (gpu_id, _usage(hour_s, sums[g], bridged.get(g), resets[g], maxima, g))
        for g, (gpu_id, hour_s) in enumerate(grid.cells())
        if grid.samples[g] > 0 or sums[g][_OBSERVED] > 0 or g in bridged
    ]


def _window_and_neighbours(gpu_id: Ints, ts_s: Floats, first_s: float, last_s: float, max_bridge_s: float) -> Mask:
    """The samples (by GPU, then time) in ``[first_s, last_s]``, and each GPU's nearest one either side within
    ``max_bridge_s``: the far end of a gap the counter may bridge."""
    before, after = ts_s < first_s, ts_s > last_s
    same_next = np.append(gpu_id[1:] == gpu_id[:-1], False)
    same_previous = np.insert(gpu_id[1:] == gpu_id[:-1], 0, False)
    last_before = before & ~(same_next & np.append(before[1:], False)) & (ts_s >= first_s - max_bridge_s)
    first_after = after & ~(same_previous & np.insert(after[:-1], 0, False)) & (ts_s <= last_s + max_bridge_s)
    return ~before & ~after | last_before | first_after


@dataclass
class _BridgedSums:
    """One GPU-hour's sums over the gaps the counter bridged (``_GpuTally.bridged``, ``bridged_gap_s``)."""

    energy_j: float = 0.0
    seconds: float = 0.0
    gap_s: float = 0.0


def _bridge_candidates(cols: GpuColumns, ts_s: Floats, max_gap_s: float, max_bridge_s: float) -> Mask:
    """Per span, whether it is a gap the counter bridges (``energy.gaps_bridged`` with ``energy_counter_continues``)."""
    seconds = ts_s[1:] - ts_s[:-1]
    energy_j = cols.energy_j
    return (
        (cols.gpu_id[1:] == cols.gpu_id[:-1])
        & (seconds > max_gap_s)
        & (seconds <= max_bridge_s)
        & cols.energy_known[:-1]
        & cols.energy_known[1:]
        & (cols.epoch_id[1:] == cols.epoch_id[:-1])
        & (energy_j[1:] >= energy_j[:-1])
    )


def _impossible_raised(
    grid: _HourGrid, cols: GpuColumns, ts_s: Floats, spans: _Spans, bridges: Mask, bound: CounterBound
) -> None:
    """Raise as the pure function does for the first GPU (by id) with an interval reaching into a requested
    hour whose counter counts more than ``bound``: its first observed one, else its first bridged one."""
    most = bound.per_s * (spans.seconds + bound.slack_s)
    with np.errstate(invalid="ignore"):  # unknown readings' NaN: masked out
        observed = spans.observed & spans.counter_known & ~(spans.increase <= most)
        rise = cols.energy_j[1:] - cols.energy_j[:-1]
        bridged = bridges & ~(rise <= most)
    observed &= (grid.cell[:-1] >= 0) | (spans.crosses & (grid.cell[1:] >= 0))
    firsts: list[tuple[int, int, int]] = [(int(cols.gpu_id[i]), 0, i) for i in np.flatnonzero(observed).tolist()]
    firsts += [(int(cols.gpu_id[i]), 1, i) for i in np.flatnonzero(bridged).tolist() if _reached(grid, cols, ts_s, i)]
    if not firsts:
        return
    gpu_id, kind, i = min(firsts)
    increase = float(spans.increase[i]) if kind == 0 else float(rise[i])
    try:
        increase_checked(
            increase,
            float(ts_s[i]),
            float(ts_s[i + 1]),
            bound=bound,
            name="energy_j",
            hours=_reached(grid, cols, ts_s, i),
        )
    except CounterImpossible as error:
        raise error.owned(f"GPU {gpu_id}") from None


def _reached(grid: _HourGrid, cols: GpuColumns, ts_s: Floats, i: int) -> list[int]:
    """The requested hours of its GPU that the span from sample ``i`` adds to."""
    hours = [hour for hour, _ in hour_overlaps_s(float(ts_s[i]), float(ts_s[i + 1]))]
    cells = grid.key(np.repeat(cols.gpu_id[i], len(hours)), np.array(hours, dtype=np.float64))
    return [hour for hour, cell in zip(hours, cells.tolist(), strict=True) if cell >= 0]


def _bridged_sums(grid: _HourGrid, cols: GpuColumns, ts_s: Floats, candidates: Mask) -> dict[int, _BridgedSums]:
    """Per cell, the sums of the gaps bridged into it, added in span order as the pure function adds them."""
    energy_j = cols.energy_j
    sums: dict[int, _BridgedSums] = {}
    for i in np.flatnonzero(candidates).tolist():
        start_s, end_s = float(ts_s[i]), float(ts_s[i + 1])
        rate = (float(energy_j[i + 1]) - float(energy_j[i])) / (end_s - start_s)
        for hour, overlap_s in hour_overlaps_s(start_s, end_s):
            cell = int(grid.key(cols.gpu_id[i : i + 1], np.array([float(hour)]))[0])
            if cell >= 0:
                cell_sums = sums.setdefault(cell, _BridgedSums())
                cell_sums.energy_j += rate * overlap_s
                cell_sums.seconds += overlap_s
                cell_sums.gap_s = max(cell_sums.gap_s, end_s - start_s)
    return sums


def _in_order(cols: GpuColumns) -> GpuColumns:
    """The samples by GPU, then time (as they usually come: then nothing is copied); one per GPU and time."""
    gpu, ts = cols.gpu_id, cols.ts_us
    later = (gpu[1:] > gpu[:-1]) | ((gpu[1:] == gpu[:-1]) & (ts[1:] > ts[:-1]))
    if not later.all():
        # One key, (GPU rank, microseconds from the first): nearly sorted, which a stable sort (timsort) runs through.
        rank = np.cumsum(np.diff(gpu, prepend=gpu[0]) != 0) if (np.diff(gpu) >= 0).all() else None
        if rank is not None and int(ts.max() - ts.min()) < 1 << 44 and int(rank[-1]) < 1 << 18:
            order = np.argsort((rank << 44) + (ts - ts.min()), kind="stable")
        else:
            order = np.lexsort((ts, gpu))
        cols = cols.taken(order)
        gpu, ts = cols.gpu_id, cols.ts_us
        if np.any((gpu[1:] == gpu[:-1]) & (ts[1:] == ts[:-1])):
            raise ValueError("two samples of one GPU share a timestamp")
    return cols


def _hour_of(ts_s: Floats) -> Floats:
    return np.floor_divide(ts_s, HOUR_S) * HOUR_S


# Rows of the sums: what ``_GpuTally.span_add`` adds up.
_OBSERVED = 0
_RATES = ("counter", "integrated", "busy", "util", "mem_util", "temp")
_INTEGRAL = {name: 1 + i for i, name in enumerate(_RATES)}
_KNOWN_S = {name: 1 + len(_RATES) + i for i, name in enumerate(_RATES)}
_ROWS = 1 + 2 * len(_RATES)


class _HourGrid:
    """The requested GPU-hours ("cells"), numbered ``gpu rank * hours + hour index``, and the samples in each.

    Samples are in (gpu, time) order, so each cell's samples are contiguous and
    cells ascend: a sample's rank in its cell is the position of the span that
    starts at it among the spans added to the cell.
    """

    def __init__(self, gpu_id: Ints, hour_s: Floats, hours: tuple[int, ...]) -> None:
        self.gpus = gpu_id[np.flatnonzero(np.diff(gpu_id, prepend=-1))]  # sorted: the first of each
        self.hours = np.array(hours, dtype=np.float64)
        self.size = len(self.gpus) * len(hours)
        self.cell = self.key(gpu_id, hour_s)  # per sample, -1 outside the requested hours
        self.member = np.flatnonzero(self.cell >= 0)  # the samples in a cell, in order
        self.starts = np.searchsorted(self.cell[self.member], np.arange(self.size + 1))
        self.samples = np.diff(self.starts).tolist()
        self.rank = np.zeros(len(gpu_id), dtype=np.intp)  # per sample, its place in its cell
        self.rank[self.member] = np.arange(len(self.member)) - self.starts[self.cell[self.member]]

    def key(self, gpu_id: Ints, hour_s: Floats) -> Ints:
        """Each entry's cell, or -1 where the hour is not requested."""
        at = np.minimum(np.searchsorted(self.hours, hour_s), len(self.hours) - 1)
        key = np.searchsorted(self.gpus, gpu_id) * len(self.hours) + at
        return np.where(self.hours[at] == hour_s, key, -1)

    def cells(self) -> list[tuple[int, int]]:
        return [(int(gpu), int(hour)) for gpu in self.gpus for hour in self.hours]

    def counts(self, spans: Mask) -> list[int]:
        """Per cell, the spans that end in it (its end sample's cell)."""
        cell = self.cell[1:][spans]
        return np.bincount(cell[cell >= 0], minlength=self.size).tolist()

    def sums(self, spans: _Spans) -> list[list[float]]:
        """Per cell, each of the ``_ROWS`` sums of the spans' parts in it, added one at a time in span order from 0.0.

        A cell's grid column holds 0.0 (the start), the head of the span that
        crosses in from the hour before (or 0.0), then the first part of each
        span that starts in it, in order; padding is 0.0, which changes no sum.
        Spans that start outside the batch's cells go to a last column, dropped.
        """
        totals = np.zeros((_ROWS, self.size))
        crossing = np.flatnonzero(spans.crosses)
        crossing = crossing[self.cell[crossing + 1] >= 0]  # the heads of spans crossing into a cell
        cross_cell = self.cell[crossing + 1]
        rows = spans.rows(crossing)
        start_cell, start_rank = self.cell[:-1], self.rank[:-1]
        cell = 0
        while cell < self.size:  # batches of cells whose grid fits the memory allowed
            end = self._batch_end(cell)
            depth = 2 + max(self.samples[cell:end])
            inside = (start_cell >= cell) & (start_cell < end)
            column = np.where(inside, start_cell - cell, end - cell)
            at = np.where(inside, 2 + start_rank, 0)
            crossed = (cross_cell >= cell) & (cross_cell < end)
            for row, (first_terms, cross_terms) in rows.items():
                grid = np.zeros((depth, end - cell + 1))
                grid[at, column] = first_terms
                grid[1, cross_cell[crossed] - cell] = cross_terms[crossed]
                totals[row, cell:end] = np.add.accumulate(grid, axis=0)[-1, :-1]
            cell = end
        for row, source in spans.same_rows.items():
            totals[row] = totals[source]
        return totals.T.tolist()

    def _batch_end(self, cell: int) -> int:
        end, depth = cell + 1, self.samples[cell]
        while end < self.size and max(depth, self.samples[end]) * (end + 1 - cell) <= _GRID_CELLS:
            depth = max(depth, self.samples[end])
            end += 1
        return end


class _Spans:
    """The span from each sample to the next (named by its start; bridged only within a GPU and ``max_gap_s``)."""

    def __init__(
        self,
        cols: GpuColumns,
        ts_s: Floats,
        hour_s: Floats,
        max_gap_s: float,
        busy_above: int,
        real_to_float: RealToFloat,
    ) -> None:
        self.cols = cols
        self.start_s, self.end_s = ts_s[:-1], ts_s[1:]
        self.seconds = self.end_s - self.start_s
        self.observed = (cols.gpu_id[1:] == cols.gpu_id[:-1]) & (self.seconds <= max_gap_s)
        self.hour_s = hour_s[:-1]
        self.crosses = self.observed & (self.hour_s + HOUR_S < self.end_s)
        self.rates = self._rates(busy_above, real_to_float)
        self.same_rows: dict[int, int] = {}

    def _pair(self, values: npt.NDArray[Any], known: Mask) -> tuple[Floats, Mask]:
        """The pair mean of a reading over each span, and whether both ends know it."""
        return (values[:-1] + values[1:]) / 2, known[:-1] & known[1:]

    def _rates(self, busy_above: int, real_to_float: RealToFloat) -> dict[str, tuple[Floats, Mask]]:
        c = self.cols
        energy_j, energy_known = c.energy_j, c.energy_known
        counter_known = energy_known[:-1] & energy_known[1:]
        self.restarted = self.observed & (
            (c.epoch_id[1:] != c.epoch_id[:-1]) | (counter_known & (energy_j[1:] < energy_j[:-1]))
        )
        increase = np.where(self.restarted, energy_j[1:], energy_j[1:] - energy_j[:-1])
        self.increase, self.counter_known = increase, counter_known  # the reset rule's increase, where known
        integrated_known = self.observed & ~counter_known & c.power_known[:-1] & c.power_known[1:]
        rates = {"counter": (increase / self.seconds, counter_known)}
        if integrated_known.any():
            power = self._power_read(integrated_known, real_to_float)
            rates["integrated"] = ((power[:-1] + power[1:]) / 2 * self.seconds / self.seconds, integrated_known)
        busy = (c.util_pct > busy_above).astype(np.float64)
        rates["busy"] = self._pair(busy, c.util_known)
        rates["util"] = self._pair(c.util_pct, c.util_known)
        rates["mem_util"] = self._pair(c.mem_util_pct, c.mem_util_known)
        rates["temp"] = self._pair(c.temp_c, c.temp_known)
        return rates

    def _power_read(self, integrated: Mask, real_to_float: RealToFloat) -> Floats:
        """Power as the pure function reads it, at both ends of the spans that integrate it (0.0 elsewhere)."""
        power = np.zeros(len(self.cols.power_w))
        ends = np.zeros(len(power), dtype=bool)
        ends[:-1] |= integrated
        ends[1:] |= integrated
        values, inverse = np.unique(self.cols.power_w[ends], return_inverse=True)
        power[ends] = real_to_float(values)[inverse]
        return power

    def rows(self, crossing: npt.NDArray[np.intp]) -> dict[int, tuple[Floats, Floats]]:
        """Per sum row, the terms of every span in the hour it starts in (0.0 if not bridged), and of the
        spans ``crossing`` in the next. A row equal to another is left out (``same_rows``)."""
        start, end, hour = self.start_s, self.end_s, self.hour_s
        first_s = np.where(self.observed, np.minimum(end, hour + HOUR_S) - np.maximum(start, hour), 0.0)
        start, end, hour = start[crossing], end[crossing], hour[crossing]
        cross_s = np.minimum(end, hour + 2 * HOUR_S) - np.maximum(start, hour + HOUR_S)
        rows = {_OBSERVED: (first_s, cross_s)}
        for name, (rate, known) in self.rates.items():
            on, on_cross = known & self.observed, known[crossing]
            rows[_INTEGRAL[name]] = (
                np.where(on, rate * first_s, 0.0),
                np.where(on_cross, rate[crossing] * cross_s, 0.0),
            )
            if name == "busy":  # busy's seconds are never used
                continue
            if (on | ~self.observed).all() and on_cross.all():  # known wherever observed: the same additions
                self.same_rows[_KNOWN_S[name]] = _OBSERVED
            else:
                rows[_KNOWN_S[name]] = (np.where(on, first_s, 0.0), np.where(on_cross, cross_s, 0.0))
        return rows


class _Maxima:
    """Per cell, the maxima of power, temperature and memory over its samples (``None``: none measured)."""

    def __init__(self, grid: _HourGrid, cols: GpuColumns, real_to_float: RealToFloat) -> None:
        self.grid = grid
        power = self._max(np.where(cols.power_known, cols.power_w.astype(np.float64), -np.inf), -np.inf)
        read = np.full(grid.size, np.nan)
        known = power > -np.inf
        if known.any():
            read[known] = real_to_float(power[known].astype(np.float32))
        self.power_w = [None if np.isnan(v) else v for v in read.tolist()]
        self.temp_c = self._int_max(cols.temp_c, cols.temp_known)
        self.mem_used_bytes = self._int_max(cols.mem_used_bytes, cols.mem_used_known)

    def _max(self, values: npt.NDArray[Any], none: Any) -> npt.NDArray[Any]:
        """Per cell, the largest of ``values`` (``none`` for a cell without samples)."""
        grid = self.grid
        out = np.full(grid.size, none, dtype=values.dtype)
        filled = np.flatnonzero(np.diff(grid.starts) > 0)
        if len(filled):
            out[filled] = np.maximum.reduceat(values[grid.member], grid.starts[filled])
        return out

    def _int_max(self, values: Ints, known: Mask) -> list[int | None]:
        lowest = np.iinfo(np.int64).min  # below any reading (int32 at most)
        out = self._max(np.where(known, values.astype(np.int64), lowest), lowest)
        return [None if v == lowest else v for v in out.tolist()]


def _usage(
    hour_s: int, sums: list[float], bridged: _BridgedSums | None, reset_count: int, maxima: _Maxima, g: int
) -> energy.GpuHourUsage:
    """The pure function's final step (``_GpuTally.usage``) on the sums."""
    integral = {name: sums[_INTEGRAL[name]] for name in _RATES}
    known_s = {name: sums[_KNOWN_S[name]] for name in _RATES}
    bridged = bridged or _BridgedSums()
    energy_j = integral["counter"] + integral["integrated"] + bridged.energy_j
    covered_s = known_s["counter"] + known_s["integrated"] + bridged.seconds
    return energy.GpuHourUsage(
        hour_start_s=hour_s,
        energy_j=energy_j,
        energy_counter_j=integral["counter"],
        energy_integrated_j=integral["integrated"],
        energy_method=energy_method_of(
            counter_s=known_s["counter"] + bridged.seconds, integrated_s=known_s["integrated"]
        ),
        observed_s=sums[_OBSERVED],
        energy_covered_s=covered_s,
        busy_s=integral["busy"],
        mean_power_w=energy_j / covered_s if covered_s > 0 else None,
        max_power_w=maxima.power_w[g],
        mean_util_pct=_mean(integral["util"], known_s["util"]),
        mean_mem_util_pct=_mean(integral["mem_util"], known_s["mem_util"]),
        mean_temp_c=_mean(integral["temp"], known_s["temp"]),
        max_temp_c=maxima.temp_c[g],
        max_mem_used_bytes=maxima.mem_used_bytes[g],
        reset_count=reset_count,
        energy_bridged_j=bridged.energy_j,
        bridged_s=bridged.seconds,
        bridged_gap_s=bridged.gap_s,
    )


def _mean(integral: float, seconds: float) -> float | None:
    return integral / seconds if seconds > 0 else None
