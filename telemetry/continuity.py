"""A batch's counters against the last stored sample of each GPU and endpoint, before the batch is stored.

The wire format bounds every counter increase between two rows of one batch
(``wire.counter_step_check``); the first reading of each GPU and endpoint in a
batch follows the last one stored (the previous batch), and the rollup counts
that increase too. So it is held to the same bound here: the stored sample
just before the batch's first row of each GPU (endpoint), within the bridge
limit (no farther apart does the rollup pair two samples), one statement for
all of them: per GPU one indexed lookup on (GPU, ts) (on PostgreSQL, the day
partitions it spans), whatever the batch's size. An increase beyond the bound
refuses the whole batch (422) naming the row, the GPU or endpoint and the bound.
An endpoint's reading is bounded by the GPUs its own entry in the batch declares.
The node meter's energy counter is held the same way to the energy bound (the
rollup reads the meter as a GPU), against the node's last stored reading.
A restart (a drop, a new epoch) across a gap longer than the rollup's max gap
is not held to it: the rollup counts none of it (the gap is missing), and a
counter that kept running under a new epoch name is then accepted again once
that much time has passed, rather than refused for a day.

What only samples stored *after* a batch would show (a backfill landing before
stored rows) is the rollup's to find: it parks that node-hour
(``telemetry.energy``'s :class:`~telemetry.energy.counters.CounterImpossible`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from telemetry.collector import wire
from telemetry.models import GpuSample, NodeMeterSample, ServingSample
from telemetry.nearest import Probe, nearest_rows

_HISTOGRAMS = ("ttft_bucket_counts", "itl_bucket_counts")
_SERVING_READINGS = ("prompt_tokens", "generation_tokens", "requests", "cached_prompt_tokens", *_HISTOGRAMS)


def stored_steps_check(
    *,
    node_id: int,
    batch: wire.Batch,
    gpu_samples: dict[str, list[Any]],
    gpu_refs: list[tuple[int, int]],
    serving_samples: dict[str, list[Any]],
    endpoint_refs: list[tuple[int, int]],
) -> None:
    """Raise ``WireError`` (422) where a batch's first reading of a counter is more than its bound above
    the last stored one. ``*_samples``: the columns kept (with ``at``); ``*_refs``: (owner id, epoch id)
    per entry of ``batch.gpus`` / ``batch.endpoints``, all of node ``node_id``."""
    gpu_what = {gpu_refs[i][0]: f"GPU {ref.uuid}" for i, ref in enumerate(batch.gpus)}
    _owner_check(
        node_id, gpu_samples, "gpu", gpu_refs, GpuSample, "gpu_id", ("energy_j",), "gpu_samples",
        lambda entry: {"energy_j": wire.ENERGY_BOUND}, gpu_what, settings.TELEMETRY_GPU_MAX_GAP_S,
    )  # fmt: skip
    endpoints = {endpoint_refs[i][0]: ref for i, ref in enumerate(batch.endpoints)}
    # An endpoint's reading is bounded by the GPUs its own entry declares (it may be declared twice, on other GPUs).
    declared = [wire.serving_bounds(len(ref.gpu_uuids)) for ref in batch.endpoints]
    _owner_check(
        node_id, serving_samples, "endpoint", endpoint_refs, ServingSample, "endpoint_id", _SERVING_READINGS,
        "serving_samples", declared.__getitem__,
        {owner: f"endpoint {ref.url}" + (f" ({ref.model})" if ref.model else "") for owner, ref in endpoints.items()},
        settings.TELEMETRY_SERVING_MAX_GAP_S,
    )  # fmt: skip


def _owner_check(
    node_id: int, cols: dict[str, list[Any]], ref_column: str, refs: list[tuple[int, int]], model: Any,
    owner_column: str, names: Sequence[str], where: str, bounds_of: Callable[[int], dict[str, wire.CounterBound]],
    what: dict[int, str], restart_within_s: float,
) -> None:  # fmt: skip
    """``bounds_of``: per entry of the batch's GPUs (endpoints), the bounds of a reading of it."""
    firsts = _first_rows(cols, ref_column, refs)
    if not firsts:
        return
    stored = _stored_before(
        model, node_id, owner_column, names, {owner: cols["at"][row] for owner, row in firsts.items()}
    )
    for owner, row in firsts.items():
        previous = stored.get(owner)
        if previous is None:
            continue
        at, epoch_id, values = previous
        for name in names:
            before, after = _reading(name, values[name]), _first_reading(cols, ref_column, refs, owner, row, name)
            if before is None or after is None:
                continue
            wire.counter_step_check(
                (at.timestamp(), before, epoch_id),
                (after[0], after[1], after[2]),
                bound=bounds_of(cols[ref_column][after[3]])[name],
                where=f"{where}.{name}[{after[3]}]",
                what=f"{what[owner]} (against its sample stored at {at.isoformat()})",
                restart_within_s=restart_within_s,
            )


