"""The ingest wire format, version 1: what a collector sends and the server accepts.

Shared by both sides: the collector builds batches with :func:`batch_encode`,
the server parses them with :func:`batch_decode`. Standard library only (it
uses ``orjson`` when installed, for speed), so the collector stays free of the
server's dependencies.

A batch is one JSON object, optionally gzip-compressed (``Content-Encoding:
gzip``). Samples are columnar: one list per field, all of one length, so a
batch of 80 samples is 10 short lists, not 80 dictionaries::

    {
      "version": 1,
      "batch_id": "0b6c…",                 # collector-assigned, unique; for logs
      "sent_at": 1764400000.0,             # Unix seconds, when the batch was built
      "collector": {"version": "1.0", "hostname": "gpu-01", "dropped_batches": 0,
                    "spool_bytes": 0, "sample_interval_s": 1.0},
      "gpus": [                            # referenced by index from gpu_samples.gpu
        {"uuid": "GPU-…", "index": 0, "name": "NVIDIA H100 80GB HBM3",
         "energy_counter_supported": true, "epoch": "<boot id>/<driver load time>"}
      ],
      "gpu_samples": {
        "gpu": [0, 0], "ts": [1764399990.0, 1764399991.0],
        "power_w": [412.5, null], "energy_j": [123456.789, null],
        "util_pct": [97, null], "mem_util_pct": [41, null],
        "mem_used_bytes": [68719476736, null], "temp_c": [61, null]
      },
      "endpoints": [                       # referenced by index from serving_samples.endpoint
        {"url": "http://127.0.0.1:8000/metrics", "kind": "vllm", "model": "meta-llama/…",
         "gpu_uuids": ["GPU-…"], "epoch": "<server start time>",
         "ttft_bucket_bounds_s": [0.001, 0.005, …, 10.0],   # +Inf is implicit
         "itl_bucket_bounds_s": [0.01, 0.025, …, 80.0]}     # optional: inter-token latency
      ],
      "serving_samples": {
        "endpoint": [0], "ts": [1764399990.0],
        "prompt_tokens": [123456], "generation_tokens": [654321], "requests": [789],
        "cached_prompt_tokens": [23456],           # optional column: prefix-cache hits, within prompt_tokens
        "ttft_bucket_counts": [[0, 3, …, 789]],   # cumulative, one per bound, +Inf last
        "ttft_sum_s": [41.2],
        "itl_bucket_counts": [[0, 5, …, 654000]],  # optional: inter-token latency, like TTFT's
        "itl_sum_s": [9120.5]                      # optional
      }
    }

An endpoint is one LLM model at one URL: a server serving several models
(vLLM's ``model_name`` label sets) is declared once per model, and its rows
are keyed by (url, model). Its ``gpu_uuids`` name each GPU it serves from once
(its serving counters' bounds scale with how many); each row is bounded by the
GPUs of its own entry. Optional fields and columns (older collectors leave
them out) read as empty bounds and all-null columns.

Optional ``node_meter``: the host's own meter (``telemetry.collector.hostmeter``)
with its ``method`` (``ipmi_dcmi``, ``redfish``: the whole node; ``rapl``: CPU
packages), the ``epoch`` of its counter, and columns ``ts``, ``power_w`` (W)
and ``energy_j`` (J, cumulative)::

    "node_meter": {"method": "ipmi_dcmi", "epoch": "<collector start>",
                   "ts": [1764399990.0], "power_w": [612.0], "energy_j": [null]}

Its rows follow a GPU's rules: one reading per instant, and ``energy_j``
bounded like a GPU's energy counter (``ENERGY_BOUND``).

Counters (``energy_j``, tokens, requests, TTFT buckets) are sent raw and
cumulative; the server takes deltas. An ``epoch`` names one life of a counter
(a GPU's boot and driver load; an inference server's start): when it changes,
the server knows the counter restarted even across a gap. A GPU or endpoint
whose epoch changes within a batch simply appears twice in its list.

``null`` means "not measured" (unsupported field, failed read), never zero.
"""

