"""The node page's series: recent raw power thinned in SQL, serving summed per bucket."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from dashboards.nodes import RECENT_RAW, RECENT_SLOT_S, recent_power_by_slot, serving_by_bucket
from telemetry.histogram import Histogram
from telemetry.models import EndpointHourUsage, GpuEpoch, GpuSample, ServingEndpoint
from telemetry.partitions import partitions_ensure
from tests.helpers.factories import GpuFactory, MembershipFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 29, 12, 0, 3, tzinfo=UTC)


@pytest.fixture
def node():
    node = NodeFactory(hostname="gpu-box")
    for index in range(2):
        GpuFactory(node=node, index=index, uuid=f"GPU-node-page-{index}")
    return node


def samples(node, *, every_s: float, power_w) -> int:
    """Raw samples of every GPU over the last 11 minutes, one every ``every_s``; power from the offset in s."""
    partitions_ensure(days={NOW.date()})
    rows = []
    for gpu in node.gpus.all():
        epoch = GpuEpoch.objects.create(gpu=gpu, epoch="boot/1")
        for n in range(round(660 / every_s)):
            offset = (n + 0.5) * every_s  # between whole seconds: no sample on a slot's edge
            ts = NOW - timedelta(seconds=660 - offset)
            rows.append(GpuSample(gpu=gpu, ts=ts, epoch=epoch, power_w=power_w(offset)))
    GpuSample.objects.bulk_create(rows)
    return len(rows)


def test_recent_power_keeps_the_same_points_per_gpu_at_ten_times_the_sample_rate(node):
    # given: 10 Hz samples, power rising by 1 W a second
    samples(node, every_s=0.1, power_w=lambda offset: 100.0 + offset)

    series = recent_power_by_slot(gpus=list(node.gpus.order_by("index")), now=NOW)

    # then: one point per slot of the last 10 minutes (and the slot the window opens in)
    slots = int(RECENT_RAW.total_seconds()) // RECENT_SLOT_S
    assert set(series) == {"GPU 0", "GPU 1"}
    assert {len(points) for points in series.values()} == {slots + 1}
    first_full = series["GPU 0"][1]
    # the slot's mean: samples at offsets t + 0.05 s .. t + slot - 0.05 s, power 100 W + 1 W per s of offset
    offset_s = (first_full[0] - (NOW - timedelta(seconds=660))).total_seconds()
    assert first_full[1] == pytest.approx(100.0 + offset_s + RECENT_SLOT_S / 2, abs=1e-3)


def test_recent_power_at_one_sample_a_second_gives_the_same_slots(node):
    samples(node, every_s=1.0, power_w=lambda offset: 300.0)

    series = recent_power_by_slot(gpus=list(node.gpus.order_by("index")), now=NOW)

    slots = int(RECENT_RAW.total_seconds()) // RECENT_SLOT_S
    assert {len(points) for points in series.values()} == {slots + 1}
    assert {value for points in series.values() for _, value in points} == {300.0}
    assert all(t.timestamp() % RECENT_SLOT_S == 0 for points in series.values() for t, _ in points)


def test_serving_is_summed_per_day_with_histograms_merged_onto_shared_bounds(node):
    endpoint = ServingEndpoint.objects.create(node=node, url="http://127.0.0.1:8000/metrics", kind="vllm")
    day = datetime(2026, 11, 28, tzinfo=UTC)
    hours = [  # (hour, prompt, generation, observed_s, bounds, counts)
        (day + timedelta(hours=10), 3000, 600, 3600.0, [0.1, 0.5], [5, 4, 1]),
        (day + timedelta(hours=11), 1000, 400, 1800.0, [0.1, 0.25, 0.5], [1, 2, 3, 0]),
        (day + timedelta(hours=12), 0, 0, 3600.0, [], None),
        (day + timedelta(days=1, hours=1), 7200, 0, 3600.0, [0.1, 0.5], [1, 0, 0]),
    ]
    for hour, prompt, generation, observed_s, bounds, counts in hours:
        EndpointHourUsage.objects.create(
            endpoint=endpoint, hour_start=hour, prompt_tokens=prompt, generation_tokens=generation, requests=1,
            observed_s=observed_s, ttft_bucket_bounds_s=bounds, ttft_bucket_counts=counts, reset_count=0,
            computed_at=hour,
        )  # fmt: skip

    rows = serving_by_bucket(node_id=node.pk, start=day, end=day + timedelta(days=2), granularity="day")

    assert [(r["bucket"], r["tokens"], r["observed_s"]) for r in rows] == [
        (day, 5000, 9000.0),
        (day + timedelta(days=1), 7200, 3600.0),
    ]
    # (0.1, 0.25, 0.5) coarsened onto (0.1, 0.5): [1, 2 + 3, 0], added to [5, 4, 1]
    assert rows[0]["ttft"] == Histogram((0.1, 0.5), (6, 9, 1))
    assert rows[1]["ttft"] == Histogram((0.1, 0.5), (1, 0, 0))


def test_a_node_serving_two_models_shows_each_models_tokens_and_latency(client, node):
    """One URL, two models, one hour each of the last day. 8B: 1,000 requests whose TTFTs sum 50 s (mean 50 ms),
    100,000 ITL observations summing 2,000 s (mean 20 ms); 14B: 250 requests summing 37.5 s (150 ms), ITL
    40,000 summing 1,400 s (35 ms). An older hour of the 8B without sums counts in tokens, not in means."""
    url, hour = "http://127.0.0.1:8000/metrics", datetime(2026, 11, 28, 10, tzinfo=UTC)
    rows = [  # (model, hour, generation, requests, TTFT counts and sum, ITL counts and sum)
        ("llama-8b", hour, 300_000, 1000, [600, 400], 50.0, [80_000, 20_000], 2000.0),
        ("llama-8b", hour - timedelta(hours=1), 10_000, 10, [10, 0], None, None, None),
        ("qwen-14b", hour, 90_000, 250, [50, 200], 37.5, [10_000, 30_000], 1400.0),
    ]
    for model, at, generation, requests, ttft, ttft_sum_s, itl, itl_sum_s in rows:
        endpoint, _ = ServingEndpoint.objects.get_or_create(node=node, url=url, model_name=model, kind="vllm")
        EndpointHourUsage.objects.create(
            endpoint=endpoint, hour_start=at, prompt_tokens=2 * generation, generation_tokens=generation,
            requests=requests, observed_s=3600.0, ttft_bucket_bounds_s=[0.1], ttft_bucket_counts=ttft,
            ttft_sum_s=ttft_sum_s, itl_bucket_bounds_s=[0.025] if itl else [], itl_bucket_counts=itl,
            itl_sum_s=itl_sum_s, reset_count=0, computed_at=at,
        )  # fmt: skip
    organization = node.fleet.organization
    user = UserFactory(username="engineer-two-models")
    MembershipFactory(user=user, organization=organization, role="engineer")
    client.force_login(user)

    page = client.get(f"/nodes/{node.pk}/?start=2026-11-27&end=2026-11-28&granularity=hour").content.decode()

    table = page[page.index('id="served-models"') :]
    table = table[: table.index("</table>")]
    cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", table)]
    assert cells[:3] == ["llama-8b", url, "310,000"]  # both hours' output tokens
    assert cells[6] == "50.00" and cells[9] == "20.00"  # TTFT and ITL means (ms), from the hour that has sums
    assert cells[12:15] == ["qwen-14b", url, "90,000"]
    assert cells[18] == "150.0" and cells[21] == "35.00"
    # The charts' series are named by model.
    assert "P99 llama-8b" in page and "P99 qwen-14b" in page


def test_each_gpu_shows_its_hardware_profile_and_an_unknown_model_is_named(client):
    # given: a node whose exporter reports one catalogued model and one the catalog has no profile for
    node = NodeFactory(hostname="dcgm-box")
    GpuFactory(node=node, index=0, uuid="GPU-known", name="NVIDIA H100 80GB HBM3")
    GpuFactory(node=node, index=1, uuid="GPU-unknown", name="NVIDIA B200")
    user = UserFactory(username="engineer-profiles")
    MembershipFactory(user=user, organization=node.fleet.organization, role="engineer")
    client.force_login(user)

    page = client.get(f"/nodes/{node.pk}/").content.decode()

    table = page[page.index('id="gpus"') :]
    rows = re.findall(r"<tr><td>(.*?)</tr>", table[: table.index("</table>")])
    cells = [[re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"(?:^|<td>)(.*?)</td>", row)] for row in rows]
    assert [row[:3] for row in cells] == [
        ["0", "NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM 80GB"],
        ["1", "NVIDIA B200", "unknown model: no hardware profile"],
    ]
