"""Backfill GPU telemetry from an organization's existing Prometheus (``manage.py prometheus_import``).

For ``[start, end)``, in pages of at most ``page_hours``, each DCGM series
(:data:`METRICS`, dcgm-exporter's names) is read with ``/api/v1/query_range`` at
a fixed step (the source's scrape interval), on a grid aligned to the step: the
same window always gives the same timestamps. The values are mapped to a GPU
reading by the collector's own dcgm-exporter mapping
(:func:`telemetry.collector.dcgm.reading_fields`: one rule, one place), grouped
by the source's host label (a node of the organization with that hostname) and
by ``UUID`` (a GPU), and each node's rows go, as a collector's wire batch,
through :func:`telemetry.collector.wire.batch_decode` and
:func:`telemetry.ingest.batch_ingest`: the same validation, bounds and
idempotency as ``POST /api/v1/ingest/``. Importing a window twice stores nothing
the second time.

Energy: the raw cumulative counter (``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``,
mJ) is sent as read, never a rate: the server takes counter increases, so the
energy between two stored points is exact, across scrape gaps too while the
counter continues. A counter that goes down starts a new epoch
(``prometheus:<source>/<driver>@<unix seconds>``; otherwise
``prometheus:<source>/<driver>``).

Double counting: a GPU that has samples from another source (a collector, or
another Prometheus: an epoch not named ``prometheus:<this source>/``) in a page
is refused for that page, named in the summary; nothing of it is sent.
"""

from __future__ import annotations

import base64
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from common import http
from fleets.models import Node
from telemetry.collector import dcgm, promtext
from telemetry.collector.wire import MAX_GPU_ROWS, WIRE_VERSION, WireError, batch_decode, batch_encode
from telemetry.ingest import batch_ingest
from telemetry.models import GpuEpoch, GpuSample, PrometheusSource

METRICS = (dcgm.POWER, dcgm.ENERGY, dcgm.GPU_UTIL, dcgm.MEM_COPY_UTIL, dcgm.FB_USED, dcgm.FB_RESERVED, dcgm.GPU_TEMP)
MAX_POINTS_PER_SERIES = 10_000  # Prometheus refuses a query_range of more than 11,000 points per series
IMPORTER_VERSION = "prometheus-import"


class PrometheusImportError(Exception):
    """The import cannot go on; ``str()`` says why (the URL and status, the labels found)."""


# --- the HTTP API ---------------------------------------------------------------------------


