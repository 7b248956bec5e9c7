"""The oracle: what the simulated collectors produced against what the server stored and computed.

* Raw samples: the stored rows are exactly the recorded ones, value for value
  (power as PostgreSQL's ``real`` holds it, memory in whole MiB).
* Hourly energy per GPU and tokens per node: equal to what the recorded
  counters prove (deltas within an epoch, the new value after a restart). An
  hour boundary that falls inside a gap between samples is interpolated by the
  server, so such neighbouring hours are compared as one sum.
* The ledger and the hourly usage: equal, field for field, to a full
  recomputation from the raw samples.
* Re-sent batches: every batch whose answer the proxy lost was sent again and
  answered as all duplicates (nothing stored twice).
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import struct
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HOUR_S = 3600
MIB = 1024 * 1024


@dataclass
class Recorded:
    """What one collector produced and heard."""

    hostname: str
    gpu: dict[tuple[str, float], tuple[Any, ...]] = field(default_factory=dict)  # (uuid, ts) -> epoch, values
    serving: dict[tuple[str, float], tuple[Any, ...]] = field(default_factory=dict)  # (url, ts) -> epoch, counters
    batches: dict[str, set[tuple[str, str, float]]] = field(default_factory=dict)  # batch id -> its row keys
    answers: list[dict[str, Any]] = field(default_factory=list)
    unspooled_candidates: set[str] = field(default_factory=set)  # last batch recorded before each restart


def load_recorded(record: Path, hostname: str) -> Recorded:
    out = Recorded(hostname)
    for path in sorted((record / "batches").glob("*.json.gz")):
        batch = json.loads(gzip.decompress(path.read_bytes()))
        keys: set[tuple[str, str, float]] = set()
        g = batch["gpu_samples"]
        for i, ref in enumerate(g["gpu"]):
            gpu = batch["gpus"][ref]
            key = (gpu["uuid"], round(g["ts"][i], 3))
            out.gpu[key] = (gpu["epoch"], g["energy_j"][i], g["power_w"][i], g["util_pct"][i],
                            g["mem_util_pct"][i], g["mem_used_bytes"][i], g["temp_c"][i])  # fmt: skip
            keys.add(("gpu", *key))
        s = batch["serving_samples"]
        for i, ref in enumerate(s["endpoint"]):
            endpoint = batch["endpoints"][ref]
            key = (endpoint["url"], round(s["ts"][i], 3))
            out.serving[key] = (endpoint["epoch"], s["prompt_tokens"][i], s["generation_tokens"][i], s["requests"][i])
            keys.add(("serving", *key))
        out.batches[batch["batch_id"]] = keys
    answers = record / "answers.jsonl"
    out.answers = [json.loads(line) for line in answers.read_text().splitlines()] if answers.exists() else []
    restarts = record / "restarts.jsonl"
    if restarts.exists():
        out.unspooled_candidates = {json.loads(line)["last_batch_id"] for line in restarts.read_text().splitlines()}
    return out


def _float32(value: float | None) -> float | None:
    return None if value is None else struct.unpack("f", struct.pack("f", value))[0]


def check_raw(recorded: Recorded, dump: dict[str, Any], problems: list[str]) -> dict[str, int]:
    """Stored raw samples of this node against the recorded ones."""
    host = recorded.hostname
    stored_gpu = {(r[1], round(r[3], 3)): r for r in dump["gpu_samples"] if r[0] == host}
    stored_serving = {(r[1], round(r[3], 3)): r for r in dump["serving_samples"] if r[0] == host}
    missing = {("gpu", *k) for k in recorded.gpu.keys() - stored_gpu.keys()}
    missing |= {("serving", *k) for k in recorded.serving.keys() - stored_serving.keys()}
    lost_batches = [b for b in recorded.unspooled_candidates if recorded.batches.get(b, set()) & missing]
    for batch_id in lost_batches:  # recorded, then killed before the spool had it: lost whole, and only then
        if recorded.batches[batch_id] <= missing:
            missing -= recorded.batches[batch_id]
    if missing:
        problems.append(f"{host}: {len(missing)} produced rows not stored, e.g. {sorted(missing)[:3]}")
    extra = (stored_gpu.keys() - recorded.gpu.keys()) | (stored_serving.keys() - recorded.serving.keys())
    if extra:
        problems.append(f"{host}: {len(extra)} stored rows never produced, e.g. {sorted(extra)[:3]}")
    differ = [k for k in recorded.gpu.keys() & stored_gpu.keys() if not _gpu_equal(recorded.gpu[k], stored_gpu[k])]
    differ += [k for k in recorded.serving.keys() & stored_serving.keys()
               if tuple(stored_serving[k][2:3]) + tuple(stored_serving[k][4:]) != recorded.serving[k]]  # fmt: skip
    if differ:
        problems.append(f"{host}: {len(differ)} stored rows differ from what was produced, e.g. {sorted(differ)[:3]}")
    return {
        "gpu_rows": len(stored_gpu),
        "serving_rows": len(stored_serving),
        "batches_lost_unspooled": len(lost_batches),
    }


def _gpu_equal(produced: tuple[Any, ...], stored: list[Any]) -> bool:
    epoch, energy_j, power_w, util, mem_util, mem_bytes, temp = produced
    _, _, s_epoch, _, s_energy, s_power, s_util, s_mem_util, s_mem_mib, s_temp = stored
    mem_ok = (mem_bytes is None) == (s_mem_mib is None) and (mem_bytes is None or abs(s_mem_mib - mem_bytes / MIB) <= 1)
    return (epoch, energy_j, _float32(power_w), util, mem_util, temp) == (
        s_epoch, s_energy, _float32(s_power), s_util, s_mem_util, s_temp
    ) and mem_ok  # fmt: skip


def counter_hours(points: list[tuple[float, str, float]]) -> dict[tuple[int, ...], float]:
    """What a counter proves per hour: ``points`` are (ts, epoch, value), sorted.

    Keys are tuples of hour starts: hours whose shared boundary falls between two
    samples are merged (the server splits such an interval by interpolation).
    """
    groups: list[list[Any]] = []  # [hours, total]
    for (t0, e0, v0), (t1, e1, v1) in itertools.pairwise(points):
        increase = v1 - v0 if e0 == e1 else v1
        first, last = int(t0 // HOUR_S * HOUR_S), int(math.ceil(t1 / HOUR_S) * HOUR_S - HOUR_S)
        hours = list(range(first, max(first, last) + 1, HOUR_S))
        if groups and groups[-1][0][-1] >= hours[0]:
            groups[-1][0] = sorted(set(groups[-1][0]) | set(hours))
            groups[-1][1] += increase
        else:
            groups.append([hours, increase])
    return {tuple(hours): total for hours, total in groups}


def _grouped(per_hour: dict[int, float], keys: Iterable[tuple[int, ...]]) -> dict[tuple[int, ...], float]:
    return {hours: math.fsum(per_hour.get(h, 0.0) for h in hours) for hours in keys}


def check_hours(recorded: Recorded, dump: dict[str, Any], problems: list[str]) -> int:
    """Hourly energy per GPU and tokens per node against the recorded counters; returns the hours compared."""
    usage_index = {name: i for i, name in enumerate(dump["gpu_usage_fields"])}
    energy_by_gpu: dict[str, dict[int, float]] = defaultdict(dict)
    for row in dump["gpu_usage"]:
        energy_by_gpu[row[0]][int(row[usage_index["hour_start"]])] = row[usage_index["energy_j"]]
    compared = 0
    for uuid in {k[0] for k in recorded.gpu}:
        points = sorted((ts, v[0], v[1]) for (u, ts), v in recorded.gpu.items() if u == uuid)
        compared += _compare(
            f"{recorded.hostname} {uuid} energy_j", counter_hours(points), energy_by_gpu[uuid], problems
        )
    endpoint_index = {name: i for i, name in enumerate(dump["endpoint_usage_fields"])}
    for kind, column in (("prompt_tokens", 1), ("generation_tokens", 2)):
        stored: dict[int, float] = Counter()
        for row in dump["endpoint_usage"]:
            if row[0] == recorded.hostname:
                stored[int(row[endpoint_index["hour_start"]])] += row[endpoint_index[kind]]
        points = sorted((ts, v[0], v[column]) for (_url, ts), v in recorded.serving.items())
        compared += _compare(f"{recorded.hostname} {kind}", counter_hours(points), stored, problems)
    return compared


def _compare(what: str, truth: dict[tuple[int, ...], float], stored: dict[int, float], problems: list[str]) -> int:
    for hours, expected in _grouped(stored, truth).items():
        if not math.isclose(expected, truth[hours], rel_tol=1e-9, abs_tol=1e-6):
            problems.append(f"{what} over hours {hours}: stored {expected!r}, the counters prove {truth[hours]!r}")
    return len(truth)


def check_recomputed(live: dict[str, Any], recomputed: dict[str, Any], problems: list[str]) -> dict[str, int]:
    """The usage and ledger the running system computed, field for field, against a full recomputation; and the
    ledger's site-hours against its lines, in both."""
    counts = {}
    for part in ("gpu_usage", "endpoint_usage", "ledger"):
        before, after = sorted(map(tuple, live[part])), sorted(map(tuple, recomputed[part]))
        if before != after:
            differ = sorted(set(before) ^ set(after))[:2]
            problems.append(f"{part}: {len(set(before) ^ set(after))} rows differ from a full recomputation: {differ}")
        counts[part] = len(before)
    for name, dump in (("live", live), ("recomputed", recomputed)):
        for problem in dump.get("site_hours_problems", [])[:3]:
            problems.append(f"site-hours ({name}): {problem}")
    return counts