from __future__ import annotations

import gzip
import itertools
import math
import re
import zlib
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .backend import EndpointIdentity, GpuIdentity

try:  # orjson is faster; the collector works without it.
    import orjson

    def _dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)

    def _loads(data: bytes) -> Any:
        return orjson.loads(data)

except ImportError:  # pragma: no cover - exercised where orjson is absent
    import json

    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()

    def _loads(data: bytes) -> Any:
        return json.loads(data)


WIRE_VERSION = 1
CONTENT_TYPE = "application/json"

# Limits. A body is refused (413) before it is parsed when it is larger than
# MAX_BODY_BYTES, or when it inflates past MAX_DECOMPRESSED_BYTES.
MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_DECOMPRESSED_BYTES = 32 * 1024 * 1024
MAX_GPU_ROWS = 20_000  # e.g. 8 GPUs x 2500 s of backfill
MAX_SERVING_ROWS = 5_000
MAX_GPUS = 64
MAX_ENDPOINTS = 64
MAX_TTFT_BUCKETS = 64  # and inter-token latency buckets
ENDPOINT_KINDS = ("vllm", "tgi", "sglang")

# Physical bounds: what a real GPU or inference server can report. A value outside them is a
# glitch or an attack, refused (422) at the door rather than carried into every hourly sum.
MAX_POWER_W = 2_000.0  # the board limit: the largest GPU boards draw ~1.4 kW; more is a broken reading
MAX_TEMP_C = 150
TS_MIN_S, TS_MAX_S = 1.0e9, 4.1e9  # 2001 to 2099: catches milliseconds and zeroed clocks
MAX_COUNTER = 2**53  # cumulative serving counters: exact in a JSON double, and an hour's deltas fit a bigint
# How fast a serving counter can rise, per second and per GPU the endpoint serves from (prompt
# tokens include cached prefixes, hence the margin; cached prompt tokens are prompt tokens; the
# TTFT histogram counts requests, the inter-token latency histogram output tokens after the first).
MAX_RISE_PER_GPU_S = {"prompt_tokens": 10_000_000, "generation_tokens": 200_000, "requests": 20_000}
SERVING_RISE_PER_GPU_S = {
    **MAX_RISE_PER_GPU_S,
    "cached_prompt_tokens": MAX_RISE_PER_GPU_S["prompt_tokens"],
    "ttft_bucket_counts": MAX_RISE_PER_GPU_S["requests"],
    "itl_bucket_counts": MAX_RISE_PER_GPU_S["generation_tokens"],
}
RISE_SLACK_S = 1.0  # a serving counter and its timestamp are read a moment apart: one more second at the limit


@dataclass(frozen=True)
class CounterBound:
    """The most a cumulative counter can count in ``seconds``: ``per_s * (seconds + slack_s)``.

    The one rule for every counter increase, wherever it is seen: between two rows of a
    batch, against the last stored sample, in the rollup. An increase is what the reset
    rule makes of two readings (:func:`counter_step_increase`): a rise, or, after a
    restart (a drop, a new epoch), the new reading itself, which counted up from zero
    since the previous sample, so it is bounded by the same time.
    """

    per_s: float
    slack_s: float
    limit: str  # what the rate stands for, for messages: "the board limit, W", "2 GPUs"

    def most(self, seconds: float) -> float:
        return self.per_s * (seconds + self.slack_s)

    def allows(self, increase: float, seconds: float) -> bool:
        return increase <= self.most(seconds)


# Energy: the board limit over the elapsed time and no slack, so that an hour never holds more than
# MAX_POWER_W x 3600 s per GPU (2 kWh); the limit sits 40 % above the largest boards, which covers
# a counter read a moment after its timestamp.
ENERGY_BOUND = CounterBound(per_s=MAX_POWER_W, slack_s=0.0, limit="the board limit, W")


