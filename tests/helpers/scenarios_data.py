"""A small organization with a stored ledger to replay, the figures of ``test_replay``'s module docstring.

Acme AI: fleet "enterprise" (2 h100-sxm nodes) and fleet "consumer" (1 rtx-4090 node) at one site
(zone DE, PUE 1.5, USD), 2 hours from 2026-01-05 00:00 UTC; each node serves llama-8b.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from accounting.models import NodeHourLedger
from accounting.site_hours import site_hours_rebuild
from telemetry.models import EndpointHourUsage, ServingEndpoint
from tests.helpers.factories import FleetFactory, NodeFactory, OrganizationFactory, SiteFactory

H0 = datetime(2026, 1, 5, tzinfo=UTC)
HOURS = [H0, H0 + timedelta(hours=1)]
D = Decimal

ENTERPRISE = {"gpu_model": "h100-sxm", "it_kwh": D(4), "facility_kwh": D(6), "electricity_cost": D("1.5"),
              "hardware_cost": D(20), "location_co2e_g": D(2400), "embodied_co2e_g_low": D(80),
              "embodied_co2e_g_central": D(200), "embodied_co2e_g_high": D(320), "prompt_tokens": 2_000_000,
              "generation_tokens": 1_000_000, "ttft": [1000, 0, 0]}  # fmt: skip
CONSUMER = {"gpu_model": "rtx-4090", "it_kwh": D(2), "facility_kwh": D(3), "electricity_cost": D("0.75"),
            "hardware_cost": D(8), "location_co2e_g": D(1200), "embodied_co2e_g_low": D(100),
            "embodied_co2e_g_central": D(100), "embodied_co2e_g_high": D(100), "prompt_tokens": 1_000_000,
            "generation_tokens": 500_000, "ttft": [0, 1000, 0]}  # fmt: skip


def ledger_line(node: Any, hour: datetime, figures: dict[str, Any]) -> NodeHourLedger:
    values = {k: v for k, v in figures.items() if k != "ttft"}
    return NodeHourLedger(
        node=node, hour_start=hour, organization_id=node.fleet.organization_id, fleet=node.fleet, site=node.site,
        currency="USD", held_h=1, observed_s=3600, gpu_count=8, gpu_h=8, gpu_kwh=values["it_kwh"], pue=D("1.50"),
        cost=values["electricity_cost"] + values["hardware_cost"], market_co2e_g=None, embodied_unknown_gpu_h=0,
        idle_gpu_h=0, idle_cost=0, idle_facility_kwh=0, energy_method="gpu_sum", energy_counter_j=0,
        energy_integrated_j=0, electricity_status="priced", tariff_price_per_kwh=D("0.25"),
        location_gco2e_per_kwh=400, location_source="test", location_is_fallback=False, amortization="time", **values,
    )  # fmt: skip


def acme_ledger(name: str = "Acme AI") -> dict[str, Any]:
    """The organization, its fleets, and its stored ledger and endpoint-hours."""
    organization = OrganizationFactory(name=name, slug=name.lower().replace(" ", "-"))
    site = SiteFactory(organization=organization, name="fra-1", grid_zone="DE", currency="USD", pue=D("1.5"))
    enterprise = FleetFactory(organization=organization, name="enterprise")
    consumer = FleetFactory(organization=organization, name="consumer")
    nodes = [(NodeFactory(fleet=enterprise, site=site), ENTERPRISE) for _ in range(2)]
    nodes.append((NodeFactory(fleet=consumer, site=site), CONSUMER))
    NodeHourLedger.objects.bulk_create(ledger_line(node, hour, figures) for node, figures in nodes for hour in HOURS)
    site_hours_rebuild()  # lines written by hand: their site-hours summed again
    for node, figures in nodes:
        endpoint = ServingEndpoint.objects.create(node=node, url="http://127.0.0.1:8000/metrics", kind="vllm",
                                                  model_name="llama-8b")  # fmt: skip
        EndpointHourUsage.objects.bulk_create(
            EndpointHourUsage(
                endpoint=endpoint,
                hour_start=hour,
                prompt_tokens=figures["prompt_tokens"],
                generation_tokens=figures["generation_tokens"],
                requests=1000,
                ttft_bucket_bounds_s=[0.1, 1.0],
                ttft_bucket_counts=figures["ttft"],
                observed_s=3600,
                reset_count=0,
                computed_at=H0,
            )
            for hour in HOURS
        )
    return {"organization": organization, "enterprise": enterprise, "consumer": consumer, "site": site}
