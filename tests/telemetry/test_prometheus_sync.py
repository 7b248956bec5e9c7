"""Reading Prometheus sources continuously (the beat task), and what the import does with odd input.

A scripted Prometheus HTTP API (``tests.helpers.prometheus.ScriptedPrometheus``) on 127.0.0.1 serves
series the test defines, so each case is exact; the real Prometheus runs in
``test_prometheus_import.py`` and in the serving test below.
"""

from __future__ import annotations

import html
import itertools
import math
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from django.conf import settings
from django.urls import reverse

from fleets.models import Gpu, Node, Role
from fleets.services import credential_issue
from telemetry.models import (
    EndpointHourUsage,
    GpuEpoch,
    GpuSample,
    PrometheusSource,
    ServingEndpoint,
    ServingSample,
)
from telemetry.partitions import partitions_ensure
from telemetry.prometheus_import import NothingToImport, PrometheusClient, energy_noise, prometheus_import
from telemetry.prometheus_sync import backoff_s, node_sources, organization_sources, prometheus_sources_run, source_sync
from telemetry.rollup import rollup_node_hours
from tests.helpers import ingest
from tests.helpers.batches import make_batch
from tests.helpers.clients import free_port
from tests.helpers.dcgm_exporter import DcgmExporterStandIn, StandInGpu
from tests.helpers.factories import GpuFactory, MembershipFactory, NodeFactory, UserFactory
from tests.helpers.prometheus import PROMETHEUS, SKIP_REASON, ScriptedPrometheus, ScriptedSeries, prometheus_started
from tests.helpers.stub_server import Answer, Request, StubServer
from tests.helpers.vllm_server import VllmStandIn

STEP = 15
DCGM_LABELS = {
    "gpu": "0", "UUID": "GPU-prom-0", "device": "nvidia0", "modelName": "NVIDIA H100 80GB HBM3",
    "Hostname": "gpu-a", "DCGM_FI_DRIVER_VERSION": "550.54.15", "instance": "10.0.0.5:9400", "job": "dcgm",
}  # fmt: skip


def grid_now() -> datetime:
    """A time on the step's grid, ten minutes ago (runs "later" than it must not be in the future)."""
    return datetime.fromtimestamp(math.floor((time.time() - 600) / STEP) * STEP, tz=UTC)


def energy_mj(ts: float) -> float:
    """A GPU drawing 400 W: its counter in mJ."""
    return 31_035_686_671 + 400_000 * (ts - 1.7e9)


def scripted_gpu(labels: dict[str, str] = DCGM_LABELS, energy=energy_mj) -> ScriptedPrometheus:
    prometheus = ScriptedPrometheus()
    prometheus.add("DCGM_FI_DEV_POWER_USAGE", labels, lambda ts: 400.0)
    prometheus.add("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", labels, energy)
    prometheus.add("DCGM_FI_DEV_GPU_UTIL", labels, lambda ts: 90.0)
    return prometheus


@pytest.fixture(autouse=True)
def _loopback_allowed(settings) -> None:
    # The stand-in Prometheus listens on loopback, which the rule for user-named URLs refuses unless the
    # operator allows it: it is reached through the allow-list, as an operator's internal Prometheus is.
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]


@pytest.fixture
def servers() -> Iterator[list[StubServer]]:
    started: list[StubServer] = []
    yield started
    for server in started:
        server.stop()


def serve(servers: list[StubServer], answer) -> str:
    server = StubServer(default=answer).start()
    servers.append(server)
    return server.url


def make_source(hostname: str, url: str, **kwargs: object) -> PrometheusSource:
    node = cast(Node, NodeFactory(hostname=hostname))
    defaults: dict[str, object] = {"name": "main", "url": url, "scrape_interval_s": STEP}
    return PrometheusSource.objects.create(organization=node.fleet.organization, **{**defaults, **kwargs})


def fresh(source: PrometheusSource) -> PrometheusSource:
    return PrometheusSource.objects.get(pk=source.pk)


# --- the beat task ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_beat_task_is_scheduled_every_minute() -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["prometheus-import"]
    assert entry == {"task": "telemetry.prometheus_import_task", "schedule": timedelta(minutes=1)}
    from config.celery import app

    app.loader.import_default_modules()
    assert "telemetry.prometheus_import_task" in app.tasks


