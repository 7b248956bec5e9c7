"""The energy boundary through the real path: a node meter's readings make the node boundary (node_meter),
the GPUs' counters the GPU boundary, and J per token is given for both."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from accounting.models import HardwareProfile, LedgerSettings, NodeHourLedger
from accounting.node_hour_lines import ledger_pending_run
from fleets.models import Role
from fleets.services import credential_issue
from telemetry.models import NodeHourUsage
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import make_batch
from tests.helpers.factories import MembershipFactory, NodeFactory, UserFactory
from tests.helpers.ingest import post

HOUR_S = 3600
H = (int(time.time()) // HOUR_S - 2) * HOUR_S


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


def with_meter(batch: dict, power_w: float | None, method: str = "ipmi_dcmi") -> dict:
    stamps = sorted(set(batch["gpu_samples"]["ts"]))  # one reading an instant, however many GPUs the batch has
    meter = {"method": method, "epoch": "collector-1", "ts": stamps, "power_w": [power_w] * len(stamps)}
    return batch | {"node_meter": meter | {"energy_j": [None] * len(stamps)}}


@pytest.fixture
def node(db):
    return NodeFactory(commissioned_at=at(H - 86400))


def roll_up() -> None:
    rollup_pending_run(now=timezone.now())
    ledger_pending_run(now=timezone.now())


def test_a_node_meter_gives_the_node_boundary_and_j_per_token_at_both(client, node):
    # given one GPU at 300 W (its counter) for 10 s, the node's BMC reading 900 W, and 10,000 prompt +
    # 50,000 generation tokens served
    post(
        client,
        with_meter(make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True), 900.0),
        credential_issue(node=node),
    )
    # when
    roll_up()
    # then the node-hour is metered at the node: 900 W x 10 s = 9,000 J; the GPUs 3,000 J
    metered = NodeHourUsage.objects.get(node=node)
    assert (metered.boundary, metered.method, metered.energy_j, metered.energy_covered_s) == (
        "node",
        "ipmi_dcmi",
        9000,
        10,
    )
    line = NodeHourLedger.objects.get(node=node, hour_start=at(H))
    assert (line.energy_method, line.it_kwh, line.gpu_kwh) == (
        "node_meter",
        Decimal("0.0025"),
        pytest.approx(Decimal(3000) / 3_600_000),
    )
    # and the report says J per token at both boundaries: 9,000 / 60,000 and 3,000 / 60,000
    user = UserFactory()
    MembershipFactory(user=user, organization=node.fleet.organization, role=Role.SUSTAINABILITY)
    client.force_login(user)
    period = {"start": at(H).isoformat(), "end": at(H + HOUR_S).isoformat(), "granularity": "total"}
    row = client.get("/api/v1/reports/usage/", period).json()["results"][0]
    assert (row["it_kwh"], row["node_metered_kwh"], row["gpu_kwh"]) == (0.0025, 0.0025, 0.000833)
    assert (row["it_j_per_token"], row["gpu_j_per_token"]) == (0.15, 0.05)
    report = client.get("/api/v1/reports/sustainability/", period).json()
    assert (report["it_kwh"], report["node_metered_kwh"], report["gpu_kwh"]) == (0.0025, 0.0025, 0.000833)
    node_page = client.get(f"/nodes/{node.pk}/").content.decode()
    assert "node boundary, metered" in node_page


def test_a_meter_that_saw_less_than_the_gpus_keeps_the_gpu_boundary(client, node):
    # given a BMC whose readings below the GPUs' own draw cannot be the whole node
    post(client, with_meter(make_batch(gpus=2, seconds=11, start_s=H + 600), 100.0), credential_issue(node=node))
    roll_up()
    line = NodeHourLedger.objects.get(node=node, hour_start=at(H))
    assert (line.energy_method, line.it_kwh) == ("gpu_sum", line.gpu_kwh)


def test_rapl_is_stored_as_the_cpu_packages_boundary_not_the_node(client, node):
    batch = make_batch(gpus=1, seconds=11, start_s=H + 600)
    stamps = batch["gpu_samples"]["ts"]
    rapl = {"method": "rapl", "epoch": "collector-1", "ts": stamps, "power_w": [None] * 11}
    post(
        client, batch | {"node_meter": rapl | {"energy_j": [100.0 * i for i in range(11)]}}, credential_issue(node=node)
    )
    roll_up()
    metered = NodeHourUsage.objects.get(node=node)
    assert (metered.boundary, metered.energy_j) == ("cpu_packages", 1000)
    assert NodeHourLedger.objects.get(node=node).energy_method == "gpu_sum"


def model_hosts(node) -> None:
    LedgerSettings.objects.update_or_create(organization=node.fleet.organization, defaults={"model_host_power": True})


def report_row(client, node) -> dict:
    user = UserFactory()
    MembershipFactory(user=user, organization=node.fleet.organization, role=Role.SUSTAINABILITY)
    client.force_login(user)
    period = {"start": at(H).isoformat(), "end": at(H + HOUR_S).isoformat(), "granularity": "total"}
    return client.get("/api/v1/reports/usage/", period).json()["results"][0]


def test_without_a_meter_the_host_is_modelled_from_the_profile_and_labelled(client, node):
    # given the organization's H100 profile with cited host figures: 400 W idle + 150 W per GPU
    HardwareProfile.objects.create(
        organization=node.fleet.organization, key="h100-sxm", display_name="H100 SXM",
        nvml_names=["NVIDIA H100 80GB HBM3"], gpu_class="enterprise", tdp_w=700, idle_w=70, memory_gb=80,
        embodied_low_kgco2e=Decimal(79), embodied_central_kgco2e=Decimal(197), embodied_high_kgco2e=Decimal(315),
        host_embodied_kgco2e_per_gpu=Decimal("312.5"), host_idle_w=Decimal(400), host_per_gpu_w=Decimal(150),
        sources=[{"what": "host_power_w", "title": "the operator's own wall-meter survey", "year": 2026}],
    )  # fmt: skip
    model_hosts(node)
    post(client, make_batch(gpus=2, seconds=11, start_s=H + 600), credential_issue(node=node))
    roll_up()
    line = NodeHourLedger.objects.get(node=node, hour_start=at(H))
    # then the GPUs' counters' 2 x 3,000 J plus the host's (400 + 2 x 150) W over the same 10 s the GPUs cover
    gpu_j = Decimal(2 * 3000)
    assert line.energy_method == "modelled"
    assert line.gpu_kwh == pytest.approx(gpu_j / 3_600_000)
    assert line.it_kwh == pytest.approx((gpu_j + Decimal(700 * 10)) / 3_600_000)


def test_the_shipped_catalog_models_the_host_where_the_node_has_no_meter(client, node):
    # given one H100 SXM (catalog: 400 W idle + 525 W per GPU, from the DGX H100's 10.2 kW), no host meter,
    # 10,000 prompt + 50,000 generation tokens, and the organization modelling hosts
    model_hosts(node)
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True), credential_issue(node=node))
    # when
    roll_up()
    # then the node boundary is the GPU's 3,000 J plus the host's 925 W x 10 s = 9,250 J: 12,250 J, labelled modelled
    line = NodeHourLedger.objects.get(node=node, hour_start=at(H))
    assert (line.energy_method, line.it_kwh) == ("modelled", pytest.approx(Decimal(12250) / 3_600_000))
    row = report_row(client, node)
    # 12,250 J = 0.003403 kWh, all of it modelled, none metered; 3,000 J = 0.000833 kWh at the GPU boundary
    assert (row["it_kwh"], row["node_modelled_kwh"], row["node_metered_kwh"], row["gpu_kwh"]) == (
        0.003403, 0.003403, 0.0, 0.000833,
    )  # fmt: skip
    # J per token at both boundaries: 12,250 / 60,000 = 0.2042 (node, modelled) and 3,000 / 60,000 = 0.05 (GPU)
    assert (row["it_j_per_token"], row["gpu_j_per_token"]) == (0.2042, 0.05)
    assert (row["node_modelled_energy_share"], row["node_meter_energy_share"]) == (1.0, 0.0)
    # and the node page labels the hour's energy as modelled, never as measured
    node_page = client.get(f"/nodes/{node.pk}/").content.decode()
    assert 'node boundary, host <span class="badge">modelled</span>' in node_page


def test_a_node_meter_wins_over_the_modelled_host_and_says_so(client, node):
    # given the same H100 node modelling hosts, but with a BMC reading 900 W
    model_hosts(node)
    post(
        client,
        with_meter(make_batch(gpus=1, seconds=11, start_s=H + 600, endpoint=True), 900.0),
        credential_issue(node=node),
    )
    roll_up()
    # then the meter's 900 W x 10 s = 9,000 J is the node boundary, not the model's 12,250 J
    line = NodeHourLedger.objects.get(node=node, hour_start=at(H))
    assert (line.energy_method, line.it_kwh) == ("node_meter", Decimal("0.0025"))
    row = report_row(client, node)
    assert (row["node_metered_kwh"], row["node_modelled_kwh"]) == (0.0025, 0.0)
    assert (row["node_meter_energy_share"], row["node_modelled_energy_share"]) == (1.0, 0.0)


def test_without_the_policy_the_catalog_figures_leave_the_gpu_boundary(client, node):
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600), credential_issue(node=node))
    roll_up()
    line = NodeHourLedger.objects.get(node=node, hour_start=at(H))
    assert (line.energy_method, line.it_kwh) == ("gpu_sum", line.gpu_kwh)


def test_a_new_organization_models_its_hosts_by_default(client, node, settings):
    # given the product's default (the suite's conftest turns it off) and an organization without settings
    settings.LEDGER_MODEL_HOST_POWER_DEFAULT = True
    # when one H100 SXM without a host meter reports 10 s (3,000 J on its counter)
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600), credential_issue(node=node))
    roll_up()
    # then the host is modelled from the shipped catalog (400 W + 525 W per GPU over the same 10 s): 12,250 J
    line = NodeHourLedger.objects.get(node=node, hour_start=at(H))
    assert (line.energy_method, line.it_kwh) == ("modelled", pytest.approx(Decimal(12250) / 3_600_000))
    assert LedgerSettings(organization=node.fleet.organization).model_host_power is True


def test_the_deployment_default_can_keep_the_gpu_boundary(client, node, settings):
    settings.LEDGER_MODEL_HOST_POWER_DEFAULT = False
    post(client, make_batch(gpus=1, seconds=11, start_s=H + 600), credential_issue(node=node))
    roll_up()
    line = NodeHourLedger.objects.get(node=node, hour_start=at(H))
    assert (line.energy_method, line.it_kwh) == ("gpu_sum", line.gpu_kwh)