def check_resent(recorded: list[Recorded], lost_batch_ids: list[str], problems: list[str]) -> dict[str, int]:
    """Each batch whose answer was lost was sent again and answered as all duplicates."""
    acks = {a["batch_id"]: a for r in recorded for a in r.answers if a["kind"] == "ack"}
    for batch_id in lost_batch_ids:
        ack = acks.get(batch_id)
        if ack is None:
            problems.append(f"batch {batch_id} (answer lost by the proxy) was never acknowledged")
        elif sum((ack["stored"] or {}).values()) or not sum((ack["duplicates"] or {}).values()):
            problems.append(f"batch {batch_id} (answer lost by the proxy) re-sent, but answered {ack}")
    answers = [a for r in recorded for a in r.answers]
    all_duplicates = [a for a in answers if a["kind"] == "ack" and sum((a["duplicates"] or {}).values())
                      and not sum((a["stored"] or {}).values())]  # fmt: skip
    return {
        "requests": len(answers),
        "acknowledged": sum(a["kind"] == "ack" for a in answers),
        "refused_4xx": sum(a["kind"] == "reject" for a in answers),
        "failed_retried": sum(a["kind"] in ("retry", "wait") for a in answers),
        "resent_seen_as_duplicates": len(all_duplicates),
        "answers_lost_by_proxy": len(lost_batch_ids),
        # a re-sent batch can lose its answer again (the proxy loses the next few requests): counted once
        "batches_whose_answer_was_lost": len(set(lost_batch_ids)),
    }
