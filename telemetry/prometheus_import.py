"""Import GPU and serving telemetry from an organization's existing Prometheus.

Used by ``manage.py prometheus_import`` (a backfill) and by the beat task
(:mod:`telemetry.prometheus_sync`, continuously). For ``[start, end)``, in pages
of at most ``page_hours``, each DCGM series (:data:`METRICS`, dcgm-exporter's
names) is read with ``/api/v1/query_range`` at a fixed step (the source's scrape
interval), on a grid aligned to the step: the same window always gives the same
timestamps. The values are mapped to a GPU reading by the collector's own
dcgm-exporter mapping (:func:`telemetry.collector.dcgm.reading_fields`: one
rule, one place), grouped by the source's host label (a node of the
organization with that hostname) and by ``UUID`` (a GPU), and each node's rows
go, as a collector's wire batch, through
:func:`telemetry.collector.wire.batch_decode` and
:func:`telemetry.ingest.batch_ingest`: the same validation, bounds and
idempotency as ``POST /api/v1/ingest/``. Importing a window twice stores nothing
the second time.

Energy: the raw cumulative counter (``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``,
mJ) is sent as read, never a rate: the server takes counter increases, so the
energy between two stored points is exact, across scrape gaps too while the
counter continues. A counter that goes down by more than noise
(:func:`energy_noise`: held at the reading before) starts a new epoch
(``prometheus:<source>/<driver>@<unix seconds>``; otherwise
``prometheus:<source>/<driver>``); each import starts from the epoch and counter
of this source's last stored sample of the GPU, so runs agree.

Serving: the inference servers' series the collector's scraper reads
(:data:`SERVING_SERIES`), one query per page, each scrape target an endpoint,
each instant's samples mapped by the collector's own :data:`serving.MAPPERS`;
raw cumulative tokens, requests and TTFT/ITL histograms, sent as serving rows.

Double counting: a GPU that has samples from another source (a collector, or
another Prometheus: an epoch not named ``prometheus:<this source>/``) in the
window is refused for it, named in the summary; nothing of it is sent; a node's
serving likewise. The other way round, :func:`collector_batch_check` refuses a
collector's batch (409) for a GPU or node's serving an import reports then. Both
look at the reporting node's own GPUs alone: a UUID registered to another node
(another organization's) is refused by ingest as another node's GPU (403), and
no answer or summary names another node's epochs, sources or times.

The source's URL is an organization admin's: requests follow ``common.outbound``
(see :class:`PrometheusClient`), and an error shows its status and a short reason
to the members; what Prometheus answered is :attr:`PrometheusImportError.detail`.
"""

from __future__ import annotations

import base64
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from http.client import HTTPException
from typing import Any

from django.conf import settings
from django.utils import timezone

from common import http, outbound
from fleets.models import Gpu, Node
from telemetry.collector import dcgm, promtext, serving, wire
from telemetry.collector.wire import MAX_GPU_ROWS, WIRE_VERSION, Batch, WireError, batch_decode, batch_encode
from telemetry.ingest import batch_ingest
from telemetry.models import EndpointEpoch, GpuEpoch, GpuSample, PrometheusSource, ServingSample

EPOCH_PREFIX = "prometheus:"
METRICS = (dcgm.POWER, dcgm.ENERGY, dcgm.GPU_UTIL, dcgm.MEM_COPY_UTIL, dcgm.FB_USED, dcgm.FB_RESERVED, dcgm.GPU_TEMP)
MAX_POINTS_PER_SERIES = 10_000  # Prometheus refuses a query_range of more than 11,000 points per series
IMPORTER_VERSION = "prometheus-import"


class PrometheusImportError(Exception):
    """The import cannot go on; ``str()`` says why (the URL and status, the labels found), for every member of the
    organization to read. ``detail``: what Prometheus answered with an error (an excerpt of its body, e.g. a
    query's parse error), for the organization's admins alone: the answer of whatever the URL reaches."""

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class NothingToImport(PrometheusImportError):
    """Prometheus answered, with no series of the source's in the window (nothing to store)."""


# --- the HTTP API ---------------------------------------------------------------------------