@pytest.mark.django_db
def test_a_dead_prometheus_of_one_organization_never_stops_another(servers, client) -> None:
    dead_url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    dead = make_source("gpu-dead", dead_url, name="dead")
    live = make_source("gpu-a", serve(servers, scripted_gpu().answer))
    assert dead.organization_id != live.organization_id
    now = grid_now()
    outcomes = prometheus_sources_run(now=now)
    assert set(outcomes) == {f"{dead.organization.slug}/dead", f"{live.organization.slug}/main"}
    assert "Connection refused" in outcomes[f"{dead.organization.slug}/dead"]
    dead, live = fresh(dead), fresh(live)
    # The live one imported its first hour up to the last complete step, and recorded it.
    assert live.imported_until == now - timedelta(seconds=STEP)
    assert live.failures == 0 and live.last_error == "" and live.next_attempt_at is None
    rows = GpuSample.objects.filter(gpu__uuid="GPU-prom-0").count()
    assert rows == 3600 // STEP - 1
    # The dead one: its error, retried later; its watermark unmoved.
    assert dead.failures == 1 and dead.imported_until is None
    assert dead.next_attempt_at == now + timedelta(seconds=settings.PROMETHEUS_IMPORT_BACKOFF_S)
    assert f"Prometheus at {dead_url} failed after 1 try" in dead.last_error
    # Shown to the dead one's organization, on its nodes page and on its node's page.
    user = UserFactory()
    MembershipFactory(user=user, organization=dead.organization)
    client.force_login(user)
    page = client.get(reverse("nodes")).content.decode()
    assert 'id="prometheus-sources"' in page and "failing" in page and dead_url in page
    node = Node.objects.get(hostname="gpu-dead")
    assert dead_url in client.get(reverse("node", args=[node.pk])).content.decode()
    # Before its next attempt the dead one is left alone; the live one goes on from its watermark.
    later = now + timedelta(seconds=30)
    outcomes = prometheus_sources_run(now=later)
    assert set(outcomes) == {f"{live.organization.slug}/main"}
    assert fresh(live).imported_until == later - timedelta(seconds=STEP)
    assert GpuSample.objects.filter(gpu__uuid="GPU-prom-0").count() == rows + 2
    assert fresh(dead).last_attempt_at == now
    # At its next attempt it fails again: the wait doubles.
    again = now + timedelta(seconds=settings.PROMETHEUS_IMPORT_BACKOFF_S)
    prometheus_sources_run(now=again)
    dead = fresh(dead)
    assert dead.failures == 2
    assert dead.next_attempt_at == again + timedelta(seconds=2 * settings.PROMETHEUS_IMPORT_BACKOFF_S)


def test_the_wait_doubles_up_to_its_cap() -> None:
    first, cap = settings.PROMETHEUS_IMPORT_BACKOFF_S, settings.PROMETHEUS_IMPORT_BACKOFF_MAX_S
    assert [backoff_s(n) for n in (1, 2, 3)] == [first, 2 * first, 4 * first]
    assert backoff_s(40) == backoff_s(1000) == cap


@pytest.mark.django_db
def test_a_prometheus_answering_500_or_too_slowly_is_failing_with_its_reason(servers) -> None:
    broken = make_source("gpu-a", serve(servers, lambda r: (500, {"Content-Type": "text/plain"}, b"tsdb closed")))

    def slow(request: Request) -> Answer:
        time.sleep(1.5)
        return 200, {"Content-Type": "application/json"}, b'{"status": "success", "data": {"result": []}}'

    sluggish = make_source("gpu-b", serve(servers, slow))
    now = grid_now()
    source_sync(broken, now=now)
    source_sync(sluggish, now=now, client=PrometheusClient(sluggish, timeout_s=0.3, tries=1))
    # The status and its standard phrase for every member; what the server answered for the admins alone.
    assert fresh(broken).last_error.endswith("failed after 1 try: HTTP 500 (Internal Server Error)")
    assert fresh(broken).last_error_detail == "tsdb closed"
    assert fresh(sluggish).last_error.endswith("failed after 1 try: no answer within 0.3 s")
    assert [h.state for h in organization_sources(broken.organization_id)] == ["failing"]
    assert GpuSample.objects.count() == 0


