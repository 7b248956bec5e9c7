"""Importing GPU telemetry from a real Prometheus that scraped a stand-in dcgm-exporter (``prometheus_import``)."""

from __future__ import annotations

import contextlib
import itertools
import math
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from fleets.models import Gpu, Node, Organization, Role
from telemetry.models import GpuEpoch, GpuHourUsage, GpuSample, PrometheusSource
from telemetry.partitions import partitions_ensure
from telemetry.prometheus_import import PrometheusClient, PrometheusImportError, prometheus_import
from telemetry.rollup import rollup_node_hours
from tests.helpers.clients import free_port
from tests.helpers.dcgm_exporter import DcgmExporterStandIn, StandInGpu
from tests.helpers.factories import GpuFactory, MembershipFactory, NodeFactory, UserFactory
from tests.helpers.prometheus import PROMETHEUS, SKIP_REASON, RunningPrometheus, prometheus_started
from tests.helpers.stub_server import Answer, Request, StubServer

HOST = "gpu-node-1"
real_prometheus = pytest.mark.skipif(PROMETHEUS is None, reason=SKIP_REASON)


@pytest.fixture(autouse=True)
def _loopback_allowed(settings) -> None:
    # The stand-in Prometheus listens on loopback, which the rule for user-named URLs refuses unless the
    # operator allows it: it is reached through the allow-list, as an operator's internal Prometheus is.
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningPrometheus, datetime, datetime]]:
    """~16 s of 1 s scrapes of two GPUs with a 3 s gap (the exporter failing) midway: (prometheus, start, end)."""
    if PROMETHEUS is None:
        pytest.skip(SKIP_REASON)
    stand_in = DcgmExporterStandIn([StandInGpu("GPU-aaa", 0), StandInGpu("GPU-bbb", 1, power_w=98.5)], hostname=HOST)
    start = datetime.fromtimestamp(math.floor(time.time()), tz=UTC)
    running = prometheus_started(stand_in, Path(tmp_path_factory.mktemp("prometheus")))
    time.sleep(6)
    stand_in.mode = "error"  # a scrape gap: the counter goes on
    time.sleep(3)
    stand_in.mode = "ok"
    time.sleep(7)
    end = datetime.fromtimestamp(math.floor(time.time()), tz=UTC)
    yield running, start, end
    running.stop()


def make_node(hostname: str) -> Node:
    return cast(Node, NodeFactory(hostname=hostname))


def source_for(node: Node, url: str, **kwargs: object) -> PrometheusSource:
    defaults: dict[str, object] = {"name": "main", "url": url, "scrape_interval_s": 1}
    return PrometheusSource.objects.create(organization=node.fleet.organization, **{**defaults, **kwargs})


def import_window(source: PrometheusSource, start: datetime, end: datetime) -> str:
    out = StringIO()
    call_command(
        "prometheus_import", "--source", source.name, "--start", start.isoformat(), "--end", end.isoformat(),
        "--page-hours", str(5 / 3600), "--backoff", "0.01", stdout=out,
    )  # fmt: skip
    return out.getvalue()


