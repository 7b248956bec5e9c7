"""``manage.py otlp_push``: the ``/metrics`` families over OTLP/HTTP, received by a real HTTP server on 127.0.0.1.

The receiver decodes what arrives as an OTLP collector would (``ExportMetricsServiceRequest``), and the test
turns each OpenTelemetry name back into its Prometheus one by the OpenTelemetry-to-Prometheus rules (dots to
underscores, the unit's suffix, ``_total`` for a monotonic sum): the data points are ``/metrics``' samples.
"""

from __future__ import annotations

import gzip
import time
from datetime import datetime
from io import StringIO
from typing import Any

import pytest
import time_machine
from django.core.management import CommandError, call_command
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from reports.otlp import OTEL_ATTRIBUTES
from reports.tasks import otlp_push_task
from tests.helpers.clients import free_port
from tests.helpers.exposition import INTO_THE_HOUR, Series, scraped, scraper
from tests.helpers.reports import H1, H3
from tests.helpers.stub_server import Answer, Request, StubServer

pytestmark = pytest.mark.django_db

AT = H3 + INTO_THE_HOUR
PROMETHEUS_SUFFIX = {"J": "joules", "g": "grams", "s": "seconds"}
PROMETHEUS_LABEL = {attribute: label for label, attribute in OTEL_ATTRIBUTES.items()}


def taken(request: Request) -> Answer:
    return 200, {"Content-Type": "application/x-protobuf"}, ExportMetricsServiceResponse().SerializeToString()


@pytest.fixture
def receiver() -> Any:
    server = StubServer(default=taken).start()
    yield server
    server.stop()


def push(*args: str, at: datetime = AT) -> str:
    out = StringIO()
    with time_machine.travel(at, tick=True):
        call_command("otlp_push", *args, stdout=out)
    return out.getvalue()


def header(request: Request, name: str) -> str | None:
    """HTTP header names are case-insensitive (the exporter sends them in lower case)."""
    return {key.lower(): value for key, value in request.headers.items()}.get(name.lower())


def received(request: Request) -> ExportMetricsServiceRequest:
    body = gzip.decompress(request.body) if header(request, "Content-Encoding") == "gzip" else request.body
    decoded = ExportMetricsServiceRequest()
    decoded.ParseFromString(body)
    return decoded


def _prometheus_name(metric: Any) -> str:
    """OpenTelemetry's Prometheus compatibility: ``a.b`` in ``J`` summed monotonically is ``a_b_joules_total``."""
    name = metric.name.replace(".", "_")
    if metric.unit in PROMETHEUS_SUFFIX:
        name = f"{name}_{PROMETHEUS_SUFFIX[metric.unit]}"
    else:
        assert metric.unit.startswith("{") and metric.unit.endswith("}"), metric.unit  # an annotation: no suffix
    kind = metric.WhichOneof("data")
    assert kind in ("sum", "gauge"), kind
    if kind == "sum":
        assert metric.sum.is_monotonic and metric.sum.aggregation_temporality == 2  # cumulative
        return f"{name}_total"
    return name


def as_series(request: ExportMetricsServiceRequest) -> Series:
    found: Series = {}
    for resource in request.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points = metric.sum.data_points if metric.WhichOneof("data") == "sum" else metric.gauge.data_points
                for point in points:
                    labels = frozenset(
                        (PROMETHEUS_LABEL[item.key], item.value.string_value) for item in point.attributes
                    )
                    value = point.as_int if point.WhichOneof("value") == "as_int" else point.as_double
                    found[(_prometheus_name(metric), labels)] = float(value)
    return found


def resource_attributes(request: ExportMetricsServiceRequest) -> dict[str, str]:
    (resource,) = request.resource_metrics
    return {item.key: item.value.string_value for item in resource.resource.attributes}


# --- what arrives is /metrics ---------------------------------------------------------


def test_the_pushed_data_points_are_the_organizations_metrics(fleets, viewer_a, receiver):
    exposed = scraped(scraper(viewer_a), AT)

    out = push("--organization", "org-a", "--endpoint", receiver.url)

    (request,) = receiver.requests
    assert (request.method, request.path) == ("POST", "/v1/metrics")  # no path given: OTLP's metrics path
    assert header(request, "Content-Type") == "application/x-protobuf"
    pushed = received(request)
    assert as_series(pushed) == exposed
    assert f"org-a: pushed {len(exposed)} data point(s)" in out


def test_per_node_as_the_flag_of_metrics(fleets, viewer_a, receiver):
    exposed = scraped(scraper(viewer_a), AT, "/metrics?per_node=true")

    push("--organization", "org-a", "--endpoint", f"{receiver.url}/v1/metrics", "--per-node")

    assert as_series(received(receiver.requests[0])) == exposed
    hosts = {value for (_, labels) in exposed for key, value in labels if key == "node"}
    assert hosts == {fleets.h100.hostname, fleets.rtx.hostname}


def test_another_organizations_figures_are_absent(fleets, user_b, receiver):
    push("--organization", "org-a", "--endpoint", receiver.url)
    push("--organization", "org-b", "--endpoint", receiver.url)

    mine, theirs = (received(request) for request in receiver.requests)
    assert resource_attributes(mine) == {"service.name": "wattledger", "wattledger.organization": "org-a"}
    assert resource_attributes(theirs)["wattledger.organization"] == "org-b"
    organizations = {value for (_, labels) in as_series(mine) for key, value in labels if key == "organization"}
    assert organizations == {"org-a"}
    other_fleet = str(fleets.other_org_node.fleet_id)
    assert not [labels for (_, labels) in as_series(mine) if ("fleet_id", other_fleet) in labels]
    assert as_series(theirs) == scraped(scraper(user_b), AT)