@pytest.mark.django_db
def test_successive_runs_import_each_step_once_and_the_counter_exactly(servers) -> None:
    source = make_source("gpu-a", serve(servers, scripted_gpu().answer))
    now = grid_now()
    for minutes in (0, 1, 2, 5):
        prometheus_sources_run(now=now + timedelta(minutes=minutes))
    stamps = list(GpuSample.objects.order_by("ts").values_list("ts", "energy_j"))
    assert {b[0] - a[0] for a, b in itertools.pairwise(stamps)} == {timedelta(seconds=STEP)}
    assert stamps[-1][0] == now + timedelta(minutes=5) - timedelta(seconds=2 * STEP)
    assert all(energy == pytest.approx(energy_mj(ts.timestamp()) / 1000, abs=1e-6) for ts, energy in stamps)
    assert {e.epoch for e in GpuEpoch.objects.all()} == {"prometheus:main/550.54.15"}
    assert fresh(source).last_summary.startswith("1 page(s); 1 node(s), 1 GPU(s)")


@pytest.mark.django_db
def test_a_window_without_series_moves_on_and_says_so(servers) -> None:
    source = make_source("gpu-a", serve(servers, ScriptedPrometheus().answer))
    now = grid_now()
    outcome = source_sync(source, now=now)
    assert outcome.startswith("nothing to import: ")
    source = fresh(source)
    assert source.imported_until == now - timedelta(seconds=STEP) and source.failures == 0
    assert "has no whole-GPU DCGM series" in source.last_error
    assert [h.state for h in organization_sources(source.organization_id)] == ["no data"]


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_series_without_the_host_label_is_skipped_and_named_the_others_imported(servers) -> None:
    prometheus = scripted_gpu()
    stray = {k: v for k, v in DCGM_LABELS.items() if k != "Hostname"} | {"UUID": "GPU-stray", "gpu": "1"}
    prometheus.add("DCGM_FI_DEV_POWER_USAGE", stray, lambda ts: 100.0)
    source = make_source("gpu-a", serve(servers, prometheus.answer))
    now = grid_now()
    summary = prometheus_import(source, start=now - timedelta(minutes=5), end=now)
    assert "skipped 1 series without a host label: DCGM_FI_DEV_POWER_USAGE{" in "\n".join(summary.lines())
    assert 'UUID="GPU-stray"' in "\n".join(summary.lines())
    assert GpuSample.objects.filter(gpu__uuid="GPU-prom-0").count() == 20
    assert not Gpu.objects.filter(uuid="GPU-stray").exists()


@pytest.mark.django_db
def test_an_energy_counter_a_little_lower_is_noise_and_a_drop_is_a_reset(servers) -> None:
    now = grid_now()
    start = now - timedelta(minutes=5)
    noisy_at, reset_at = start.timestamp() + 5 * STEP, start.timestamp() + 12 * STEP

    def energy(ts: float) -> float:
        if ts == noisy_at:
            return energy_mj(ts - STEP) - 500  # 0.5 J below the reading before: noise
        if ts >= reset_at:
            return 400_000 * (ts - reset_at + STEP)  # restarted from zero
        return energy_mj(ts)

    source = make_source("gpu-a", serve(servers, scripted_gpu(energy=energy).answer))
    summary = prometheus_import(source, start=start, end=now)
    assert "1 energy reading(s) a little below the one before (noise, not a reset)" in "\n".join(summary.lines())
    stored = GpuSample.objects.values_list("ts", "energy_j", "epoch__epoch")
    rows: dict[float, tuple[Any, str]] = {ts.timestamp(): (energy_j, epoch) for ts, energy_j, epoch in stored}
    assert rows[noisy_at][0] == pytest.approx(energy_mj(noisy_at - STEP) / 1000)  # held, not lower
    assert rows[noisy_at][1] == rows[start.timestamp()][1] == "prometheus:main/550.54.15"
    assert rows[reset_at][1] == f"prometheus:main/550.54.15@{int(reset_at)}"
    # Across the noisy reading, the increase is the true one: nothing lost, nothing counted twice.
    after = noisy_at + STEP
    assert rows[after][0] - rows[noisy_at - STEP][0] == pytest.approx(
        (energy_mj(after) - energy_mj(noisy_at - STEP)) / 1000
    )
    assert energy_noise(1000.0, 999.5) and not energy_noise(31_000_000.0, 6_000.0)