@pytest.mark.slow
@real_prometheus
@pytest.mark.django_db
def test_the_import_stores_the_exporters_energy_exactly_and_once(scraped) -> None:
    running, start, end = scraped
    node = make_node(HOST)
    source = source_for(node, running.url)
    first = import_window(source, start, end)
    assert "page(s); 1 node(s), 2 GPU(s)" in first
    assert first.count(" .. ") >= 4  # paged by time, a line per page
    for stand_in_gpu in running.stand_in.gpus:
        gpu = Gpu.objects.get(uuid=stand_in_gpu.uuid, node=node)
        rows = list(GpuSample.objects.filter(gpu=gpu).order_by("ts").values_list("ts", "energy_j", "power_w"))
        assert len(rows) >= 10
        energies = [float(energy) for _, energy, _ in rows if energy is not None]
        assert len(energies) == len(rows)
        first_mj, last_mj = round(energies[0] * 1000), round(energies[-1] * 1000)
        truth_j = stand_in_gpu.truth_j(first_mj, last_mj)  # a KeyError if a counter value read was never served
        stored_j = energies[-1] - energies[0]
        assert truth_j > 0
        assert stored_j == pytest.approx(truth_j, rel=1e-3)
        assert rows[0][2] == pytest.approx(stand_in_gpu.power_w, rel=1e-4)
        assert {e.epoch for e in GpuEpoch.objects.filter(gpu=gpu)} == {"prometheus:main/550.54.15"}
        assert all(ts.timestamp() == int(ts.timestamp()) for ts, _, _ in rows)  # the step's grid
        assert max((b[0] - a[0]).total_seconds() for a, b in itertools.pairwise(rows)) >= 3  # the scrape gap
        # The hourly energy the ledger uses, from the counter's increases, across the gap too:
        hours = sorted({ts.replace(minute=0, second=0, microsecond=0) for ts, _, _ in rows})
        rollup_node_hours(node_id=node.pk, hour_starts=hours)
        hourly_j = sum(GpuHourUsage.objects.filter(gpu=gpu).values_list("energy_j", flat=True))
        assert hourly_j == pytest.approx(truth_j, rel=1e-3)
    stored = GpuSample.objects.count()
    again = import_window(source, start, end)
    assert GpuSample.objects.count() == stored
    assert f", 0 stored, {stored} already stored" in again


@pytest.mark.slow
@real_prometheus
@pytest.mark.django_db
def test_hosts_matching_no_node_are_named(scraped) -> None:
    running, start, end = scraped
    node = make_node("elsewhere")
    with pytest.raises(CommandError, match=f"hosts found: {HOST}"):
        import_window(source_for(node, running.url), start, end)


@pytest.mark.slow
@real_prometheus
@pytest.mark.django_db
def test_a_host_label_the_series_lack_names_the_series_found(scraped) -> None:
    running, start, end = scraped
    node = make_node(HOST)
    with pytest.raises(CommandError, match=r"no 'node' label .*series found: DCGM_FI_DEV_POWER_USAGE\{.*UUID="):
        import_window(source_for(node, running.url, host_label="node"), start, end)


@pytest.mark.slow
@real_prometheus
@pytest.mark.django_db
def test_a_selector_that_matches_nothing_says_so(scraped) -> None:
    running, start, end = scraped
    source = source_for(make_node(HOST), running.url, selector='job="nope"')
    with pytest.raises(
        CommandError, match=r'no whole-GPU DCGM series .* matching \{job="nope"\} nor serving series .* between'
    ):
        import_window(source, start, end)


@pytest.mark.slow
@real_prometheus
@pytest.mark.django_db
def test_a_gpu_a_collector_reports_is_refused_and_named(scraped) -> None:
    running, start, end = scraped
    node = make_node(HOST)
    gpu = cast(Gpu, GpuFactory(node=node, uuid="GPU-aaa", index=0))
    epoch = GpuEpoch.objects.create(gpu=gpu, epoch="6f1e2d3c-boot/550.54.15")
    partitions_ensure(days={start.date()})
    GpuSample.objects.create(gpu=gpu, epoch=epoch, ts=start, energy_j=1.0)
    out = import_window(source_for(node, running.url), start, end)
    assert "refused GPU-aaa: GPU of gpu-node-1 already has samples from a collector" in out
    assert GpuSample.objects.filter(gpu=gpu).count() == 1
    assert GpuSample.objects.filter(gpu__uuid="GPU-bbb").count() >= 10


@pytest.mark.django_db
def test_a_prometheus_that_fails_is_retried_then_named_with_its_status() -> None:
    server = StubServer(default=lambda request: (503, {"Content-Type": "text/plain"}, b"overloaded")).start()
    try:
        source = source_for(make_node(HOST), server.url)
        client = PrometheusClient(source, timeout_s=2, backoff_s=0.01)
        now = datetime.fromtimestamp(math.floor(time.time()), tz=UTC)
        with pytest.raises(PrometheusImportError, match=rf"Prometheus at {server.url} failed after 3 tries: HTTP 503"):
            prometheus_import(source, start=now - timedelta(hours=1), end=now, client=client)
        assert len(server.requests) == 3
        assert server.requests[0].path.startswith("/api/v1/query_range?query=DCGM_FI_DEV_POWER_USAGE")
    finally:
        server.stop()