def test_counters_start_at_the_first_ledger_line_at_every_push(fleets, receiver):
    push("--organization", "org-a", "--endpoint", receiver.url)
    push("--organization", "org-a", "--endpoint", receiver.url, at=AT + 3 * INTO_THE_HOUR)

    starts, gauge_starts, times = set(), set(), set()
    for request in receiver.requests:
        for metric in received(request).resource_metrics[0].scope_metrics[0].metrics:
            kind = metric.WhichOneof("data")
            for point in getattr(metric, kind).data_points:
                (starts if kind == "sum" else gauge_starts).add(point.start_time_unix_nano)
                times.add(point.time_unix_nano // 10**9)
    assert starts == {int(H1.timestamp()) * 10**9}  # a backend reads one cumulative series, no reset
    assert gauge_starts == {0}
    assert len(times) == 2


def test_names_and_units_follow_the_semantic_conventions(fleets, receiver):
    push("--organization", "org-a", "--endpoint", receiver.url)

    metrics = {m.name: m for m in received(receiver.requests[0]).resource_metrics[0].scope_metrics[0].metrics}
    assert metrics["wattledger.facility_energy"].unit == "J"
    assert metrics["wattledger.location_co2e"].unit == "g"
    assert metrics["wattledger.gpu_held"].unit == "s"
    assert metrics["wattledger.output_tokens"].unit == "{token}"
    assert metrics["wattledger.cost"].unit == "{currency}"
    assert metrics["wattledger.last_hour.cost"].WhichOneof("data") == "gauge"
    assert metrics["wattledger.complete_through_timestamp"].unit == "s"
    tokens = metrics["wattledger.output_tokens"].sum.data_points
    assert tokens and all(point.WhichOneof("value") == "as_int" for point in tokens)
    cost = metrics["wattledger.cost"].sum.data_points[0]
    assert {item.key for item in cost.attributes} >= {"wattledger.fleet.id", "wattledger.currency"}


def test_headers_are_sent_with_the_push(fleets, receiver):
    push("--organization", "org-a", "--endpoint", receiver.url, "--header", "Authorization=Bearer otlp-secret")

    assert header(receiver.requests[0], "Authorization") == "Bearer otlp-secret"


# --- bad endpoints: a clear error, exit status 1 -------------------------------------


def failed_push(*args: str) -> CommandError:
    with pytest.raises(CommandError) as raised:
        push("--organization", "org-a", *args)
    assert raised.value.returncode == 1
    return raised.value


def test_a_refused_connection_is_a_clear_error(fleets):
    started = time.monotonic()
    error = failed_push("--endpoint", f"http://127.0.0.1:{free_port()}", "--timeout", "1")

    assert "OTLP push to http://127.0.0.1:" in str(error)
    assert "Connection refused" in str(error)
    assert time.monotonic() - started < 10


def test_an_error_status_is_a_clear_error(fleets):
    failing = StubServer(default=lambda request: (500, {}, b"collector broke")).start()
    try:
        error = failed_push("--endpoint", failing.url, "--timeout", "2")
    finally:
        failing.stop()

    assert "500" in str(error)
    assert len(failing.requests) == 1  # OTLP does not retry a 500


def test_a_retryable_status_is_retried_then_taken(fleets, receiver):
    receiver.script.append((503, {"Retry-After": "0"}, b""))

    push("--organization", "org-a", "--endpoint", receiver.url, "--timeout", "5")

    assert len(receiver.requests) == 2


@pytest.mark.parametrize(
    ("args", "told"),
    [
        (("--endpoint", "ftp://collector:4318"), "not an http(s) URL"),
        (("--endpoint", "http://127.0.0.1:4318", "--header", "no-equals"), "NAME=VALUE"),
    ],
)
def test_bad_arguments_are_clear_errors(fleets, args, told):
    assert told in str(failed_push(*args))


def test_an_unknown_organization_is_a_clear_error(fleets):
    with pytest.raises(CommandError, match="no organization 'nobody'"):
        call_command("otlp_push", "--organization", "nobody", "--endpoint", "http://127.0.0.1:4318")


# --- the beat task: the settings' endpoint, one organization ---------------------------


def test_the_beat_task_pushes_the_configured_organization(fleets, viewer_a, receiver, settings):
    settings.WATTLEDGER_OTLP_ENDPOINT = receiver.url
    settings.WATTLEDGER_OTLP_ORGANIZATION = "org-a"
    settings.WATTLEDGER_OTLP_HEADERS = ["Authorization=Bearer otlp-secret"]

    with time_machine.travel(AT, tick=True):
        told = otlp_push_task()

    assert told.startswith("pushed ") and "of org-a to" in told
    (request,) = receiver.requests
    assert as_series(received(request)) == scraped(scraper(viewer_a), AT)
    assert header(request, "Authorization") == "Bearer otlp-secret"


def test_the_beat_task_is_off_without_an_endpoint(fleets, receiver, settings):
    settings.WATTLEDGER_OTLP_ENDPOINT = ""

    assert otlp_push_task().startswith("off")
    assert receiver.requests == []


def test_a_failed_beat_push_is_logged_not_raised(fleets, settings, caplog):
    settings.WATTLEDGER_OTLP_ENDPOINT = f"http://127.0.0.1:{free_port()}"
    settings.WATTLEDGER_OTLP_ORGANIZATION = "org-a"
    settings.WATTLEDGER_OTLP_TIMEOUT_S = 1

    told = otlp_push_task()

    assert told.startswith("failed: OTLP push to") and "Connection refused" in told
    assert "Connection refused" in caplog.text