@pytest.mark.django_db
def test_a_reset_seen_by_one_run_keeps_its_epoch_in_the_next(servers) -> None:
    now = grid_now()
    reset_at = now.timestamp() - 10 * STEP

    def energy(ts: float) -> float:
        return energy_mj(ts) if ts < reset_at else 400_000 * (ts - reset_at + STEP)

    source = make_source("gpu-a", serve(servers, scripted_gpu(energy=energy).answer))
    prometheus_import(source, start=now - timedelta(minutes=5), end=now - timedelta(minutes=1))
    prometheus_import(source, start=now - timedelta(minutes=1), end=now)
    epochs = list(GpuSample.objects.order_by("ts").values_list("epoch__epoch", flat=True))
    assert epochs[-1] == f"prometheus:main/550.54.15@{int(reset_at)}"
    assert set(epochs) == {"prometheus:main/550.54.15", f"prometheus:main/550.54.15@{int(reset_at)}"}


# --- one source per GPU, both ways -----------------------------------------------------------------


@pytest.mark.django_db
def test_a_collector_batch_for_a_gpu_an_import_feeds_is_refused_naming_it(servers, client) -> None:
    labels = {**DCGM_LABELS, "UUID": "GPU-test-0000", "Hostname": "gpu-01"}
    source = make_source("gpu-01", serve(servers, scripted_gpu(labels).answer))
    now = grid_now()
    prometheus_import(source, start=now - timedelta(minutes=5), end=now)
    node = Node.objects.get(hostname="gpu-01")
    token = credential_issue(node=node)
    before = GpuSample.objects.count()
    answer = ingest.post(client, make_batch(gpus=1, seconds=10, start_s=now.timestamp() - 120), token)
    assert answer.status_code == 409
    assert (
        "GPU GPU-test-0000 already has samples from a Prometheus source (epoch 'prometheus:main/550.54.15')"
        in (answer.json()["error"])
    )
    assert GpuSample.objects.count() == before
    # Outside the import's time the collector may report it (a fleet moving from one to the other).
    later = ingest.post(client, make_batch(gpus=1, seconds=10, start_s=now.timestamp() + 60), token)
    assert later.status_code == 200, later.content
    assert [h.source.name for h in node_sources(node)] == ["main"]


@pytest.mark.django_db
def test_an_import_of_a_gpu_a_collector_reports_is_refused_naming_it(servers, client) -> None:
    labels = {**DCGM_LABELS, "UUID": "GPU-test-0000", "Hostname": "gpu-01"}
    source = make_source("gpu-01", serve(servers, scripted_gpu(labels).answer))
    now = grid_now()
    node = Node.objects.get(hostname="gpu-01")
    partitions_ensure(days={now.date(), (now - timedelta(minutes=5)).date()})
    answer = ingest.post(
        client, make_batch(gpus=1, seconds=10, start_s=now.timestamp() - 120), credential_issue(node=node)
    )
    assert answer.status_code == 200
    summary = prometheus_import(source, start=now - timedelta(minutes=5), end=now)
    assert summary.refused == {
        "GPU-test-0000": "GPU of gpu-01 already has samples from a collector (epoch 'boot-1/driver-1') in this window"
    }
    assert GpuSample.objects.count() == 10


