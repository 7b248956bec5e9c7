"""Importing GPU telemetry from a real Prometheus that scraped a stand-in dcgm-exporter (``prometheus_import``)."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import cast

import pytest
from django.core.management import CommandError, call_command

from fleets.models import Gpu, Node
from telemetry.models import GpuEpoch, GpuHourUsage, GpuSample, PrometheusSource
from telemetry.partitions import partitions_ensure
from telemetry.prometheus_import import PrometheusClient, PrometheusImportError, prometheus_import
from telemetry.rollup import rollup_node_hours
from tests.helpers.clients import free_port
from tests.helpers.dcgm_exporter import DcgmExporterStandIn, StandInGpu
from tests.helpers.factories import GpuFactory, NodeFactory
from tests.helpers.prometheus import PROMETHEUS, SKIP_REASON, RunningPrometheus, prometheus_started
from tests.helpers.stub_server import Answer, Request, StubServer

HOST = "gpu-node-1"
real_prometheus = pytest.mark.skipif(PROMETHEUS is None, reason=SKIP_REASON)


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
