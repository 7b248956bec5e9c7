"""A small organization with an enterprise and a consumer fleet, and ledger lines for recent hours."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from accounting.models import NodePrice, SiteTariff
from accounting.node_hour_lines import ledger_node_hours_compute
from telemetry.models import EndpointHourUsage, GpuHourUsage, ServingEndpoint
from tests.helpers.factories import FleetFactory, GpuFactory, NodeFactory, SiteFactory

LONG_AGO = datetime(2026, 1, 1, tzinfo=UTC)
BOUNDS = [0.01, 0.05, 0.1, 0.25, 0.5]


def recent_hours(count: int = 3) -> list[datetime]:
    top = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    return [top - timedelta(hours=n) for n in range(count, 0, -1)]


def build_fleet(organization, *, name, gpu_name, gpus, zone, price, energy_j, tokens, ttft_counts, util=80.0):
    site = SiteFactory(organization=organization, name=f"{name}-site", grid_zone=zone, pue=Decimal("1.1"))
    fleet = FleetFactory(organization=organization, name=name)
    node = NodeFactory(fleet=fleet, site=site, hostname=f"{name}-01", commissioned_at=LONG_AGO, tenure=price["kind"])
    cards = [GpuFactory(node=node, index=i, uuid=f"GPU-{name}-{i}", name=gpu_name) for i in range(gpus)]
    NodePrice.objects.create(fleet=fleet, valid_from=LONG_AGO, **price)
    SiteTariff.objects.create(site=site, flat_price_per_kwh=Decimal("0.20"), valid_from=LONG_AGO)
    endpoint = ServingEndpoint.objects.create(node=node, url=f"http://127.0.0.1:8000/{name}", kind="vllm")
    endpoint.gpus.set(cards)
    hours = recent_hours()
    for hour in hours:
        for card in cards:
            GpuHourUsage.objects.create(
                gpu=card, hour_start=hour, energy_j=energy_j, energy_counter_j=energy_j, energy_integrated_j=0.0,
                energy_method="counter", observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0,
                mean_power_w=energy_j / 3600, mean_util_pct=util, reset_count=0, computed_at=hour,
            )  # fmt: skip
        EndpointHourUsage.objects.create(
            endpoint=endpoint, hour_start=hour, prompt_tokens=tokens // 4, generation_tokens=tokens - tokens // 4,
            requests=1000, ttft_bucket_bounds_s=BOUNDS, ttft_bucket_counts=ttft_counts, observed_s=3600.0,
            reset_count=0, computed_at=hour,
        )  # fmt: skip
    ledger_node_hours_compute(node_id=node.pk, hour_starts=hours)
    return fleet


def two_fleets(organization):
    """H100s: faster at the tail and fewer joules per token; RTX 4090s: cheaper per token."""
    enterprise = build_fleet(
        organization, name="enterprise", gpu_name="NVIDIA H100 80GB HBM3", gpus=8, zone="US-CAL-CISO",
        price={"kind": "rented", "rate_per_h": Decimal("3.00"), "rate_per": "gpu", "includes_power": True},
        energy_j=2_000_000.0, tokens=8 * 6000 * 3600, ttft_counts=[500, 480, 20, 0, 0, 0],
    )  # fmt: skip
    consumer = build_fleet(
        organization, name="consumer", gpu_name="NVIDIA GeForce RTX 4090", gpus=4, zone="SE",
        price={"kind": "owned", "capex": Decimal("8000"), "lifetime_years": Decimal(4), "opex_per_h": Decimal("0.05")},
        energy_j=1_300_000.0, tokens=4 * 3300 * 3600, ttft_counts=[0, 100, 300, 560, 30, 10],
    )  # fmt: skip
    return enterprise, consumer


def period():
    hours = recent_hours()
    return hours[0], hours[-1] + timedelta(hours=1)


def second_model_serve(fleet):
    """The fleet's node serves llama-8b and, beside it, qwen-14b: a third of llama's output tokens and
    500 requests an hour, every TTFT under 100 ms."""
    endpoint = ServingEndpoint.objects.get(node__fleet=fleet)
    endpoint.model_name = "llama-8b"
    endpoint.save()
    other = ServingEndpoint.objects.create(node=endpoint.node, url="http://127.0.0.1:8001/", kind="vllm",
                                           model_name="qwen-14b")  # fmt: skip
    for hour in recent_hours():
        usage = EndpointHourUsage.objects.get(endpoint=endpoint, hour_start=hour)
        EndpointHourUsage.objects.create(
            endpoint=other, hour_start=hour, prompt_tokens=0, generation_tokens=usage.generation_tokens // 3,
            requests=500, ttft_bucket_bounds_s=[0.1], ttft_bucket_counts=[500, 0], observed_s=3600.0,
            reset_count=0, computed_at=hour,
        )  # fmt: skip
    # The node's lines count both models' output tokens, as the ledger does (the shares' denominator).
    ledger_node_hours_compute(node_id=endpoint.node_id, hour_starts=list(recent_hours()))