def serving_bounds(gpus: int) -> dict[str, CounterBound]:
    """Per serving counter (and histogram), its bound for an endpoint serving from ``gpus`` GPUs (at least one)."""
    n = max(1, gpus)
    return {
        name: CounterBound(per_s=per_gpu_s * n, slack_s=RISE_SLACK_S, limit=f"{n} GPUs")
        for name, per_gpu_s in SERVING_RISE_PER_GPU_S.items()
    }


Reading = float | tuple[int, ...]  # a counter's value, or a histogram's counts per bucket (not cumulative)


def counter_step_increase(before: Reading, after: Reading, *, epoch_changed: bool) -> float:
    """What the server counts between two readings: the rise, or after a restart (a new epoch, a
    drop, a histogram bucket that dropped) the new reading itself."""
    if isinstance(before, tuple) and isinstance(after, tuple):
        dropped = len(before) != len(after) or any(now < then for then, now in zip(before, after, strict=True))
        total = sum(after)
        return total if epoch_changed or dropped else total - sum(before)
    assert not isinstance(before, tuple) and not isinstance(after, tuple)  # noqa: S101 - one kind per column
    return after if epoch_changed or after < before else after - before


Step = tuple[float, Reading, Hashable]  # (ts, reading, epoch)


def counter_step_check(
    before: Step, after: Step, *, bound: CounterBound, where: str, what: str, restart_within_s: float = math.inf
) -> None:
    """Refuse (422) an increase from ``before`` to ``after`` beyond ``bound``, naming ``where``, ``what``, the bound.

    ``restart_within_s``: a restart across a longer gap is not checked (the rollup counts none of it).
    """
    seconds = after[0] - before[0]
    increase = counter_step_increase(before[1], after[1], epoch_changed=before[2] != after[2])
    if bound.allows(increase, seconds):
        return
    rose = before[2] == after[2] and _total(after[1]) - _total(before[1]) == increase
    if not rose and seconds > restart_within_s:
        return
    if rose:
        told = f"rises by {increase:g} in {seconds:g} s"
    else:
        why = "in a new epoch" if before[2] != after[2] else "after a drop"
        told = f"restarts {why} reading {increase:g} {seconds:g} s after {_total(before[1]):g}"
    raise WireError(
        f"{where} {told}: more than {bound.per_s:g} a second ({bound.limit}) allows for {what}: "
        f"at most {bound.most(seconds):g}",
        status=422,
    )


def _total(reading: Reading) -> float:
    return sum(reading) if isinstance(reading, tuple) else reading


GPU_FIELDS = ("power_w", "energy_j", "util_pct", "mem_util_pct", "mem_used_bytes", "temp_c")
SERVING_COUNTERS = ("prompt_tokens", "generation_tokens", "requests")
# Counters a batch may leave out (older collectors): an absent column reads as all null.
SERVING_COUNTERS_OPTIONAL = ("cached_prompt_tokens",)
SERVING_COUNTERS_ALL = (*SERVING_COUNTERS, *SERVING_COUNTERS_OPTIONAL)
# The inter-token latency histogram (cumulative counts, sum): optional columns, absent reads as all null.
SERVING_ITL_COLUMNS = ("itl_bucket_counts", "itl_sum_s")
# Per GPU field: (minimum, maximum, integer?). The collector sends a reading outside them as null.
GPU_BOUNDS: dict[str, tuple[float, float, bool]] = {
    "power_w": (0.0, MAX_POWER_W, False),
    "energy_j": (0.0, 1.9e16, False),  # NVML's counter is a uint64 of mJ
    "util_pct": (0, 100, True),
    "mem_util_pct": (0, 100, True),
    "mem_used_bytes": (0, 2**50, True),
    "temp_c": (-40, MAX_TEMP_C, True),
}
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # refused in every string: PostgreSQL cannot store NUL