@dataclass
class PrometheusClient:
    """``/api/v1/query_range`` of one source: a total timeout per request, ``tries`` with backoff on errors.

    The source's URL is named by an organization's admin: each request is sent under the rule for such
    addresses (``common.outbound``: public addresses, or those in ``OUTBOUND_ALLOWED_HOSTS``), checked again
    when sent and connected to as checked, redirects not followed."""

    source: PrometheusSource
    timeout_s: float = 30.0
    tries: int = 3
    backoff_s: float = 1.0
    sleep: Callable[[float], None] = time.sleep

    def query_range(self, query: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        client = self._client()
        params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        last, detail = "", ""
        for attempt in range(self.tries):
            if attempt:
                self.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                doc = client.get_json("/api/v1/query_range", params=params, headers=self._auth())
            except http.HttpStatus as exc:
                kind, detail = _answer_error(exc.body)
                last = _status_text(exc.status) + kind
                if exc.status < 500 and exc.status not in (408, 429):
                    break  # a bad query or credentials, a redirect: asking again will not help
            except http.Unreachable as exc:
                last, detail = _unreachable_text(exc, self.timeout_s)
            except http.BadJson as exc:
                last, detail = "the answer is not JSON", str(exc)
            except outbound.OutboundRefused as exc:
                raise PrometheusImportError(f"Prometheus at {self.source.url}: {exc}") from None
            else:
                if not isinstance(doc, dict) or doc.get("status") != "success":
                    raise PrometheusImportError(
                        f"Prometheus at {self.source.url} refused {query!r}{_error_type(doc)}",
                        detail=_excerpt(str(doc.get("error") if isinstance(doc, dict) else doc)),
                    )
                return list(doc.get("data", {}).get("result", []))
        raise PrometheusImportError(
            f"Prometheus at {self.source.url} failed after {attempt + 1} tr{'y' if attempt == 0 else 'ies'}: {last}",
            detail=detail,
        )

    def _client(self) -> http.JsonClient:
        """A client for this request: the URL's name resolved and checked now (it may point elsewhere than
        when the URL was saved), the connection made to the address checked."""
        try:
            target = outbound.send_check(self.source.url)
            opener = outbound.pinned_opener(target)
            return http.JsonClient(self.source.url, self.timeout_s, whole_answer_timeout=True, opener=opener)
        except ValueError as exc:  # the rule's refusal (OutboundRefused), or a base URL JsonClient refuses
            raise PrometheusImportError(f"Prometheus at {self.source.url}: {exc}") from None

    def _auth(self) -> dict[str, str]:
        if self.source.bearer_token:
            return {"Authorization": f"Bearer {self.source.bearer_token}"}
        if self.source.basic_username:
            pair = f"{self.source.basic_username}:{self.source.basic_password}".encode()
            return {"Authorization": f"Basic {base64.b64encode(pair).decode()}"}
        return {}


# Prometheus's errorType values (its web/api/v1): a reason short and known enough to show every member.
ERROR_TYPES = frozenset({"bad_data", "timeout", "canceled", "execution", "internal", "unavailable", "not_found",
                         "not_acceptable"})  # fmt: skip
ERROR_DETAIL_CHARS = 2000


def _status_text(status: int) -> str:
    """``HTTP 503 (Service Unavailable)``: the status and its standard phrase, nothing of the answer's text."""
    try:
        return f"HTTP {status} ({HTTPStatus(status).phrase})"
    except ValueError:
        return f"HTTP {status}"


def _error_type(doc: Any) -> str:
    """``: bad_data`` where the answer names a Prometheus error type, else nothing (no text of the answer's)."""
    kind = doc.get("errorType") if isinstance(doc, dict) else None
    return f": {kind}" if kind in ERROR_TYPES else ""


def _unreachable_text(exc: http.Unreachable, timeout_s: float) -> tuple[str, str]:
    """What every member reads of a request without an answer, and the admins' detail. The socket's own
    errors (refused, reset, a certificate) are said as they are; an answer that is not HTTP is quoted by
    http.client (its status line, say), so its text is the admins' alone."""
    if exc.timed_out:
        return f"no answer within {timeout_s:g} s", ""
    if isinstance(exc.__cause__, HTTPException) and not isinstance(exc.__cause__, OSError):
        return "the answer is not valid HTTP", _excerpt(exc.reason)
    return exc.reason, ""


def _answer_error(body: bytes) -> tuple[str, str]:
    """An error answer's Prometheus error type (as :func:`_error_type`) and an excerpt of its text: its
    ``error`` where it is Prometheus's JSON, else its first characters."""
    text = body[: ERROR_DETAIL_CHARS * 4].decode(errors="replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return "", _excerpt(text or "(empty body)")
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return _error_type(parsed), _excerpt(str(error) if error else text)


def _excerpt(text: str) -> str:
    return text[:ERROR_DETAIL_CHARS]


# --- the import -----------------------------------------------------------------------------


@dataclass
class ImportSummary:
    pages: int = 0
    nodes: set[str] = field(default_factory=set)
    gpus: set[str] = field(default_factory=set)
    endpoints: set[str] = field(default_factory=set)  # "<url> (<model>)"
    rows_sent: int = 0
    rows_stored: int = 0
    rows_already_stored: int = 0
    serving_rows_sent: int = 0
    serving_rows_stored: int = 0
    serving_rows_already_stored: int = 0
    rows_rejected: int = 0  # older than retention: ingest skips them
    energy_held: int = 0  # readings a little below the one before (noise), sent as the one before
    unknown_hosts: set[str] = field(default_factory=set)
    without_host: dict[str, int] = field(default_factory=dict)  # a series lacking the host label -> points
    refused: dict[str, str] = field(default_factory=dict)  # GPU UUID (or node) -> why

    def lines(self) -> list[str]:
        lines = [
            f"{self.pages} page(s); {len(self.nodes)} node(s), {len(self.gpus)} GPU(s); "
            f"{self.rows_sent} row(s) sent, {self.rows_stored} stored, {self.rows_already_stored} already stored"
        ]
        if self.endpoints or self.serving_rows_sent:
            lines.append(
                f"{len(self.endpoints)} serving endpoint(s): {self.serving_rows_sent} row(s) sent, "
                f"{self.serving_rows_stored} stored, {self.serving_rows_already_stored} already stored"
            )
        if self.rows_rejected:
            lines.append(f"{self.rows_rejected} row(s) older than the retention, not stored")
        if self.energy_held:
            lines.append(
                f"{self.energy_held} energy reading(s) a little below the one before (noise, not a reset): "
                "sent as the one before"
            )
        if self.unknown_hosts:
            lines.append(f"skipped, no node with that hostname: {', '.join(sorted(self.unknown_hosts))}")
        if self.without_host:
            named = "; ".join(sorted(self.without_host)[:5])
            lines.append(f"skipped {len(self.without_host)} series without a host label: {named}")
        lines += [f"refused {what}: {why}" for what, why in sorted(self.refused.items())]
        return lines


@dataclass
class _GpuState:
    epoch: str
    last_energy_j: float | None = None


@dataclass
class _EndpointState:
    base: str
    epoch: str
    last: tuple[int | None, ...] = (None, None, None)  # prompt, generation tokens, requests
    bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None  # TTFT, ITL: the first seen of the epoch


@dataclass
class _Window:
    start: float
    stop: float
    # (node id, GPU UUID, or "" for the node's serving) -> the other source found, or None; by node, as a UUID
    # under another node's host is that node's question (ingest refuses a GPU registered to another node)
    checked: dict[tuple[int, str], str | None] = field(default_factory=dict)


@dataclass
class _Run:
    """What one import carries from page to page."""

    source: PrometheusSource
    window: _Window
    summary: ImportSummary
    gpus: dict[str, _GpuState] = field(default_factory=dict)
    endpoints: dict[tuple[int, str, str], _EndpointState] = field(default_factory=dict)  # (node, url, model)

    @property
    def prefix(self) -> str:
        return f"{EPOCH_PREFIX}{self.source.name}/"


Progress = Callable[[str], None]
Points = dict[float, list[promtext.Sample]]  # timestamp -> the samples of that instant


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
    run = _Run(source, _Window(first, stop), ImportSummary())
    summary = run.summary
    seen_any = False
    page_start = first
    while page_start < stop:
        page_end = min(page_start + page_s, stop)
        last_point = page_start + math.ceil((page_end - page_start) / step - 1) * step  # inside [page_start, page_end)
        readings = _page_read(client, source, page_start, last_point, step, summary)
        served = _serving_page_read(client, source, page_start, last_point, step)
        seen_any = seen_any or bool(readings) or bool(served)
        sent_before, stored_before = summary.rows_sent, summary.rows_stored
        for host in sorted(set(readings) | set(served)):
            node = nodes.get(host)
            if node is None:
                summary.unknown_hosts.add(host + (" (hostname of several nodes)" if host in ambiguous else ""))
                continue
            if host in readings:
                _node_import(run, node, readings[host], page_start, step)
            if host in served:
                _node_serving_import(run, node, served[host], page_start, step)
        summary.pages += 1
        progress(
            f"{_iso(page_start)} .. {_iso(page_end)}: {len(set(readings) | set(served))} host(s), "
            f"{summary.rows_sent - sent_before} row(s) sent, {summary.rows_stored - stored_before} stored"
        )
        page_start = page_end
    if not seen_any:
        matching = f" matching {{{source.selector}}}" if source.selector else ""
        serving = f" matching {{{source.serving_selector}}}" if source.serving_selector else ""
        raise NothingToImport(
            f"Prometheus at {source.url} has no whole-GPU DCGM series ({', '.join(METRICS)}){matching} "
            f"nor serving series (vLLM, SGLang, TGI){serving} between {_iso(first)} and {_iso(stop)}: "
            "nothing imported"
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
    client: PrometheusClient, source: PrometheusSource, start: float, end: float, step: float, summary: ImportSummary
) -> dict[str, dict[str, dict[float, dict[str, promtext.Sample]]]]:
    """The page's whole-GPU samples: host -> UUID -> timestamp -> metric -> sample (the first series of each).

    A series without the host label is skipped and named in the summary; when no series has it, the
    source's host label is wrong: an error naming the series found."""
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
    for labels in without_host:
        name = _series_name(labels)
        summary.without_host[name] = summary.without_host.get(name, 0) + 1
    return out


def _series_name(labels: dict[str, str]) -> str:
    name = labels.get("__name__", "")
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__") + "}"


def energy_noise(previous_j: float, current_j: float) -> bool:
    """Whether a reading below the one before is noise rather than a reset: at most 1 J or 0.01 % lower.

    A counter that restarted (reboot, driver reload) starts again from about zero: far lower than a
    running GPU's counter (tens of MJ within a day). Noise (a repeated scrape, two exporters' readings
    interleaved, rounding) is a sliver lower. Held at the reading before, the noise adds nothing; the
    next reading above it counts the whole increase, so nothing is lost either."""
    return current_j < previous_j and previous_j - current_j <= max(ENERGY_NOISE_J, ENERGY_NOISE_SHARE * previous_j)


ENERGY_NOISE_J = 1.0
ENERGY_NOISE_SHARE = 1e-4


def _gpu_state(run: _Run, node: Node, uuid: str, base: str, before: float) -> _GpuState:
    """The GPU's epoch and last energy as this source left them in an earlier import (or a fresh epoch)."""
    state = run.gpus.get(uuid)
    if state is not None:
        return state
    last = (
        GpuSample.objects.filter(
            gpu__node=node,
            gpu__uuid=uuid,
            energy_j__isnull=False,
            ts__lt=datetime.fromtimestamp(before, tz=UTC),
            ts__gte=datetime.fromtimestamp(before - settings.TELEMETRY_MAX_BRIDGE_S, tz=UTC),
            epoch__epoch__startswith=run.prefix,
        )
        .order_by("-ts")
        .values_list("epoch__epoch", "energy_j")
        .first()
    )
    same_life = last is not None and last[0].split("@")[0] == base
    state = _GpuState(last[0], last[1]) if last is not None and same_life else _GpuState(base)
    run.gpus[uuid] = state
    return state


def _node_import(
    run: _Run,
    node: Node,
    gpus: dict[str, dict[float, dict[str, promtext.Sample]]],
    page_start: float,
    step: float,
) -> None:
    """Check, build and ingest one node's rows of one page."""
    window, summary = run.window, run.summary
    unchecked = {uuid for uuid in gpus if (node.pk, uuid) not in window.checked}
    if unchecked:  # once per GPU and import: a GPU another source reports in the window is refused for all of it
        found = gpus_with_other_sources(node, unchecked, window.start, window.stop, ours=run.prefix)
        window.checked.update({(node.pk, uuid): found.get(uuid) for uuid in unchecked})
        for uuid in sorted(found):
            summary.refused[uuid] = f"GPU of {node.hostname} already has samples from {found[uuid]} in this window"
    others = {uuid for uuid in gpus if window.checked[(node.pk, uuid)] is not None}
    identities: list[dict[str, Any]] = []
    rows: list[tuple[float, int, dict[str, Any]]] = []
    for uuid in sorted(set(gpus) - others):
        points = gpus[uuid]
        index, name, driver, has_counter = dcgm.gpu_identity_fields(next(iter(points.values())))
        has_counter = any(dcgm.ENERGY in samples for samples in points.values())
        state = _gpu_state(run, node, uuid, run.prefix + driver, min(points))
        for ts in sorted(points):
            fields = dcgm.reading_fields(points[ts], energy_counter=has_counter)
            energy = fields["energy_j"]
            if energy is not None and state.last_energy_j is not None and energy < state.last_energy_j:
                if energy_noise(state.last_energy_j, energy):
                    fields["energy_j"] = energy = state.last_energy_j
                    summary.energy_held += 1
                else:
                    state.epoch = f"{run.prefix}{driver}@{int(ts)}"  # the counter restarted: a new life
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
        samples: dict[str, list[Any]] = {"gpu": [], "ts": [], **{name: [] for name in rows[0][2]}}
        for ts, ref, fields in rows[at : at + MAX_GPU_ROWS]:
            samples["gpu"].append(ref)
            samples["ts"].append(ts)
            for name, value in fields.items():
                samples[name].append(value)
        payload = {"gpus": identities, "gpu_samples": samples, "endpoints": [], "serving_samples": None}
        _batch_send(run, node, payload, f"{int(page_start)}-{chunk}", step, rows[at][0])


def gpus_with_other_sources(
    node: Node, uuids: set[str], start_s: float, end_s: float, *, ours: str | None
) -> dict[str, str]:
    """UUID -> the other source (its epoch) of ``node``'s GPUs among ``uuids`` with samples in ``[start_s, end_s)``
    whose epoch does not start with ``ours`` (a Prometheus source's prefix; ``None``: a collector's batch, every
    import is another).

    Only the node's own GPUs are looked at: a UUID registered to another node (another organization's, say) is
    left to ingest's refusal of a foreign GPU, so no answer ever carries another node's epochs or timing."""
    gpus = dict(Gpu.objects.filter(node=node, uuid__in=uuids).values_list("id", "uuid"))
    if not gpus:
        return {}
    epochs = GpuEpoch.objects.filter(gpu_id__in=gpus)
    mine = epochs.filter(epoch__startswith=ours) if ours else epochs.exclude(epoch__startswith=EPOCH_PREFIX)
    found = (
        GpuSample.objects.filter(
            node=node,  # the samples' key starts with the node: one node's rows, one shard on Citus
            gpu_id__in=gpus,
            ts__gte=datetime.fromtimestamp(start_s, tz=UTC),
            ts__lt=datetime.fromtimestamp(end_s, tz=UTC),
        )
        .exclude(epoch_id__in=mine.values("id"))
        .values_list("gpu_id", "epoch__epoch")
        .order_by()
        .distinct()
    )
    others: dict[str, str] = {}
    for gpu_id, epoch in found.iterator():
        kind = "a collector"
        if epoch.startswith(EPOCH_PREFIX):
            kind = "another Prometheus source" if ours else "a Prometheus source"
        others.setdefault(gpus[gpu_id], f"{kind} (epoch {epoch!r})")
    return others


def serving_of_other_sources(node: Node, start_s: float, end_s: float, *, ours: str | None) -> str | None:
    """An endpoint epoch of the node with samples in ``[start_s, end_s)`` not from ``ours`` (as for GPUs,
    ``None``: a collector's batch), or ``None``: two sources of one server's tokens would count them twice."""
    epochs = EndpointEpoch.objects.filter(endpoint__node=node)
    mine = epochs.filter(epoch__startswith=ours) if ours else epochs.exclude(epoch__startswith=EPOCH_PREFIX)
    found = (
        ServingSample.objects.filter(
            node=node,
            ts__gte=datetime.fromtimestamp(start_s, tz=UTC),
            ts__lt=datetime.fromtimestamp(end_s, tz=UTC),
        )
        .exclude(epoch_id__in=mine.values("id"))
        .values_list("endpoint__url", "epoch__epoch")
        .first()
    )
    if found is None:
        return None
    kind = "a collector" if not found[1].startswith(EPOCH_PREFIX) else "a Prometheus source"
    return f"endpoint {found[0]} of {node.hostname} from {kind} (epoch {found[1]!r})"


def collector_batch_check(node: Node, batch: Batch) -> None:
    """Refuse (409) a collector's batch naming a GPU that a Prometheus source's import reports within the
    batch's time (widened by the longest gap bridged), or serving rows for a node whose serving an import
    reports then: one source per GPU and per node's servers, or energy and tokens count twice."""
    stamps, served = batch.gpu_samples["ts"], batch.serving_samples["ts"]
    if not (stamps or served) or not PrometheusSource.objects.filter(organization__fleets__nodes=node).exists():
        return
    problems = []
    if stamps:
        margin = settings.TELEMETRY_GPU_MAX_GAP_S
        uuids = {gpu.uuid for gpu in batch.gpus}
        found = gpus_with_other_sources(node, uuids, min(stamps) - margin, max(stamps) + margin, ours=None)
        problems += [f"GPU {uuid} already has samples from {found[uuid]}" for uuid in sorted(found)]
    if served:
        margin = settings.TELEMETRY_SERVING_MAX_GAP_S
        other = serving_of_other_sources(node, min(served) - margin, max(served) + margin, ours=None)
        problems += [f"serving samples already come from {other}"] if other else []
    if problems:
        raise WireError(
            f"{'; '.join(problems)} at this batch's time: one source per GPU and node (disable that Prometheus "
            "source, or stop reading them here)",
            status=409,
        )


# --- serving endpoints ----------------------------------------------------------------------------

# The series the collector's scraper maps (telemetry.collector.serving), by server kind; histograms with
# their _bucket, _sum and _count.
SERVING_HISTOGRAMS = (
    "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
    "sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds",
    "sglang:time_per_output_token_seconds", "tgi_request_queue_duration",
)  # fmt: skip
SERVING_COUNTERS = (
    "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
    "vllm:prefix_cache_hits_total", "sglang:prompt_tokens_total", "sglang:generation_tokens_total",
    "sglang:num_requests_total", "sglang:cached_tokens_total", "tgi_request_input_length_sum",
    "tgi_request_generated_tokens_sum", "tgi_request_success", "tgi_request_success_total",
    "tgi_batch_inference_duration_sum",
)  # fmt: skip
SERVING_SERIES = (
    *SERVING_COUNTERS,
    *(f"{name}_{part}" for name in SERVING_HISTOGRAMS for part in ("bucket", "sum", "count")),
)
_TARGET_LABELS = ("instance", "job")
_EPOCH_BOUNDS = ("epoch__ttft_bucket_bounds_s", "epoch__itl_bucket_bounds_s")


def _serving_query(selector: str) -> str:
    """The serving series, with the source's ``serving_selector`` (its label matchers) where it has one."""
    names = "|".join(re.escape(name) for name in SERVING_SERIES)
    return f'{{__name__=~"{names}"{", " + selector if selector else ""}}}'


def _serving_page_read(
    client: PrometheusClient, source: PrometheusSource, start: float, end: float, step: float
) -> dict[str, dict[str, Points]]:
    """The page's serving samples: host -> scrape target (``instance``) -> timestamp -> samples.

    The host is the source's host label where a target carries it (a relabelled ``hostname``), else the
    host part of its ``instance``. ``process_start_time_seconds`` of those targets names their lives."""
    labels_wanted = _host_labels(source)
    out: dict[str, dict[str, Points]] = {}
    targets: dict[tuple[str, str], tuple[str, str]] = {}  # (instance, job) -> (host, instance)
    for series in client.query_range(_serving_query(source.serving_selector), start, end, step):
        labels = {k: str(v) for k, v in series.get("metric", {}).items()}
        instance = labels.get("instance", "")
        host = next((labels[name] for name in labels_wanted if labels.get(name)), None)
        host = host or instance.rsplit(":", 1)[0].strip("[]")
        if not host:
            continue
        targets[(instance, labels.get("job", ""))] = (host, instance)
        _points_add(out.setdefault(host, {}).setdefault(instance, {}), series, labels)
    if targets:
        lives = f"process_start_time_seconds{{{source.serving_selector}}}" if source.serving_selector else ""
        for series in client.query_range(lives or "process_start_time_seconds", start, end, step):
            labels = {k: str(v) for k, v in series.get("metric", {}).items()}
            target = targets.get((labels.get("instance", ""), labels.get("job", "")))
            if target is not None:
                _points_add(out[target[0]][target[1]], series, labels)
    return out


def _points_add(points: Points, series: dict[str, Any], labels: dict[str, str]) -> None:
    name = labels.pop("__name__", "")
    for key in (*_TARGET_LABELS, "hostname", "Hostname"):
        labels.pop(key, None)
    for ts, text in series.get("values", []):
        try:
            points.setdefault(float(ts), []).append(promtext.Sample(name, labels, float(text)))
        except ValueError:
            continue


def _endpoint_state(run: _Run, node: Node, url: str, model: str, base: str, before: float) -> _EndpointState | None:
    """The endpoint's state as this source left it in an earlier import, when of the same life (``base``)."""
    last = (
        ServingSample.objects.filter(
            node=node,
            endpoint__url=url,
            endpoint__model_name=model,
            ts__lt=datetime.fromtimestamp(before, tz=UTC),
            ts__gte=datetime.fromtimestamp(before - settings.TELEMETRY_MAX_BRIDGE_S, tz=UTC),
            epoch__epoch__startswith=run.prefix,
        )
        .order_by("-ts")
        .values_list("epoch__epoch", "prompt_tokens", "generation_tokens", "requests", *_EPOCH_BOUNDS)
        .first()
    )
    if last is None or last[0].removeprefix(run.prefix).split("@")[0] != base:
        return None
    bounds = (tuple(last[4]), tuple(last[5]))
    return _EndpointState(base, last[0], (last[1], last[2], last[3]), bounds)


def _node_serving_import(run: _Run, node: Node, targets: dict[str, Points], page_start: float, step: float) -> None:
    """Map each instant's samples with the collector's own mapping (:data:`serving.MAPPERS`) and ingest them;
    refused (named) where a collector reports this node's serving in the window."""
    if (node.pk, "") not in run.window.checked:
        other = serving_of_other_sources(node, run.window.start, run.window.stop, ours=run.prefix)
        run.window.checked[(node.pk, "")] = other
        if other:
            run.summary.refused[f"{node.hostname} serving"] = f"already has {other} in this window"
    if run.window.checked[(node.pk, "")]:
        return
    gpu_uuids = sorted(Gpu.objects.filter(node=node).values_list("uuid", flat=True))
    identities: list[dict[str, Any]] = []
    rows: list[tuple[float, int, dict[str, Any]]] = []
    for instance, points in sorted(targets.items()):
        url = f"http://{instance}/metrics"
        for ts in sorted(points):
            exposition = promtext.Exposition(samples=points[ts])
            kind = serving.detect_kind(exposition)
            if kind is None:
                continue
            starts = [s.value for s in exposition.find("process_start_time_seconds")]
            base = f"{min(starts):.0f}" if starts else "up"
            for model, labels in serving.models_of(exposition):
                c = serving.MAPPERS[kind](exposition, model, labels)
                reading = _serving_reading(run, node, url, c, base, ts)
                if reading is None:
                    continue
                state, fields = reading
                ttft_bounds, itl_bounds = state.bounds or ((), ())
                identity = {
                    "url": url, "kind": kind, "model": c.model, "gpu_uuids": gpu_uuids, "epoch": state.epoch,
                    "ttft_bucket_bounds_s": list(ttft_bounds), "itl_bucket_bounds_s": list(itl_bounds),
                }  # fmt: skip
                if identity not in identities:
                    identities.append(identity)
                rows.append((ts, identities.index(identity), fields))
                run.summary.endpoints.add(f"{url} ({c.model})" if c.model else url)
    if not rows:
        return
    run.summary.nodes.add(node.hostname)
    rows.sort(key=lambda row: row[0])
    names = ("ts", *wire.SERVING_COUNTERS_ALL, "ttft_bucket_counts", "ttft_sum_s", *wire.SERVING_ITL_COLUMNS)
    for chunk, at in enumerate(range(0, len(rows), wire.MAX_SERVING_ROWS)):
        samples: dict[str, list[Any]] = {"endpoint": [], **{name: [] for name in names}}
        for ts, ref, fields in rows[at : at + wire.MAX_SERVING_ROWS]:
            samples["endpoint"].append(ref)
            for name in names:
                samples[name].append(ts if name == "ts" else fields[name])
        payload = {"gpus": [], "gpu_samples": None, "endpoints": identities, "serving_samples": samples}
        _batch_send(run, node, payload, f"{int(page_start)}-s{chunk}", step, rows[at][0])


def _serving_reading(
    run: _Run, node: Node, url: str, c: serving.Counters, base: str, ts: float
) -> tuple[_EndpointState, dict[str, Any]] | None:
    """The epoch and the wire fields of one model's counters at ``ts``; ``None`` while it has nothing yet.

    Epochs follow the collector's rules: the server's start time (``process_start_time_seconds``) where
    exposed (else ``up``), a new one ``@<unix seconds>`` when a counter goes down within it; TTFT and ITL
    bounds are the first seen in an epoch, a histogram that differs is sent null."""
    ttft, itl = (h if h is not None and len(h.bounds) <= wire.MAX_TTFT_BUCKETS else None for h in (c.ttft, c.itl))
    counters = (c.prompt_tokens, c.generation_tokens, c.requests)
    key = (node.pk, url, c.model)
    state = run.endpoints.get(key)
    if state is None or state.base != base:
        state = _endpoint_state(run, node, url, c.model, base, ts) or _EndpointState(base, run.prefix + base)
        run.endpoints[key] = state
    elif any(old is not None and new is not None and new < old for old, new in zip(state.last, counters, strict=True)):
        state.epoch, state.bounds = f"{run.prefix}{base}@{int(ts)}", None
    state.last = tuple(old if new is None else new for old, new in zip(state.last, counters, strict=True))
    if state.bounds is None:
        if ttft is None and not any(counters):
            return None
        state.bounds = (ttft.bounds if ttft is not None else (), itl.bounds if itl is not None else ())
    fields: dict[str, Any] = {
        "prompt_tokens": c.prompt_tokens, "generation_tokens": c.generation_tokens, "requests": c.requests,
        "cached_prompt_tokens": c.cached_prompt_tokens,
    }  # fmt: skip
    for name, h, bounds in (("ttft", ttft, state.bounds[0]), ("itl", itl, state.bounds[1])):
        ok = h is not None and h.bounds == bounds
        fields[f"{name}_bucket_counts"] = [max(0, round(n)) for n in h.counts] if ok and h else None
        fields[f"{name}_sum_s"] = h.sum if ok and h and h.sum is not None and h.sum >= 0 else None
    return state, fields


# --- through the ingest path ---------------------------------------------------------------------


def _batch_send(run: _Run, node: Node, payload: dict[str, Any], key: str, step: float, first_ts: float) -> None:
    source, summary = run.source, run.summary
    payload = {
        "version": WIRE_VERSION,
        "batch_id": f"prom-{source.pk}-{node.pk}-{key}",
        "sent_at": time.time(),
        "collector": {"version": IMPORTER_VERSION, "hostname": node.hostname, "sample_interval_s": step},
        **payload,
    }
    gpu_rows = len(payload["gpu_samples"]["ts"]) if payload["gpu_samples"] else 0
    serving_rows = len(payload["serving_samples"]["ts"]) if payload["serving_samples"] else 0
    summary.rows_sent += gpu_rows
    summary.serving_rows_sent += serving_rows
    try:
        result = batch_ingest(
            node=node, batch=batch_decode(batch_encode(payload, compress=False)), received_at=timezone.now()
        )
    except WireError as error:
        summary.refused[node.hostname] = f"rows from {_iso(first_ts)} refused by ingest: {error}"
        return
    summary.rows_stored += result.stored["gpu_samples"]
    summary.rows_already_stored += result.duplicates["gpu_samples"]
    summary.serving_rows_stored += result.stored["serving_samples"]
    summary.serving_rows_already_stored += result.duplicates["serving_samples"]
    summary.rows_rejected += sum(item["rows"] for item in result.rejected)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")