@pytest.mark.django_db
def test_an_import_of_another_organizations_gpu_is_refused_as_another_nodes_naming_nothing_of_it(
    servers, client
) -> None:
    # given: Org B's GPU, with samples from B's collector and from B's Prometheus in the window
    now = grid_now()
    b_gpu = cast(Gpu, GpuFactory(node=NodeFactory(hostname="gpu-b"), uuid="GPU-b-0000", index=0))
    partitions_ensure(days={now.date(), (now - timedelta(minutes=5)).date()})
    for n, name in enumerate(("b-secret-boot-id/550.54.15", "prometheus:b-secret-prom/dcgm-host-b7")):
        epoch = GpuEpoch.objects.create(gpu=b_gpu, epoch=name)
        GpuSample.objects.create(gpu=b_gpu, epoch=epoch, ts=now - timedelta(minutes=5 - n), energy_j=1.0)
    # and: Org A's Prometheus, with a series labelled with B's GPU's UUID and one of A's hostnames
    labels = {**DCGM_LABELS, "UUID": "GPU-b-0000", "Hostname": "gpu-a"}
    source = make_source("gpu-a", serve(servers, scripted_gpu(labels).answer))
    assert source.organization_id != b_gpu.node.fleet.organization_id

    # when: A's source is read
    source_sync(source, now=now)

    # then: refused as a GPU registered to another node; nothing of B's is stored, said or shown
    source = fresh(source)
    assert "refused gpu-a: rows from " in source.last_summary
    assert "GPU GPU-b-0000 is registered to another node" in source.last_summary
    assert GpuSample.objects.filter(gpu=b_gpu).count() == 2
    viewer = UserFactory()
    MembershipFactory(user=viewer, organization=source.organization)
    client.force_login(viewer)
    page = client.get(reverse("nodes")).content.decode()
    assert "registered to another node" in page
    for secret in ("b-secret", "dcgm-host-b7", "gpu-b"):
        assert secret not in source.last_summary + source.last_error and secret not in page, secret


@pytest.mark.django_db
def test_a_viewer_never_sees_what_a_failing_prometheus_answered(servers, client) -> None:
    # given: a source whose server answers errors with text of its own (an internal service's, say)
    answers = iter([
        (400, {"Content-Type": "application/json"},
         b'{"status": "error", "errorType": "bad_data", "error": "zz-internal-answer: parse error at char 7"}'),
        (200, {"Content-Type": "application/json"},
         b'{"status": "error", "errorType": "<b>zz-internal-answer</b>", "error": "zz-internal-answer"}'),
        (200, {"Content-Type": "text/plain"}, b"zz-internal-answer, not JSON"),
        (500, {"Content-Type": "text/html"}, b"<h1>zz-internal-answer</h1> db=10.0.0.7 password=hunter2"),
    ])  # fmt: skip
    source = make_source("gpu-a", serve(servers, lambda request: next(answers)))
    viewer = UserFactory()
    MembershipFactory(user=viewer, organization=source.organization)
    client.force_login(viewer)
    node = Node.objects.get(hostname="gpu-a")
    expected = [  # what every member reads; what the admins read
        ("failed after 1 try: HTTP 400 (Bad Request): bad_data", "zz-internal-answer: parse error at char 7"),
        ("refused 'DCGM_FI_DEV_POWER_USAGE'", "zz-internal-answer"),
        ("failed after 1 try: the answer is not JSON", "unparseable JSON: Expecting value"),
        ("failed after 1 try: HTTP 500 (Internal Server Error)", "<h1>zz-internal-answer</h1> db=10.0.0.7"),
    ]
    for attempt, (error, detail) in enumerate(expected):
        # when: it is read, and fails
        PrometheusSource.objects.filter(pk=source.pk).update(next_attempt_at=None)
        source_sync(fresh(source), now=grid_now() + timedelta(minutes=attempt))

        # then: the members' pages say the status and a short reason, never the answer's text
        assert fresh(source).last_error.endswith(error), fresh(source).last_error
        assert fresh(source).last_error_detail.startswith(detail)
        for page in (client.get(reverse("nodes")), client.get(reverse("node", args=[node.pk]))):
            assert html.escape(error) in page.content.decode()
            assert b"zz-internal-answer" not in page.content and b"hunter2" not in page.content
    # and: the organization's admins read what it answered last in the admin
    admin = UserFactory(is_staff=True)
    MembershipFactory(user=admin, organization=source.organization, role=Role.ADMIN)
    client.force_login(admin)
    change = client.get(reverse("admin:telemetry_prometheussource_change", args=[source.pk]))
    assert change.status_code == 200 and b"zz-internal-answer" in change.content