class WireError(ValueError):
    """The batch is not valid wire format; ``str()`` says where and why. ``status``: 400 for what is
    malformed, 413 for what is too large, 415 for an unknown encoding, 422 for what is out of bounds."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class CollectorInfo:
    version: str
    hostname: str
    dropped_batches: int
    spool_bytes: int
    sample_interval_s: float


@dataclass(frozen=True)
class Batch:
    """A decoded, validated batch. Sample columns are lists of equal length.

    ``gpus`` and ``endpoints`` are the identities the collector's backends gave, field for
    field as the batcher encodes them: the wire carries them, it does not define its own.
    """

    batch_id: str
    sent_at: float
    collector: CollectorInfo
    gpus: tuple[GpuIdentity, ...]
    gpu_samples: dict[str, list[Any]]
    endpoints: tuple[EndpointIdentity, ...]
    serving_samples: dict[str, list[Any]]
    node_meter: dict[str, Any] | None = None  # method, epoch and columns ts, power_w, energy_j

    @property
    def gpu_row_count(self) -> int:
        return len(self.gpu_samples["ts"])

    @property
    def serving_row_count(self) -> int:
        return len(self.serving_samples["ts"])


def ts_datetime(ts_s: float) -> datetime:
    """A wire timestamp (Unix seconds) as the stored aware UTC datetime, rounded to the microsecond."""
    return datetime.fromtimestamp(ts_s, tz=UTC)


# --- encoding (collector side) ------------------------------------------------


def batch_encode(payload: Mapping[str, Any], *, compress: bool = True) -> bytes:
    """Serialize a batch dictionary (shape above); gzip it when ``compress``."""
    body = _dumps(payload)
    return gzip.compress(body, compresslevel=6) if compress else body


def empty_gpu_samples() -> dict[str, list[Any]]:
    return {"gpu": [], "ts": [], **{field: [] for field in GPU_FIELDS}}


def empty_serving_samples(*, optional: bool = False) -> dict[str, list[Any]]:
    """Empty serving columns; with ``optional``, the optional counters' too (the collector sends them)."""
    names = (*SERVING_COUNTERS_ALL, *SERVING_ITL_COLUMNS) if optional else SERVING_COUNTERS
    return {"endpoint": [], "ts": [], **{f: [] for f in names}, "ttft_bucket_counts": [], "ttft_sum_s": []}


# --- decoding (server side) ---------------------------------------------------


def body_inflate(body: bytes, *, content_encoding: str | None) -> bytes:
    """Return the raw JSON bytes, refusing (413) anything that inflates too far.

    Decompression is bounded (zlib's ``max_length``), so a gzip bomb costs at most
    ``MAX_DECOMPRESSED_BYTES`` of memory before it is refused. Several gzip members
    one after the other (RFC 1952) are one body.
    """
    if len(body) > MAX_BODY_BYTES:
        raise WireError(f"body is {len(body)} bytes; the limit is {MAX_BODY_BYTES}", status=413)
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding != "gzip":
        raise WireError(f"Content-Encoding {encoding!r} is not supported; use gzip or none", status=415)
    parts: list[bytes] = []
    inflated = 0
    rest = body
    try:
        while True:
            member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # one gzip member
            part = member.decompress(rest, MAX_DECOMPRESSED_BYTES + 1 - inflated)
            inflated += len(part)
            if inflated > MAX_DECOMPRESSED_BYTES:
                raise WireError(f"body inflates past {MAX_DECOMPRESSED_BYTES} bytes", status=413)
            if not member.eof:
                raise WireError("body is not valid gzip: it ends before the end of its stream")
            parts.append(part)
            rest = member.unused_data
            if not rest:
                return b"".join(parts)
    except zlib.error as exc:
        raise WireError(f"body is not valid gzip: {exc}") from None


