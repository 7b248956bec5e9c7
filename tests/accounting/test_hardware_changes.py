"""Hardware that changes, through the real path (ingest, rollup, ledger): a swapped card is charged once."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.utils import timezone

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_pending_run
from fleets.models import Gpu, GpuInstallation
from fleets.services import credential_issue
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import gpu_ref, make_batch
from tests.helpers.factories import NodeFactory, NodePriceFactory
from tests.helpers.ingest import post

HOUR_S = 3600
H = (int(time.time()) // HOUR_S - 3) * HOUR_S  # the hour of the swap; H - 1 h is the hour before it
H0 = H - HOUR_S
LIFE_H = Decimal(4 * 8760)
GPU_KG, HOST_KG_PER_GPU = Decimal(197), Decimal("312.5")  # H100 SXM, catalog central figures


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


@pytest.fixture
def node(db):
    node = NodeFactory(commissioned_at=at(H0))
    NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=at(H0 - 86400))
    return node


def card(uuid: str, start_s: float) -> dict:
    """Eleven seconds of one card at 300 W from ``start_s``."""
    return make_batch(gpus=1, seconds=11, start_s=start_s) | {"gpus": [gpu_ref(0) | {"uuid": uuid}]}


def roll_up() -> None:
    rollup_pending_run(now=timezone.now())
    ledger_pending_run(now=timezone.now())


def line(hour_s: int) -> NodeHourLedger:
    return NodeHourLedger.objects.get(hour_start=at(hour_s))


def test_swapping_the_only_card_charges_for_one_card_including_the_hour_before(client, node):
    token = credential_issue(node=node)
    # given card A reporting in the hour before the swap and up to H+20:00, then card B from H+21:00
    post(client, card("GPU-card-A", H0 + 600), token)
    post(client, card("GPU-card-A", H + 1190), token)
    roll_up()
    post(client, card("GPU-card-B", H + 1260), token)
    # when
    roll_up()
    # then A ended where it was last seen, replaced; B installed from its first sample
    a, b = Gpu.objects.get(uuid="GPU-card-A"), Gpu.objects.get(uuid="GPU-card-B")
    assert list(GpuInstallation.objects.filter(gpu=a).values_list("installed_at", "ended_at", "ended_reason")) == [
        (at(H0), at(H + 1200), "replaced")  # an original card: installed from the node's commissioning
    ]
    assert list(GpuInstallation.objects.filter(gpu=b).values_list("installed_at", "ended_at")) == [(at(H + 1260), None)]
    # the hour before the swap: one card, 1 GPU-hour at 2.50/GPU-hour
    before = line(H0)
    assert (before.gpu_count, before.gpu_h, before.hardware_cost) == (1, Decimal(1), Decimal("2.50"))
    one_card_and_host = (GPU_KG + HOST_KG_PER_GPU) * 1000 / LIFE_H
    assert before.embodied_co2e_g_central == pytest.approx(one_card_and_host, abs=Decimal("1e-9"))
    # the hour of the swap: A 20 min + B 39 min = 0.98333 GPU-hours, never two cards
    swap = line(H)
    gpu_h = Decimal(1200 + 2340) / 3600
    assert swap.gpu_count == 2
    assert swap.gpu_h == pytest.approx(gpu_h, abs=Decimal("1e-12"))
    assert swap.hardware_cost == pytest.approx(Decimal("2.50") * gpu_h, abs=Decimal("1e-12"))  # 2.4583
    embodied = (GPU_KG * gpu_h + HOST_KG_PER_GPU) * 1000 / LIFE_H
    assert swap.embodied_co2e_g_central == pytest.approx(embodied, abs=Decimal("1e-9"))
    assert swap.idle_gpu_h == 0


def test_a_card_that_comes_back_is_the_same_gpu_in_a_new_installation(client, node, settings):
    settings.TELEMETRY_GPU_GONE_AFTER_S = 600
    token = credential_issue(node=node)
    both = make_batch(gpus=2, seconds=11, start_s=H0 + 600)
    post(client, both, token)
    roll_up()
    # card 1 pulled: the node reports card 0 alone for 15 minutes, past the 10-minute grace
    post(client, make_batch(gpus=1, seconds=11, start_s=H0 + 1500), token)
    roll_up()
    # card 1 back
    post(client, make_batch(gpus=2, seconds=11, start_s=H0 + 2400), token)
    roll_up()

    back = Gpu.objects.get(uuid=gpu_ref(1)["uuid"])
    assert list(back.installations.values_list("installed_at", "ended_at", "ended_reason")) == [
        (at(H0), at(H0 + 610), "missing"),
        (at(H0 + 2400), None, ""),
    ]
    assert Gpu.objects.filter(node=node).count() == 2
    # card 1 was installed 610 s + 1,200 s of the hour: 1 + 0.50278 GPU-hours at 2.50
    assert line(H0).gpu_h == pytest.approx(1 + Decimal(610 + 1200) / 3600, abs=Decimal("1e-12"))


def test_the_swap_is_an_event_on_the_node_page_and_in_the_admin(client, node, django_user_model):
    from fleets.models import Membership

    token = credential_issue(node=node)
    post(client, card("GPU-card-A", H + 1190), token)
    post(client, card("GPU-card-B", H + 1260), token)
    roll_up()
    user = django_user_model.objects.create_user(username="ops", password="pw-long-enough-1", is_staff=True)
    Membership.objects.create(user=user, organization=node.fleet.organization, role="admin")
    client.force_login(user)

    page = client.get(f"/nodes/{node.pk}/").content.decode()
    admin = client.get("/admin/fleets/gpuinstallation/").content.decode()

    assert "Hardware changes" in page and "GPU-card-A" in page and "the node reported a different set" in page
    assert "GPU-card-B" in admin and "the node reported a different set of GPUs" in admin
