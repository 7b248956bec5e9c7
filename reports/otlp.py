"""The ``/metrics`` families pushed with the OpenTelemetry SDK to an OTLP/HTTP endpoint (protobuf).

The same families as ``/metrics`` (``reports.exposition_api.exposed_families``: the same
sums, labels and last complete hour), for one organization at a time, renamed as
OpenTelemetry's semantic conventions name things: dotted names without the unit or
``_total`` (``wattledger_facility_energy_joules_total`` is ``wattledger.facility_energy``,
unit ``J``), the unit in UCUM (``J``, ``g``, ``s``, ``{token}``, ``{currency}``), and
namespaced attributes (``OTEL_ATTRIBUTES``). The OpenTelemetry Collector's Prometheus
exporter turns each name back into the ``/metrics`` one (docs/metrics.md, "OTLP").

Counters are cumulative monotonic sums starting at the organization's first ledger line
(the same start at every push, so a backend reads no reset between pushes); gauges are
gauges. Tokens are integers; money and energy ``Decimal`` become doubles once, as in the
text formats (``reports.exposition.value_float``).

The endpoint is the operator's (a command-line argument or a setting), never one a user
types: it may be an internal collector, so the outbound rule for user-named URLs
(``common.outbound``) does not apply. A failed push (refused connection, an error status,
a timeout) raises ``OtlpPushError`` saying what the exporter saw; the exporter retries
what OTLP calls retryable (429, 502, 503, 504, a lost connection) within ``timeout_s``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Gauge,
    Metric,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from fleets.models import Organization
from reports.exposition import Family, Kind, Number, value_float
from reports.exposition_api import PREFIX, exposed_families
from reports.selectors.exposed import exposed_since

SIGNAL_PATH = "/v1/metrics"
SCOPE = "wattledger"

# Prometheus label -> OpenTelemetry attribute.
OTEL_ATTRIBUTES = {
    "organization": "wattledger.organization",
    "fleet_id": "wattledger.fleet.id",
    "fleet": "wattledger.fleet.name",
    "gpu_model": "wattledger.gpu.model",
    "llm_model": "gen_ai.request.model",
    "currency": "wattledger.currency",
    "node_id": "wattledger.node.id",
    "node": "host.name",
}
# A Prometheus unit suffix -> the UCUM unit; families without one -> an annotation (UCUM's ``{...}``).
UCUM_UNITS = {"joules": "J", "grams": "g", "seconds": "s"}
ANNOTATED_UNITS = {"tokens": "{token}", "cost": "{currency}"}

_EXPORTER_LOGGERS = ("opentelemetry.exporter", "opentelemetry.sdk")
_ERRNO = re.compile(r"\[Errno -?\d+\] [^\"')]+")
_logger = logging.getLogger(__name__)
REPLY_CHARS = 200  # of an error answer's body, in the error


class OtlpPushError(RuntimeError):
    """The endpoint did not take the push; the message says what the exporter saw."""


@dataclass(frozen=True)
class OtlpName:
    name: str
    unit: str


def otel_name(family: Family) -> OtlpName:
    """A family's OpenTelemetry name and unit: ``wattledger_last_hour_gpu_energy_joules`` is
    ``wattledger.last_hour.gpu_energy`` in ``J``; ``wattledger_output_tokens`` is ``wattledger.output_tokens``
    in ``{token}``."""
    rest = family.name.removeprefix(PREFIX)
    namespace = "wattledger"
    if rest.startswith("last_hour_"):
        namespace, rest = "wattledger.last_hour", rest.removeprefix("last_hour_")
    if family.unit:
        return OtlpName(f"{namespace}.{rest.removesuffix(f'_{family.unit}')}", UCUM_UNITS[family.unit])
    unit = next(unit for ending, unit in ANNOTATED_UNITS.items() if rest.endswith(ending))
    return OtlpName(f"{namespace}.{rest}", unit)


def _point_value(value: Number) -> int | float:
    return value if isinstance(value, int) else value_float(value)


def _nanos(moment: datetime | None) -> int:
    return 0 if moment is None else int(moment.timestamp()) * 1_000_000_000


def metrics_data(
    families: list[Family], *, resource: Mapping[str, str], since: datetime | None, now: datetime
) -> MetricsData:
    """The families as OTLP's data model: one metric per family, one data point per sample."""
    metrics = []
    start, at = _nanos(since), int(now.timestamp() * 1e9)
    for family in families:
        named = otel_name(family)
        points = [
            NumberDataPoint(
                attributes={OTEL_ATTRIBUTES[key]: value for key, value in sample.labels},
                start_time_unix_nano=start if family.kind is Kind.COUNTER else 0,
                time_unix_nano=at,
                value=_point_value(sample.value),
            )
            for sample in family.samples
        ]
        data: Sum | Gauge = (
            Sum(points, AggregationTemporality.CUMULATIVE, is_monotonic=True)
            if family.kind is Kind.COUNTER
            else Gauge(points)
        )
        metrics.append(Metric(named.name, family.help, named.unit, data))
    scope = ScopeMetrics(InstrumentationScope(SCOPE), metrics, schema_url="")
    return MetricsData([ResourceMetrics(Resource(dict(resource)), [scope], schema_url="")])