@pytest.mark.django_db
def test_a_stopped_prometheus_is_a_clear_error_after_retries() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    source = source_for(make_node(HOST), url)
    now = datetime.fromtimestamp(math.floor(time.time()), tz=UTC)
    with pytest.raises(CommandError, match=rf"Prometheus at {url} failed after 3 tries: .*[Cc]onnection refused"):
        import_window(source, now - timedelta(minutes=1), now)


@pytest.mark.django_db
def test_a_slow_prometheus_times_out_each_try_then_is_named() -> None:
    def slow(request: Request) -> Answer:
        time.sleep(1.0)
        return 200, {"Content-Type": "application/json"}, b'{"status": "success", "data": {"result": []}}'

    server = StubServer(default=slow).start()
    try:
        source = source_for(make_node(HOST), server.url)
        client = PrometheusClient(source, timeout_s=0.2, backoff_s=0.01)
        now = datetime.fromtimestamp(math.floor(time.time()), tz=UTC)
        with pytest.raises(PrometheusImportError, match=r"failed after 3 tries: no answer within 0.2 s"):
            prometheus_import(source, start=now - timedelta(minutes=1), end=now, client=client)
        assert len(server.requests) == 3
    finally:
        server.stop()


# --- the source's URL: the rule for addresses users name (common.outbound) ---------------------------

INTERNAL = [
    "http://127.0.0.1:9090", "http://10.0.0.5:9090", "http://[::1]:9090", "http://169.254.169.254",
    "http://[::ffff:192.168.1.10]:9090", "http://prometheus.monitoring:9090",
]  # fmt: skip


@pytest.fixture
def names(_stand_in_resolver: dict[str, str]) -> dict[str, str]:
    """An internal name (as docs/telemetry.md's example) and a public one, as the stand-in resolver answers."""
    _stand_in_resolver.update({"prometheus.monitoring": "10.0.0.9", "prometheus.example.com": "93.184.215.14"})
    return _stand_in_resolver


def admin_add(client: Client, organization: Organization, url: str) -> Any:
    """The admin's add form of a Prometheus source, as an organization admin fills it in."""
    fields = {"organization": organization.pk, "name": "main", "url": url, "host_label": "Hostname",
              "scrape_interval_s": "15", "enabled": "on"}  # fmt: skip
    return client.post(reverse("admin:telemetry_prometheussource_add"), fields)


@pytest.fixture
def org_admin(client: Client) -> tuple[Client, Organization]:
    """A client signed in as an admin of an organization with one node."""
    node = make_node(HOST)
    user = cast(User, UserFactory(is_staff=True))
    MembershipFactory(user=user, organization=node.fleet.organization, role=Role.ADMIN)
    client.force_login(user)
    return client, node.fleet.organization


@pytest.mark.parametrize("url", INTERNAL)
@pytest.mark.django_db
def test_a_source_at_an_internal_address_is_refused_unless_the_operator_allows_it(names, settings, org_admin, url):
    client, organization = org_admin
    settings.OUTBOUND_ALLOWED_HOSTS = []
    # The model's validation (the admin, any form) and the admin's add form both refuse it, saying why.
    with pytest.raises(ValidationError, match=r"refused: .*an operator may allow it in OUTBOUND_ALLOWED_HOSTS"):
        PrometheusSource(organization=organization, name="main", url=url).full_clean()
    refused = admin_add(client, organization, url)
    assert refused.status_code == 200
    errors = refused.context["adminform"].form.errors["url"]
    assert errors == [f"refused: {urlsplit(url).hostname} is (or resolves to) an internal address; an operator may "
                      "allow it in OUTBOUND_ALLOWED_HOSTS"]  # fmt: skip
    assert not PrometheusSource.objects.exists()

    # The operator allows that host (by name or address, with its port): saved.
    settings.OUTBOUND_ALLOWED_HOSTS = [urlsplit(url).netloc]
    PrometheusSource(organization=organization, name="main", url=url).full_clean()
    assert admin_add(client, organization, url).status_code == 302
    assert PrometheusSource.objects.get().url == url