# --- serving endpoints, through a real Prometheus ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason=SKIP_REASON)
@pytest.mark.django_db
def test_vllm_tokens_imported_from_a_real_prometheus_equal_the_servers_counts(tmp_path: Path) -> None:
    vllm = VllmStandIn()
    vllm_server = StubServer(default=vllm.answer).start()
    stand_in = DcgmExporterStandIn([StandInGpu("GPU-aaa", 0)], hostname="gpu-node-1")
    start = datetime.fromtimestamp(math.floor(time.time()), tz=UTC)
    running = prometheus_started(stand_in, tmp_path, serving=vllm_server, serving_host="gpu-node-1")
    try:
        time.sleep(5)
        vllm.mode = "error"  # a scrape gap: the counters go on
        time.sleep(3)
        vllm.mode = "ok"
        time.sleep(5)
        end = datetime.fromtimestamp(math.floor(time.time()), tz=UTC)
        node = cast(Node, NodeFactory(hostname="gpu-node-1"))
        source = PrometheusSource.objects.create(
            organization=node.fleet.organization, name="main", url=running.url, scrape_interval_s=1
        )
        summary = prometheus_import(source, start=start, end=end, page_hours=5 / 3600)
        stored = ServingSample.objects.count()
        again = prometheus_import(source, start=start, end=end, page_hours=5 / 3600)
    finally:
        running.stop()
        vllm_server.stop()
    rows: list[Any] = list(
        ServingSample.objects.filter(endpoint__node=node)
        .order_by("ts")
        .values_list("ts", "prompt_tokens", "generation_tokens", "requests", "ttft_bucket_counts", "epoch__epoch")
    )
    assert len(rows) >= 8
    served = {generation: (prompt, requests) for prompt, generation, requests in vllm.served}
    for _, prompt, generation, requests, ttft, _ in rows:
        assert served[generation] == (prompt, requests)  # each stored reading is one the server served
        assert ttft[-1] == requests  # TTFT's +Inf bucket: every request
    first, last = rows[0], rows[-1]
    truth_generation = last[2] - first[2]
    assert truth_generation > 0 and truth_generation % vllm.generation_step == 0
    assert {row[5] for row in rows} == {f"prometheus:main/{vllm.start:.0f}"}
    endpoint = ServingEndpoint.objects.get(node=node)
    assert endpoint.url == f"{vllm_server.url}/metrics" and endpoint.kind == "vllm"
    # The hourly tokens the ledger uses: the counters' increases, across the scrape gap too.
    hours = sorted({ts.replace(minute=0, second=0, microsecond=0) for ts, *_ in rows})
    rollup_node_hours(node_id=node.pk, hour_starts=hours)
    usage = EndpointHourUsage.objects.filter(endpoint=endpoint)
    assert sum(u.generation_tokens for u in usage) == truth_generation
    assert sum(u.prompt_tokens for u in usage) == last[1] - first[1]
    assert sum(sum(u.ttft_bucket_counts or ()) for u in usage) == last[3] - first[3]  # TTFT: one per request
    assert any("1 serving endpoint(s)" in line for line in summary.lines())
    assert summary.serving_rows_stored == stored == len(rows)
    # Importing the window again stores nothing new.
    assert again.serving_rows_stored == 0 and again.serving_rows_already_stored == stored
    assert ServingSample.objects.count() == stored


def scripted_vllm(prometheus: ScriptedPrometheus, hostname: str) -> None:
    """A vLLM server's counters as Prometheus stores them, its target relabelled with the host's name."""
    labels = {"instance": "10.0.0.5:8000", "job": "vllm", "hostname": hostname}
    model = {**labels, "engine": "0", "model_name": "meta-llama/Llama-3.1-8B-Instruct"}
    prometheus.add("vllm:prompt_tokens_total", model, lambda ts: float(int(ts - 1.7e9) * 100))
    prometheus.add("vllm:generation_tokens_total", model, lambda ts: float(int(ts - 1.7e9) * 40))
    prometheus.add(
        "vllm:request_success_total", {**model, "finished_reason": "stop"}, lambda ts: float(int(ts - 1.7e9))
    )
    prometheus.add("process_start_time_seconds", labels, lambda ts: 1_764_300_000.0)