@dataclass
class PrometheusClient:
    """``/api/v1/query_range`` of one source: a total timeout per request, ``tries`` with backoff on errors."""

    source: PrometheusSource
    timeout_s: float = 30.0
    tries: int = 3
    backoff_s: float = 1.0
    sleep: Callable[[float], None] = time.sleep

    def query_range(self, query: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        client = http.JsonClient(self.source.url, self.timeout_s, whole_answer_timeout=True)
        params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        last = ""
        for attempt in range(self.tries):
            if attempt:
                self.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                doc = client.get_json("/api/v1/query_range", params=params, headers=self._auth())
            except http.HttpStatus as exc:
                last = f"HTTP {exc.status}: {_error_text(exc.body)}"
                if 400 <= exc.status < 500 and exc.status not in (408, 429):
                    break  # a bad query or credentials: asking again will not help
            except http.Unreachable as exc:
                last = f"no answer within {self.timeout_s:g} s" if exc.timed_out else exc.reason
            except http.BadJson as exc:
                last = str(exc)
            else:
                if not isinstance(doc, dict) or doc.get("status") != "success":
                    error = doc.get("error") if isinstance(doc, dict) else doc
                    raise PrometheusImportError(f"Prometheus at {self.source.url} refused {query!r}: {error}")
                return list(doc.get("data", {}).get("result", []))
        raise PrometheusImportError(
            f"Prometheus at {self.source.url} failed after {attempt + 1} tr{'y' if attempt == 0 else 'ies'}: {last}"
        )

    def _auth(self) -> dict[str, str]:
        if self.source.bearer_token:
            return {"Authorization": f"Bearer {self.source.bearer_token}"}
        if self.source.basic_username:
            pair = f"{self.source.basic_username}:{self.source.basic_password}".encode()
            return {"Authorization": f"Basic {base64.b64encode(pair).decode()}"}
        return {}


def _error_text(body: bytes) -> str:
    text = body[:2000].decode(errors="replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return text or "(empty body)"
    return str(parsed.get("error") if isinstance(parsed, dict) and parsed.get("error") else text)


# --- the import -----------------------------------------------------------------------------


@dataclass
class ImportSummary:
    pages: int = 0
    nodes: set[str] = field(default_factory=set)
    gpus: set[str] = field(default_factory=set)
    rows_sent: int = 0
    rows_stored: int = 0
    rows_already_stored: int = 0
    rows_rejected: int = 0  # older than retention: ingest skips them
    unknown_hosts: set[str] = field(default_factory=set)
    refused: dict[str, str] = field(default_factory=dict)  # GPU UUID (or node) -> why

    def lines(self) -> list[str]:
        lines = [
            f"{self.pages} page(s); {len(self.nodes)} node(s), {len(self.gpus)} GPU(s); "
            f"{self.rows_sent} row(s) sent, {self.rows_stored} stored, {self.rows_already_stored} already stored"
        ]
        if self.rows_rejected:
            lines.append(f"{self.rows_rejected} row(s) older than the retention, not stored")
        if self.unknown_hosts:
            lines.append(f"skipped, no node with that hostname: {', '.join(sorted(self.unknown_hosts))}")
        lines += [f"refused {what}: {why}" for what, why in sorted(self.refused.items())]
        return lines


@dataclass
class _GpuState:
    epoch: str
    last_energy_j: float | None = None


@dataclass
class _Window:
    start: float
    stop: float
    checked: dict[str, str | None] = field(default_factory=dict)  # UUID -> the other source found, or None


Progress = Callable[[str], None]


def prometheus_import(
    source: PrometheusSource,
    *,
    start: datetime,
    end: datetime,
    page_hours: float = 6.0,
    step_s: float | None = None,
    client: PrometheusClient | None = None,
    progress: Progress = lambda line: None,
) -> ImportSummary:
    """Import ``[start, end)`` from ``source``; see the module docstring. Raise :class:`PrometheusImportError`."""
    step = float(step_s or source.scrape_interval_s)
    if step <= 0 or end <= start:
        raise PrometheusImportError("the window is empty (end must be after start) or the step is not positive")
    client = client or PrometheusClient(source)
    page_s = max(step, min(math.floor(page_hours * 3600 / step), MAX_POINTS_PER_SERIES) * step)
    first = math.ceil(start.timestamp() / step) * step  # the grid: multiples of the step, whatever the window
    stop = end.timestamp()
    nodes, ambiguous = _nodes_by_hostname(source)
    summary, window = ImportSummary(), _Window(first, stop)
    states: dict[str, _GpuState] = {}
    seen_any = False
    page_start = first
    while page_start < stop:
        page_end = min(page_start + page_s, stop)
        last_point = page_start + math.ceil((page_end - page_start) / step - 1) * step  # inside [page_start, page_end)
        readings = _page_read(client, source, page_start, last_point, step)
        seen_any = seen_any or bool(readings)
        by_node: dict[Node, dict[str, dict[float, dict[str, promtext.Sample]]]] = {}
        for host, gpus in readings.items():
            node = nodes.get(host)
            if node is None:
                summary.unknown_hosts.add(host + (" (hostname of several nodes)" if host in ambiguous else ""))
                continue
            by_node[node] = gpus
        sent_before, stored_before = summary.rows_sent, summary.rows_stored
        for node, gpus in sorted(by_node.items(), key=lambda item: item[0].hostname):
            _node_import(source, node, gpus, states, window, page_start, step, summary)
        summary.pages += 1
        progress(
            f"{_iso(page_start)} .. {_iso(page_end)}: {len(readings)} host(s), "
            f"{summary.rows_sent - sent_before} row(s) sent, {summary.rows_stored - stored_before} stored"
        )
        page_start = page_end
    if not seen_any:
        matching = f" matching {{{source.selector}}}" if source.selector else ""
        raise PrometheusImportError(
            f"Prometheus at {source.url} has no whole-GPU DCGM series ({', '.join(METRICS)}){matching} "
            f"between {_iso(first)} and {_iso(stop)}: nothing imported"
        )
    if not summary.nodes and summary.unknown_hosts and not summary.refused:
        raise PrometheusImportError(
            f"no series at {source.url} names a node of {source.organization.slug} by its {source.host_label!r} "
            f"label; hosts found: {', '.join(sorted(summary.unknown_hosts))}"
        )
    return summary


def _nodes_by_hostname(source: PrometheusSource) -> tuple[dict[str, Node], set[str]]:
    nodes: dict[str, Node] = {}
    ambiguous: set[str] = set()
    for node in Node.objects.filter(fleet__organization=source.organization).select_related("fleet"):
        if node.hostname in nodes:
            ambiguous.add(node.hostname)
        nodes[node.hostname] = node
    for hostname in ambiguous:
        del nodes[hostname]
    return nodes, ambiguous


def _host_labels(source: PrometheusSource) -> tuple[str, ...]:
    label = source.host_label
    other = {"Hostname": "hostname", "hostname": "Hostname"}.get(label)
    return (label, other) if other else (label,)


def _page_read(
    client: PrometheusClient, source: PrometheusSource, start: float, end: float, step: float
) -> dict[str, dict[str, dict[float, dict[str, promtext.Sample]]]]:
    """The page's whole-GPU samples: host -> UUID -> timestamp -> metric -> sample (the first series of each)."""
    labels_wanted = _host_labels(source)
    out: dict[str, dict[str, dict[float, dict[str, promtext.Sample]]]] = {}
    without_host: list[dict[str, str]] = []
    for metric in METRICS:
        query = f"{metric}{{{source.selector}}}" if source.selector else metric
        for series in client.query_range(query, start, end, step):
            labels = {k: str(v) for k, v in series.get("metric", {}).items()}
            if not dcgm.whole_gpu(labels):
                continue
            host = next((labels[name] for name in labels_wanted if labels.get(name)), None)
            if host is None:
                without_host.append(labels)
                continue
            points = out.setdefault(host, {}).setdefault(labels["UUID"], {})
            for ts, text in series.get("values", []):
                try:
                    value = float(text)
                except ValueError:
                    continue
                points.setdefault(float(ts), {}).setdefault(metric, promtext.Sample(metric, labels, value))
    if without_host and not out:
        found = "; ".join(_series_name(labels) for labels in without_host[:3])
        raise PrometheusImportError(
            f"the DCGM series at {source.url} have no {' or '.join(map(repr, labels_wanted))} label "
            f"(set the source's host label to the one naming the host); series found: {found}"
        )
    return out


def _series_name(labels: dict[str, str]) -> str:
    name = labels.get("__name__", "")
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__") + "}"


def _node_import(
    source: PrometheusSource,
    node: Node,
    gpus: dict[str, dict[float, dict[str, promtext.Sample]]],
    states: dict[str, _GpuState],
    window: _Window,
    page_start: float,
    step: float,
    summary: ImportSummary,
) -> None:
    """Check, build and ingest one node's rows of one page."""
    unchecked = set(gpus) - set(window.checked)
    if unchecked:  # once per GPU and import: a GPU another source reports in the window is refused for all of it
        found = _gpus_with_other_sources(source, unchecked, window.start, window.stop)
        window.checked.update({uuid: found.get(uuid) for uuid in unchecked})
        for uuid in sorted(found):
            summary.refused[uuid] = f"GPU of {node.hostname} already has samples from {found[uuid]} in this window"
    others = {uuid for uuid in gpus if window.checked[uuid] is not None}
    identities: list[dict[str, Any]] = []
    rows: list[tuple[float, int, dict[str, Any]]] = []
    prefix = f"prometheus:{source.name}/"
    for uuid in sorted(set(gpus) - others):
        points = gpus[uuid]
        index, name, driver, has_counter = dcgm.gpu_identity_fields(next(iter(points.values())))
        has_counter = any(dcgm.ENERGY in samples for samples in points.values())
        state = states.setdefault(uuid, _GpuState(prefix + driver))
        for ts in sorted(points):
            fields = dcgm.reading_fields(points[ts], energy_counter=has_counter)
            energy = fields["energy_j"]
            if energy is not None and state.last_energy_j is not None and energy < state.last_energy_j:
                state.epoch = f"{prefix}{driver}@{int(ts)}"  # the counter went down: a new life
            if energy is not None:
                state.last_energy_j = energy
            identity = {"uuid": uuid, "index": index, "name": name, "energy_counter_supported": has_counter}
            identity["epoch"] = state.epoch
            if identity not in identities:
                identities.append(identity)
            rows.append((ts, identities.index(identity), fields))
        summary.gpus.add(uuid)
    if not rows:
        return
    summary.nodes.add(node.hostname)
    rows.sort(key=lambda row: row[0])
    for chunk, at in enumerate(range(0, len(rows), MAX_GPU_ROWS)):
        _batch_send(source, node, identities, rows[at : at + MAX_GPU_ROWS], page_start, chunk, step, summary)


def _gpus_with_other_sources(
    source: PrometheusSource, uuids: set[str], page_start: float, page_end: float
) -> dict[str, str]:
    """UUID -> the other source (its epoch) of GPUs with samples in ``[page_start, page_end)`` not from ``source``."""
    ours = GpuEpoch.objects.filter(gpu__uuid__in=uuids, epoch__startswith=f"prometheus:{source.name}/")
    found = (
        GpuSample.objects.filter(
            gpu__uuid__in=uuids,
            ts__gte=datetime.fromtimestamp(page_start, tz=UTC),
            ts__lt=datetime.fromtimestamp(page_end, tz=UTC),
        )
        .exclude(epoch_id__in=ours.values("id"))
        .values_list("gpu__uuid", "epoch__epoch")
        .order_by()
        .distinct()
    )
    others: dict[str, str] = {}
    for uuid, epoch in found.iterator():
        kind = "another Prometheus source" if epoch.startswith("prometheus:") else "a collector"
        others.setdefault(uuid, f"{kind} (epoch {epoch!r})")
    return others


def _batch_send(
    source: PrometheusSource,
    node: Node,
    identities: list[dict[str, Any]],
    rows: list[tuple[float, int, dict[str, Any]]],
    page_start: float,
    chunk: int,
    step: float,
    summary: ImportSummary,
) -> None:
    samples: dict[str, list[Any]] = {"gpu": [], "ts": [], **{name: [] for name in rows[0][2]}}
    for ts, ref, fields in rows:
        samples["gpu"].append(ref)
        samples["ts"].append(ts)
        for name, value in fields.items():
            samples[name].append(value)
    payload = {
        "version": WIRE_VERSION,
        "batch_id": f"prom-{source.pk}-{node.pk}-{int(page_start)}-{chunk}",
        "sent_at": time.time(),
        "collector": {"version": IMPORTER_VERSION, "hostname": node.hostname, "sample_interval_s": step},
        "gpus": identities,
        "gpu_samples": samples,
        "endpoints": [],
        "serving_samples": None,
    }
    summary.rows_sent += len(rows)
    try:
        result = batch_ingest(
            node=node, batch=batch_decode(batch_encode(payload, compress=False)), received_at=timezone.now()
        )
    except WireError as error:
        summary.refused[node.hostname] = f"rows from {_iso(rows[0][0])} refused by ingest: {error}"
        return
    summary.rows_stored += result.stored["gpu_samples"]
    summary.rows_already_stored += result.duplicates["gpu_samples"]
    summary.rows_rejected += sum(item["rows"] for item in result.rejected if item["kind"] == "gpu_samples")


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")