@pytest.mark.parametrize(
    "url",
    ["https://prometheus.example.com/#", "https://prometheus.example.com#x", "https://prometheus.example.com/?",
     "https://prometheus.example.com/?query=up", "http://127.0.0.1:9090/api/v1/query?query=up#"],
)  # fmt: skip
@pytest.mark.django_db
def test_a_base_url_with_a_query_string_or_fragment_is_refused(names, org_admin, url):
    # The import appends /api/v1/query_range to the URL: a '?' or '#' would make it ask whatever the URL says.
    client, organization = org_admin
    with pytest.raises(ValidationError, match="without a query string or fragment"):
        PrometheusSource(organization=organization, name="main", url=url).full_clean()
    refused = admin_add(client, organization, url)
    assert "without a query string or fragment" in str(refused.context["adminform"].form.errors["url"])
    assert not PrometheusSource.objects.exists()
    # and one saved before the rule is refused when read, nothing sent
    source = source_for(make_node("gpu-b"), url)
    with pytest.raises(PrometheusImportError, match="without a query string or fragment"):
        PrometheusClient(source).query_range("up", 0, 60, 15)


@pytest.mark.django_db
def test_the_rule_is_checked_again_when_a_source_is_read(names, settings) -> None:
    server = StubServer(default=lambda request: (200, {}, b'{"status": "success", "data": {"result": []}}')).start()
    try:
        port = urlsplit(server.url).port
        source = source_for(make_node(HOST), f"http://prometheus.example.com:{port}")
        source.full_clean()  # public when saved
        # given: its name now resolves to loopback (DNS changed, or a rebinding name)
        names["prometheus.example.com"] = "127.0.0.1"
        settings.OUTBOUND_ALLOWED_HOSTS = []
        with pytest.raises(PrometheusImportError, match=r"refused: prometheus\.example\.com is .* an internal address"):
            PrometheusClient(source, tries=1).query_range("up", 0, 60, 15)
        assert server.requests == []
        # and: a source saved before the rule, at an internal address, is refused the same way
        with pytest.raises(PrometheusImportError, match=r"refused: 127\.0\.0\.1 is .* an internal address"):
            PrometheusClient(source_for(make_node("gpu-b"), server.url), tries=1).query_range("up", 0, 60, 15)
        assert server.requests == []

        # when: the operator allows loopback, the request goes to the address checked (the system's resolver
        # never sees the name), naming the host it asked for
        settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
        assert PrometheusClient(source, tries=1).query_range("up", 0, 60, 15) == []
        assert [request.headers["Host"] for request in server.requests] == [f"prometheus.example.com:{port}"]
    finally:
        server.stop()


@pytest.mark.django_db
def test_a_redirect_is_not_followed(settings) -> None:
    elsewhere = StubServer(default=lambda request: (200, {}, b'{"status": "success", "data": {"result": []}}')).start()
    redirecting = StubServer(default=lambda request: (302, {"Location": elsewhere.url + request.path}, b"")).start()
    try:
        source = source_for(make_node(HOST), redirecting.url)
        with pytest.raises(PrometheusImportError, match=r"failed after 1 try: HTTP 302 \(Found\)$"):
            PrometheusClient(source, tries=3).query_range("up", 0, 60, 15)
        assert (len(redirecting.requests), len(elsewhere.requests)) == (1, 0)
    finally:
        redirecting.stop()
        elsewhere.stop()


@pytest.mark.django_db
def test_a_server_answering_something_else_than_http_is_named_without_its_words() -> None:
    # given: a service of another protocol where the source's URL points (it greets with a banner)
    listener = socket.create_server(("127.0.0.1", 0))

    def greet() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = listener.accept()
                with connection:
                    connection.sendall(b"SSH-2.0-zz-internal-banner\r\n")

    threading.Thread(target=greet, daemon=True).start()
    try:
        source = source_for(make_node(HOST), f"http://127.0.0.1:{listener.getsockname()[1]}")
        with pytest.raises(PrometheusImportError) as failed:
            PrometheusClient(source, tries=1).query_range("up", 0, 60, 15)
    finally:
        listener.close()
    # then: the members read that it is not HTTP; its words are the admins' detail
    assert str(failed.value).endswith("failed after 1 try: the answer is not valid HTTP")
    assert "zz-internal-banner" in failed.value.detail