@pytest.mark.django_db
def test_a_nodes_serving_a_collector_reports_is_not_imported_and_the_other_way_round(servers, client) -> None:
    labels = {**DCGM_LABELS, "UUID": "GPU-test-0000", "Hostname": "gpu-01"}
    prometheus = scripted_gpu(labels)
    scripted_vllm(prometheus, "gpu-01")
    source = make_source("gpu-01", serve(servers, prometheus.answer))
    node = Node.objects.get(hostname="gpu-01")
    now = grid_now()
    # A collector reports the GPU and its server for a minute, four minutes ago.
    collected = make_batch(gpus=1, seconds=60, start_s=now.timestamp() - 240, endpoint=True)
    assert ingest.post(client, collected, credential_issue(node=node)).status_code == 200
    summary = prometheus_import(source, start=now - timedelta(minutes=5), end=now)
    assert summary.refused["gpu-01 serving"].startswith(
        "already has endpoint http://127.0.0.1:8000/metrics of gpu-01 from a collector (epoch '1764000000')"
    )
    assert not ServingSample.objects.filter(epoch__epoch__startswith="prometheus:").exists()
    # The other way round: imported first (another node), then a collector's serving rows are refused.
    other = make_source("gpu-02", serve(servers, _relabelled(prometheus, "gpu-01", "gpu-02").answer), name="two")
    summary = prometheus_import(other, start=now - timedelta(minutes=5), end=now)
    assert summary.serving_rows_stored == 20
    node2 = Node.objects.get(hostname="gpu-02")
    batch = make_batch(gpus=0, seconds=30, start_s=now.timestamp() - 120, endpoint=True)
    answer = ingest.post(client, batch, credential_issue(node=node2))
    assert answer.status_code == 409
    assert (
        "serving samples already come from endpoint http://10.0.0.5:8000/metrics of gpu-02 from a Prometheus"
        in (answer.json()["error"])
    )


def _relabelled(prometheus: ScriptedPrometheus, old: str, new: str) -> ScriptedPrometheus:
    renamed = ScriptedPrometheus()
    for series in prometheus.series:
        labels = {k: (new if v == old else v) for k, v in series.labels.items()}
        if "UUID" in labels:
            labels["UUID"] += "-2"  # another GPU
        renamed.series.append(ScriptedSeries(labels, series.value))
    return renamed


@pytest.mark.django_db
def test_the_serving_selector_picks_the_inference_servers_read(servers) -> None:
    # given: one vLLM server scraped by the job "vllm" and a second target of the same metrics by "vllm-canary"
    labels = {**DCGM_LABELS, "UUID": "GPU-test-0000", "Hostname": "gpu-01"}
    prometheus = scripted_gpu(labels)
    scripted_vllm(prometheus, "gpu-01")
    canary = ScriptedPrometheus()
    scripted_vllm(canary, "gpu-01")
    for series in canary.series:
        canary_labels = {**series.labels, "job": "vllm-canary", "instance": "10.0.0.6:8000"}
        prometheus.add(canary_labels.pop("__name__"), canary_labels, series.value)
    source = make_source("gpu-01", serve(servers, prometheus.answer), serving_selector='job="vllm"')
    now = grid_now()

    # when: imported with the selector naming the production job
    summary = prometheus_import(source, start=now - timedelta(minutes=5), end=now)

    # then: only that target's serving samples (the canary's are another series the selector leaves out)
    assert summary.serving_rows_stored == 20
    assert set(ServingSample.objects.values_list("endpoint__url", flat=True)) == {"http://10.0.0.5:8000/metrics"}

    # and: a selector no serving series matches imports the GPUs alone, and an empty window says which selector
    other = make_source("gpu-02", serve(servers, _relabelled(prometheus, "gpu-01", "gpu-02").answer), name="two")
    other.serving_selector = 'job="nope"'
    other.save()
    assert prometheus_import(other, start=now - timedelta(minutes=5), end=now).serving_rows_stored == 0
    empty = make_source("gpu-03", serve(servers, ScriptedPrometheus().answer), name="three", serving_selector='job="x"')
    with pytest.raises(NothingToImport, match=r'nor serving series \(vLLM, SGLang, TGI\) matching \{job="x"\}'):
        prometheus_import(empty, start=now - timedelta(minutes=5), end=now)