def batch_decode(body: bytes, *, content_encoding: str | None = None) -> Batch:
    """Parse and validate a batch; raise :class:`WireError` with a precise message naming the field."""
    raw = body_inflate(body, content_encoding=content_encoding)
    try:
        doc = _loads(raw)
    except ValueError as exc:
        raise WireError(f"body is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise WireError("body must be a JSON object")
    version = doc.get("version")
    if type(version) is not int or version != WIRE_VERSION:
        raise WireError(f"unsupported wire version {version!r}; this server speaks version {WIRE_VERSION}")
    gpus = tuple(_gpu_ref(item, f"gpus[{i}]") for i, item in enumerate(_list(doc, "gpus", MAX_GPUS)))
    endpoints = tuple(
        _endpoint_ref(item, f"endpoints[{i}]") for i, item in enumerate(_list(doc, "endpoints", MAX_ENDPOINTS))
    )
    return Batch(
        batch_id=_str(doc, "batch_id", "batch_id", max_len=64),
        sent_at=_number(doc.get("sent_at"), "sent_at"),
        collector=_collector(doc.get("collector"), "collector"),
        gpus=gpus,
        gpu_samples=_gpu_samples(doc.get("gpu_samples"), gpus),
        endpoints=endpoints,
        serving_samples=_serving_samples(doc.get("serving_samples"), endpoints),
        node_meter=_node_meter(doc.get("node_meter")),
    )


NODE_METER_METHODS = ("ipmi_dcmi", "redfish", "rapl")
MAX_NODE_POWER_W = 100_000.0  # a whole 8-GPU node draws ~10 kW


def _node_meter(doc: Any) -> dict[str, Any] | None:
    if doc is None:
        return None
    columns = _columns(doc, "node_meter", ("ts", "power_w", "energy_j"), MAX_GPU_ROWS)
    method = doc.get("method")
    if method not in NODE_METER_METHODS:
        raise WireError(f"node_meter.method {method!r} is not one of {', '.join(NODE_METER_METHODS)}")
    _check_column(columns["ts"], "node_meter.ts", TS_MIN_S, TS_MAX_S, integer=False, nullable=False)
    _check_column(columns["power_w"], "node_meter.power_w", 0.0, MAX_NODE_POWER_W, integer=False)
    _check_column(columns["energy_j"], "node_meter.energy_j", 0.0, 1.9e16, integer=False)
    epoch = _str(doc, "epoch", "node_meter.epoch", max_len=128)
    # The rules of a GPU's rows, as the rollup reads the meter as it reads a GPU: one reading per instant,
    # and the energy counter bounded by the same rate (``ENERGY_BOUND``, applied to the meter's hours too).
    rows = sorted(range(len(columns["ts"])), key=columns["ts"].__getitem__)
    _no_two_alike(rows, columns["ts"], "node_meter", "the node meter")
    _rises_bounded(
        rows, [epoch] * len(rows), columns, "node_meter", "energy_j", [ENERGY_BOUND] * len(rows), "the node meter"
    )
    return {"method": method, "epoch": epoch, **columns}


def _list(doc: Mapping[str, Any], key: str, limit: int) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise WireError(f"{key} must be a list")
    if len(value) > limit:
        raise WireError(f"{key} has {len(value)} entries; the limit is {limit}", status=413)
    return value


def _str(doc: Mapping[str, Any], key: str, where: str, *, max_len: int = 256, allow_empty: bool = False) -> str:
    return _text(doc.get(key), where, max_len=max_len, allow_empty=allow_empty)


def _text(value: Any, where: str, *, max_len: int = 256, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not allow_empty):
        raise WireError(f"{where} must be a non-empty string")
    if len(value) > max_len:
        raise WireError(f"{where} is longer than {max_len} characters")
    control = _CONTROL.search(value)
    if control is not None:
        raise WireError(f"{where} contains a control character (U+{ord(control[0]):04X})")
    return value


def _number(value: Any, where: str, *, minimum: float = 0.0, maximum: float = TS_MAX_S) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise WireError(f"{where} must be a finite number, got {value!r}")
    if not minimum <= value <= maximum:
        raise WireError(f"{where}={value!r} is outside {minimum}..{maximum}", status=422)
    return float(value)


def _int(value: Any, where: str, *, minimum: int = 0, maximum: int = 2**63 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(f"{where} must be an integer, got {value!r}")
    if not minimum <= value <= maximum:
        raise WireError(f"{where}={value!r} is outside {minimum}..{maximum}", status=422)
    return value


def _gpu_ref(item: Any, where: str) -> GpuIdentity:
    if not isinstance(item, dict):
        raise WireError(f"{where} must be an object")
    supported = item.get("energy_counter_supported")
    if not isinstance(supported, bool):
        raise WireError(f"{where}.energy_counter_supported must be true or false")
    return GpuIdentity(
        uuid=_str(item, "uuid", f"{where}.uuid", max_len=96),
        index=_int(item.get("index"), f"{where}.index", maximum=255),
        name=_str(item, "name", f"{where}.name", max_len=128),
        energy_counter_supported=supported,
        epoch=_str(item, "epoch", f"{where}.epoch", max_len=128),
    )


def _endpoint_ref(item: Any, where: str) -> EndpointIdentity:
    if not isinstance(item, dict):
        raise WireError(f"{where} must be an object")
    kind = item.get("kind")
    if kind not in ENDPOINT_KINDS:
        raise WireError(f"{where}.kind must be one of {', '.join(ENDPOINT_KINDS)}, got {kind!r}")
    return EndpointIdentity(
        url=_str(item, "url", f"{where}.url", max_len=512),
        kind=kind,
        model=_str(item, "model", f"{where}.model", allow_empty=True) if "model" in item else "",
        gpu_uuids=_gpu_uuids(item.get("gpu_uuids", []), f"{where}.gpu_uuids"),
        epoch=_str(item, "epoch", f"{where}.epoch", max_len=128),
        ttft_bucket_bounds_s=_bounds(item, "ttft_bucket_bounds_s", where),
        itl_bucket_bounds_s=_bounds(item, "itl_bucket_bounds_s", where),
    )


def _gpu_uuids(uuids: Any, where: str) -> tuple[str, ...]:
    """The GPUs an endpoint serves from, each once: its serving counters' bounds scale with how many (422 for
    a GPU named twice, which would raise them)."""
    if not isinstance(uuids, list) or len(uuids) > MAX_GPUS:
        raise WireError(f"{where} must be a list of at most {MAX_GPUS} GPU UUIDs")
    parsed = tuple(_text(u, f"{where}[{i}]", max_len=96) for i, u in enumerate(uuids))
    first_of: dict[str, int] = {}
    for i, uuid in enumerate(parsed):
        if uuid in first_of:
            raise WireError(
                f"{where}[{i}] names GPU {uuid} again (as {where}[{first_of[uuid]}]): list each GPU once", status=422
            )
        first_of[uuid] = i
    return parsed


def _bounds(item: Mapping[str, Any], key: str, where: str) -> tuple[float, ...]:
    bounds = item.get(key, [])
    if not isinstance(bounds, list) or len(bounds) > MAX_TTFT_BUCKETS:
        raise WireError(f"{where}.{key} must be a list of at most {MAX_TTFT_BUCKETS} numbers")
    parsed = tuple(_number(b, f"{where}.{key}[{i}]") for i, b in enumerate(bounds))
    if any(later <= earlier for earlier, later in itertools.pairwise(parsed)):
        raise WireError(f"{where}.{key} must be strictly increasing")
    return parsed


def _collector(item: Any, where: str) -> CollectorInfo:
    if not isinstance(item, dict):
        raise WireError(f"{where} must be an object")
    return CollectorInfo(
        version=_str(item, "version", f"{where}.version", max_len=32),
        hostname=_str(item, "hostname", f"{where}.hostname", max_len=253),
        dropped_batches=_int(item.get("dropped_batches", 0), f"{where}.dropped_batches"),
        spool_bytes=_int(item.get("spool_bytes", 0), f"{where}.spool_bytes"),
        sample_interval_s=_number(item.get("sample_interval_s", 1.0), f"{where}.sample_interval_s", maximum=3600),
    )


def _columns(doc: Any, where: str, names: Sequence[str], max_rows: int) -> dict[str, list[Any]]:
    if doc is None:
        return {name: [] for name in names}
    if not isinstance(doc, dict):
        raise WireError(f"{where} must be an object of columns")
    columns: dict[str, list[Any]] = {}
    for name in names:
        column = doc.get(name)
        if not isinstance(column, list):
            raise WireError(f"{where}.{name} must be a list")
        columns[name] = column
    lengths = {len(c) for c in columns.values()}
    if len(lengths) > 1:
        raise WireError(f"{where} columns differ in length: {sorted(lengths)}")
    rows = lengths.pop() if lengths else 0
    if rows > max_rows:
        raise WireError(f"{where} has {rows} rows; the limit is {max_rows}", status=413)
    return columns


def _gpu_samples(doc: Any, gpus: Sequence[GpuIdentity]) -> dict[str, list[Any]]:
    columns = _columns(doc, "gpu_samples", ("gpu", "ts", *GPU_FIELDS), MAX_GPU_ROWS)
    _check_refs(columns["gpu"], len(gpus), "gpu_samples.gpu")
    _check_column(columns["ts"], "gpu_samples.ts", TS_MIN_S, TS_MAX_S, integer=False, nullable=False)
    for name, (low, high, integer) in GPU_BOUNDS.items():
        _check_column(columns[name], f"gpu_samples.{name}", low, high, integer=integer)
    uuids = [gpus[ref].uuid for ref in columns["gpu"]]
    epochs = [gpus[ref].epoch for ref in columns["gpu"]]
    energy_bounds = [ENERGY_BOUND] * len(uuids)
    for rows in _series(uuids, columns["ts"]):
        _no_two_alike(rows, columns["ts"], "gpu_samples", f"GPU {uuids[rows[0]]}")
        _rises_bounded(rows, epochs, columns, "gpu_samples", "energy_j", energy_bounds, f"GPU {uuids[rows[0]]}")
    return columns


def _serving_samples(doc: Any, endpoints: Sequence[EndpointIdentity]) -> dict[str, list[Any]]:
    names = ("endpoint", "ts", *SERVING_COUNTERS, "ttft_bucket_counts", "ttft_sum_s")
    optional = (*SERVING_COUNTERS_OPTIONAL, *SERVING_ITL_COLUMNS)
    sent = [name for name in optional if isinstance(doc, dict) and name in doc]
    columns = _columns(doc, "serving_samples", (*names, *sent), MAX_SERVING_ROWS)
    for name in optional:
        columns.setdefault(name, [None] * len(columns["ts"]))
    _check_refs(columns["endpoint"], len(endpoints), "serving_samples.endpoint")
    _check_column(columns["ts"], "serving_samples.ts", TS_MIN_S, TS_MAX_S, integer=False, nullable=False)
    for name in SERVING_COUNTERS_ALL:
        _check_column(columns[name], f"serving_samples.{name}", 0, MAX_COUNTER, integer=True)
    for name in ("ttft_sum_s", "itl_sum_s"):
        _check_column(columns[name], f"serving_samples.{name}", 0.0, MAX_COUNTER, integer=False)
    for name in ("ttft_bucket_counts", "itl_bucket_counts"):
        for row, (ref, counts) in enumerate(zip(columns["endpoint"], columns[name], strict=True)):
            bounds = getattr(endpoints[ref], name.replace("counts", "bounds_s"))
            _check_buckets(counts, bounds, f"serving_samples.{name}[{row}]")
    keys = [(endpoints[ref].url, endpoints[ref].model) for ref in columns["endpoint"]]
    epochs = [endpoints[ref].epoch for ref in columns["endpoint"]]
    # Histograms are checked by their counts per bucket (the reset rule's view: a bucket that drops restarts it).
    readings = {
        **columns,
        **{name: [_per_bucket(c) for c in columns[name]] for name in ("ttft_bucket_counts", "itl_bucket_counts")},
    }
    # Each row is bounded by the GPUs its own entry declares: an endpoint declared twice (a restart in the batch)
    # may have moved to other GPUs, and an increase is counted up in the epoch of the reading that ends it.
    declared = [serving_bounds(len(endpoint.gpu_uuids)) for endpoint in endpoints]
    row_bounds = {name: [declared[ref][name] for ref in columns["endpoint"]] for name in SERVING_RISE_PER_GPU_S}
    for rows in _series(keys, columns["ts"]):
        url, model = keys[rows[0]]
        what = f"endpoint {url}" + (f" ({model})" if model else "")
        _no_two_alike(rows, columns["ts"], "serving_samples", what)
        for name, bounds in row_bounds.items():
            _rises_bounded(rows, epochs, readings, "serving_samples", name, bounds, what)
    return columns


def _per_bucket(cumulative: list[int] | None) -> tuple[int, ...] | None:
    """A histogram's cumulative counts (checked non-decreasing) as counts per bucket."""
    if cumulative is None:
        return None
    return tuple(now - then for then, now in zip([0, *cumulative[:-1]], cumulative, strict=True))


def _check_refs(column: list[Any], size: int, where: str) -> None:
    for row, value in enumerate(column):
        if type(value) is not int or not 0 <= value < size:
            raise WireError(f"{where}[{row}]={value!r} does not name an entry of the {size} declared")


_INTEGER, _NUMBER = frozenset({int}), frozenset({int, float})


def _check_column(
    column: list[Any], where: str, low: float, high: float, *, integer: bool, nullable: bool = True
) -> None:
    """Every value a number of the column's kind (``None`` if ``nullable``) within ``[low, high]``."""
    kinds = _INTEGER if integer else _NUMBER  # by exact type: a bool is no number here
    for row, value in enumerate(column):
        if type(value) in kinds and low <= value <= high:  # NaN compares false; JSON has no infinity
            continue
        if value is None and nullable:
            continue
        if integer:  # raises, naming the value and why
            _int(value, f"{where}[{row}]", minimum=int(low), maximum=int(high))
        else:
            _number(value, f"{where}[{row}]", minimum=low, maximum=high)


def _check_buckets(counts: Any, bounds: tuple[float, ...], where: str) -> None:
    if counts is None:
        return
    expected = len(bounds) + 1
    if not isinstance(counts, list) or len(counts) != expected:
        raise WireError(f"{where} must list {expected} cumulative counts (one per bound, then +Inf)")
    previous = 0
    for i, value in enumerate(counts):
        _int(value, f"{where}[{i}]", maximum=MAX_COUNTER)
        if value < previous:
            raise WireError(f"{where} must be cumulative (non-decreasing)")
        previous = value


def _series(keys: Sequence[Hashable], ts: list[float]) -> Iterator[list[int]]:
    """The rows of each key (a GPU's UUID, an endpoint's URL and model), in time order."""
    rows_of: dict[Hashable, list[int]] = {}
    for row, key in enumerate(keys):
        rows_of.setdefault(key, []).append(row)
    for rows in rows_of.values():
        rows.sort(key=ts.__getitem__)
        yield rows


def _no_two_alike(rows: list[int], ts: list[float], where: str, what: str) -> None:
    """Refuse two rows of one key at the same stored timestamp (the microsecond): one would be lost."""
    stamps = [ts_datetime(ts[row]) for row in rows]
    for (first, at), (second, again) in itertools.pairwise(zip(rows, stamps, strict=True)):
        if at == again:
            raise WireError(f"{where} rows {first} and {second} are both {what} at {at.isoformat()}", status=422)


def _rises_bounded(
    rows: list[int], epochs: list[str], columns: Mapping[str, list[Any]], where: str, name: str,
    bounds: Sequence[CounterBound], what: str,
) -> None:  # fmt: skip
    """Refuse a counter whose increase between two readings of one key (in time order, whatever their epochs:
    as the rollup pairs them) is more than its bound allows: a rise, or the reading after a restart.
    ``bounds``: per row, the bound of the increase that ends at it (the epoch it was counted up in)."""
    ts, values = columns["ts"], columns[name]
    before: Step | None = None
    for row in rows:
        value = values[row]
        if value is None:
            continue
        after = (ts[row], value, epochs[row])
        if before is not None:
            counter_step_check(before, after, bound=bounds[row], where=f"{where}.{name}[{row}]", what=what)
        before = after