def node_meter_steps_check(*, node_id: int, epoch: str, readings: dict[str, list[Any]]) -> None:
    """Raise ``WireError`` (422) where a batch's first energy reading of the node's meter is more than
    ``wire.ENERGY_BOUND`` (the rollup's bound for the meter) above the last reading stored before the batch's
    first, as for a GPU. ``readings``: the meter's columns kept (with ``at``), all of epoch ``epoch``. One
    statement, only for a batch whose meter reads energy."""
    rows = [row for row, energy_j in enumerate(readings["energy_j"]) if energy_j is not None]
    if not rows:
        return
    first_at, row = min(readings["at"]), min(rows, key=readings["ts"].__getitem__)
    bridge = timedelta(seconds=settings.TELEMETRY_MAX_BRIDGE_S)
    previous = (
        NodeMeterSample.objects.filter(node_id=node_id, ts__lt=first_at, ts__gte=first_at - bridge)
        .order_by("-ts")
        .values_list("ts", "epoch", "energy_j")
        .first()
    )
    if previous is None:
        return
    at, stored_epoch, stored_j = previous
    if stored_j is None:
        return
    wire.counter_step_check(
        (at.timestamp(), stored_j, stored_epoch),
        (readings["ts"][row], readings["energy_j"][row], epoch),
        bound=wire.ENERGY_BOUND,
        where=f"node_meter.energy_j[{row}]",
        what=f"the node meter (against its reading stored at {at.isoformat()})",
        restart_within_s=settings.TELEMETRY_GPU_MAX_GAP_S,
    )


def _first_rows(cols: dict[str, list[Any]], ref_column: str, refs: list[tuple[int, int]]) -> dict[int, int]:
    """Per owner, the row of its earliest sample in the batch."""
    firsts: dict[int, int] = {}
    for row, ref in enumerate(cols[ref_column]):
        owner = refs[ref][0]
        first = firsts.get(owner)
        if first is None or cols["at"][row] < cols["at"][first]:
            firsts[owner] = row
    return firsts


def _first_reading(
    cols: dict[str, list[Any]], ref_column: str, refs: list[tuple[int, int]], owner: int, first: int, name: str
) -> tuple[float, wire.Reading, int, int] | None:
    """The owner's earliest reading of ``name`` in the batch: (ts, reading, epoch id, row); its first row's when
    it has one (the usual case: no scan), else the earliest of the others."""
    rows = [first] if cols[name][first] is not None else [
        row for row, ref in enumerate(cols[ref_column]) if refs[ref][0] == owner and cols[name][row] is not None
    ]  # fmt: skip
    if not rows:
        return None
    row = min(rows, key=cols["ts"].__getitem__)
    reading = _reading(name, cols[name][row])
    assert reading is not None  # noqa: S101 - rows with a reading only
    return cols["ts"][row], reading, refs[cols[ref_column][row]][1], row


def _reading(name: str, value: Any) -> wire.Reading | None:
    """A stored or sent value as the wire's rule reads it (a histogram: its counts per bucket)."""
    if value is None or name not in _HISTOGRAMS:
        return value
    cumulative = json.loads(value) if isinstance(value, str) else value  # SQLite returns JSON as text
    return tuple(now - then for then, now in zip([0, *cumulative[:-1]], cumulative, strict=True))


def _stored_before(
    model: Any, node_id: int, owner_column: str, names: Sequence[str], firsts: dict[int, datetime]
) -> dict[int, tuple[datetime, int, dict[str, Any]]]:
    """Per owner, its last stored sample before ``firsts[owner]`` within the bridge limit: (ts, epoch id, values).
    One statement for every owner (``telemetry.nearest``)."""
    owners = list(firsts)
    rows = nearest_rows(
        model, node_id=node_id, owner_column=owner_column, columns=("epoch_id", *names),
        probes=[Probe(owner, firsts[owner]) for owner in owners],
    )  # fmt: skip
    stored = {}
    for owner, row in zip(owners, rows, strict=True):
        if row is not None:
            ts, epoch_id, *values = row
            stored[owner] = (ts, epoch_id, dict(zip(names, values, strict=True)))
    return stored