def signal_url(endpoint: str) -> str:
    """The OTLP/HTTP metrics URL: ``endpoint`` as given, or with ``/v1/metrics`` where it names no path."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OtlpPushError(f"not an http(s) URL: {endpoint!r}")
    return endpoint.rstrip("/") + SIGNAL_PATH if parts.path in ("", "/") else endpoint


@dataclass(frozen=True)
class OtlpPushed:
    url: str
    metrics: int
    data_points: int


class _Answers(requests.Session):
    """The exporter's HTTP session, keeping what each attempt got: an error status, or why no answer came."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        try:
            response = super().send(request, **kwargs)
        except requests.RequestException as error:
            self._saw(_why(error))
            raise
        if not response.ok:
            self._saw(f"HTTP {response.status_code} {response.reason}: {response.text[:REPLY_CHARS]!r}")
        return response

    def _saw(self, what: str) -> None:
        if what not in self.seen:
            self.seen.append(what)


def _why(error: requests.RequestException) -> str:
    if isinstance(error, requests.Timeout):
        return f"no answer in time ({type(error).__name__})"
    errno = _ERRNO.search(str(error))
    return f"no connection: {errno.group(0)}" if errno else f"no answer: {error}"


class _Told(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message not in self.messages:
            self.messages.append(message)


@contextmanager
def _exporter_told() -> Iterator[_Told]:
    """What the exporter logs while it pushes, kept for the error instead of printed."""
    told = _Told()
    loggers = [logging.getLogger(name) for name in _EXPORTER_LOGGERS]
    kept = [(logger, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(told)
        logger.propagate = False
    try:
        yield told
    finally:
        for logger, propagate in kept:
            logger.removeHandler(told)
            logger.propagate = propagate


def headers_parsed(texts: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` texts (``--header``, ``WATTLEDGER_OTLP_HEADERS``) as headers."""
    headers = {}
    for text in texts:
        name, equals, value = text.partition("=")
        if not equals or not name.strip():
            raise OtlpPushError(f"header {text!r}: write it NAME=VALUE (Authorization=Bearer ...)")
        headers[name.strip()] = value.strip()
    return headers


def otlp_push(
    *,
    organization: Organization,
    endpoint: str,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
    per_node: bool = False,
    now: datetime,
) -> OtlpPushed:
    """Push the organization's families once; raise ``OtlpPushError`` if the endpoint did not take them."""
    url = signal_url(endpoint)
    ids = [organization.pk]
    families = exposed_families(organization_ids=ids, now=now, per_node=per_node)
    resource = {"service.name": "wattledger", "wattledger.organization": organization.slug}
    data = metrics_data(families, resource=resource, since=exposed_since(organization_ids=ids), now=now)
    answers = _Answers()
    exporter = OTLPMetricExporter(endpoint=url, headers=dict(headers or {}), timeout=timeout_s, session=answers)
    started = time.monotonic()
    with _exporter_told() as told:
        try:
            result = exporter.export(data, timeout_millis=timeout_s * 1000)
        finally:
            exporter.shutdown()
    if result is not MetricExportResult.SUCCESS:
        seen = "; ".join([*answers.seen, *told.messages]) or "no reason given"
        waited = time.monotonic() - started
        raise OtlpPushError(f"OTLP push to {url} failed after {waited:.1f} s: {seen}")
    points = sum(len(family.samples) for family in families)
    return OtlpPushed(url=url, metrics=len(families), data_points=points)


def otlp_push_configured(*, now: datetime) -> str:
    """The push the settings name (``WATTLEDGER_OTLP_ENDPOINT``, one organization): what happened, never raising."""
    endpoint, slug = settings.WATTLEDGER_OTLP_ENDPOINT, settings.WATTLEDGER_OTLP_ORGANIZATION
    if not endpoint:
        return "off: WATTLEDGER_OTLP_ENDPOINT is not set"
    organization = Organization.objects.filter(slug=slug).first()
    if organization is None:
        _logger.warning("OTLP push: no organization %r (WATTLEDGER_OTLP_ORGANIZATION)", slug)
        return f"failed: no organization {slug!r}"
    try:
        pushed = otlp_push(
            organization=organization, endpoint=endpoint, headers=headers_parsed(settings.WATTLEDGER_OTLP_HEADERS),
            timeout_s=settings.WATTLEDGER_OTLP_TIMEOUT_S, now=now,
        )  # fmt: skip
    except OtlpPushError as error:
        _logger.warning("%s", error)
        return f"failed: {error}"
    return f"pushed {pushed.data_points} data point(s) of {organization.slug} to {pushed.url}"
