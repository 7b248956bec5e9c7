"""Engineers see each node's collector health: last report, lag, drops, counter support, gaps."""

from __future__ import annotations

import gzip
import time
from decimal import Decimal

import orjson
import pytest
from django.utils import timezone

from accounting.models import HardwareProfile
from fleets.services import credential_issue
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import make_batch
from tests.helpers.factories import GpuAssetFactory, GpuFactory, NodeFactory


@pytest.fixture
def reporting_node(org_a):
    node = NodeFactory(fleet__organization=org_a, hostname="gpu-a")
    token = credential_issue(node=node)
    batch = make_batch(gpus=2, seconds=10, start_s=float(int(time.time()) - 7200))
    batch["gpus"][1]["energy_counter_supported"] = False
    batch["collector"]["dropped_batches"] = 4
    return node, token, batch


def send(client, token, batch):
    response = client.post(
        "/api/v1/ingest/", data=gzip.compress(orjson.dumps(batch)), content_type="application/json",
        headers={"Authorization": f"Bearer {token}", "Content-Encoding": "gzip"},
    )  # fmt: skip
    assert response.status_code == 200


def test_node_list_shows_freshness_drops_and_counter_support(client, user_a, reporting_node):
    _node, token, batch = reporting_node
    send(client, token, batch)
    client.force_login(user_a)

    [row] = client.get("/api/v1/nodes/").json()

    assert (row["hostname"], row["dropped_batches"], row["collector_version"]) == ("gpu-a", 4, "test")
    assert 7100 < row["staleness_s"] < 7300
    assert row["last_report_at"] is not None and row["lag_s"] >= 7100
    assert [(g["index"], g["energy_counter_supported"]) for g in row["gpus"]] == [(0, True), (1, False)]


def test_node_detail_lists_the_hours_with_missing_coverage(client, user_a, reporting_node):
    node, token, batch = reporting_node
    send(client, token, batch)
    rollup_pending_run(now=timezone.now())
    client.force_login(user_a)

    detail = client.get(f"/api/v1/nodes/{node.pk}/").json()

    assert detail["gaps_last_24h"], "ten seconds of data leave most of an hour uncovered"
    assert all(gap["missing_s"] > 3000 for gap in detail["gaps_last_24h"])


def test_a_node_never_heard_from_has_an_empty_status(client, user_a, org_a):
    GpuFactory(node=NodeFactory(fleet__organization=org_a, hostname="silent"))
    client.force_login(user_a)

    [row] = client.get("/api/v1/nodes/").json()

    assert (row["last_report_at"], row["staleness_s"], row["dropped_batches"]) == (None, None, 0)


def test_users_see_only_their_organizations_nodes(client, user_b, reporting_node):
    node, _, _ = reporting_node
    client.force_login(user_b)

    assert client.get("/api/v1/nodes/").json() == []
    assert client.get(f"/api/v1/nodes/{node.pk}/").status_code == 404


def test_anonymous_users_and_node_tokens_are_refused(client, reporting_node):
    _node, token, _ = reporting_node

    assert client.get("/api/v1/nodes/").status_code == 401
    assert client.get("/api/v1/nodes/", headers={"Authorization": f"Bearer {token}"}).status_code == 403


def test_a_gpu_model_no_hardware_profile_matches_is_named_in_the_nodes_status(client, user_a, org_a):
    # given: a node with an H100 (in the shipped catalog), a card the catalog does not know, and one the
    # card's asset row names a profile for
    node = NodeFactory(fleet__organization=org_a, hostname="mixed")
    GpuFactory(node=node, index=0, name="NVIDIA H100 80GB HBM3")
    GpuFactory(node=node, index=1, name="NVIDIA Future X1")
    GpuAssetFactory(gpu=GpuFactory(node=node, index=2, name="NVIDIA Custom Board"), profile_key="h100-pcie")
    client.force_login(user_a)

    # when: an engineer reads the node's status
    [row] = client.get("/api/v1/nodes/").json()
    detail = client.get(f"/api/v1/nodes/{node.pk}/").json()

    # then: each GPU says which profile it is priced and weighed by, and the unknown model is named
    assert [(g["name"], g["hardware_profile"]) for g in row["gpus"]] == [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA Future X1", None), ("NVIDIA Custom Board", "h100-pcie"),
    ]  # fmt: skip
    assert row["unknown_gpu_models"] == detail["unknown_gpu_models"] == ["NVIDIA Future X1"]
    assert "unknown model: NVIDIA Future X1" in client.get("/nodes/").content.decode()


def test_an_organizations_own_profile_makes_the_model_known(client, user_a, org_a):
    node = NodeFactory(fleet__organization=org_a)
    GpuFactory(node=node, name="NVIDIA Future X1")
    HardwareProfile.objects.create(
        organization=org_a, key="future-x1", display_name="Future X1", nvml_names=["NVIDIA Future X1"],
        gpu_class="enterprise", tdp_w=900, idle_w=90, memory_gb=192, embodied_low_kgco2e=Decimal(100),
        embodied_central_kgco2e=Decimal(200), embodied_high_kgco2e=Decimal(300),
        host_embodied_kgco2e_per_gpu=Decimal(300), sources=[{"what": "tdp_w", "title": "datasheet", "year": 2026}],
    )  # fmt: skip
    client.force_login(user_a)

    [row] = client.get("/api/v1/nodes/").json()

    assert (row["gpus"][0]["hardware_profile"], row["unknown_gpu_models"]) == ("future-x1", [])
