"""Two fleets of Org A over three hours, priced and weighed by the real ledger, worked by hand.

Hours (UTC): H1 = 2026-10-31 23:00, H2 = 2026-11-01 00:00, H3 = 2026-11-01 01:00,
so day and month buckets split H1 from H2 and H3.

- fleet "enterprise": node h100-a at site sjc-1 (US-CAL-CISO, USD, PUE 1.20,
  tariff 0.30/kWh, market factor 50 gCO2e/kWh), 2 x H100 SXM rented at 2.50 per
  GPU-hour. Each hour: GPUs 1.8 MJ + 3.6 MJ (NVML counter) = IT 1.5 kWh, facility
  1.8 kWh; electricity 0.54, hardware 5.00, cost 5.54; 1,000,000 prompt + 500,000
  generation tokens served by GPU 0; GPU 1 idle (2 %): idle cost 2.50 + 1 kWh x
  1.2 x 0.30 = 2.86; location 1.8 x 200 = 360 g; market 1.8 x 50 = 90 g;
  utilization 80 % and 2 %.
- fleet "consumer": node rtx-a at site sjc-2 (US-CAL-CISO, USD, PUE 1.10, tariff
  0.20/kWh, no market factor), 4 x RTX 4090 owned: 35,040 over 4 years (1.00/h)
  + 0.20/h running. Each hour: 4 x 1.08 MJ = IT 1.2 kWh, facility 1.32 kWh;
  electricity 0.264, hardware 1.20, cost 1.464; 600,000 + 300,000 tokens on GPUs
  0-2; GPU 3 idle (1 %): idle cost 0.30 + 0.3 kWh x 1.1 x 0.20 = 0.366; location
  1.32 x 200 = 264 g; utilization 90, 90, 90, 1 %. In H3 its energy comes from
  integrated power (the counter was unsupported).
- Embodied per hour (catalog, 4 years = 35,040 h): H100 node (2 x 197 + 2 x 312.5)
  kg / 35,040 h; RTX node (4 x 150 + 4 x 87.5) kg / 35,040 h.
- TTFT: the H100 endpoint keeps one bucket layout; the RTX endpoint changes its
  bounds in H3 (so the fleet's histograms merge onto the bounds they share).
- Org B has one H100 node with the same usage, never visible to Org A's users.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounting.models import NodePrice, SiteMarketFactor, SiteTariff
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Fleet, Node, Role, Site
from fleets.personal_tokens import personal_token_create
from grid.models import GridIntensity
from telemetry.models import EndpointHourUsage, GpuHourUsage, ServingEndpoint
from tests.factories import GpuFactory, MembershipFactory, NodeFactory, SiteFactory, UserFactory

H1 = datetime(2026, 10, 31, 23, tzinfo=UTC)
H2 = datetime(2026, 11, 1, 0, tzinfo=UTC)
H3 = datetime(2026, 11, 1, 1, tzinfo=UTC)
HOURS = (H1, H2, H3)
START, END = H1, H3 + timedelta(hours=1)
LONG_AGO = datetime(2026, 1, 1, tzinfo=UTC)
LIFE_H = Decimal(4 * 8760)
H100_EMBODIED_G_PER_H = (2 * Decimal(197) + 2 * Decimal("312.5")) * 1000 / LIFE_H
RTX_EMBODIED_G_PER_H = (4 * Decimal(150) + 4 * Decimal("87.5")) * 1000 / LIFE_H

H100_BOUNDS = [0.025, 0.05, 0.1, 0.25, 0.5]
H100_TTFT_PER_HOUR = [40, 50, 8, 2, 0, 0]
RTX_BOUNDS = [0.05, 0.1, 0.25, 0.5, 1.0]
RTX_TTFT_PER_HOUR = [4, 6, 65, 20, 5, 0]
RTX_BOUNDS_H3 = [0.1, 0.25, 0.5, 1.0, 2.5]
RTX_TTFT_H3 = [10, 70, 15, 5, 0, 0]


def hour_usage(
    node: Node,
    hour: datetime,
    *,
    energies_j: tuple[float, ...],
    utils: tuple[float, ...],
    tokens: tuple[int, int],
    serving_gpus: int,
    ttft: tuple[list[float], list[int]] | None = None,
    integrated: bool = False,
) -> None:
    """One node-hour of usage: per-GPU energy and utilization, one endpoint's tokens and TTFT histogram."""
    gpus = list(node.gpus.order_by("index"))
    for gpu, energy_j, util in zip(gpus, energies_j, utils, strict=True):
        GpuHourUsage.objects.update_or_create(
            gpu=gpu, hour_start=hour,
            defaults=dict(
                energy_j=energy_j, energy_counter_j=0.0 if integrated else energy_j,
                energy_integrated_j=energy_j if integrated else 0.0,
                energy_method="integrated" if integrated else "counter", observed_s=3600.0, energy_covered_s=3600.0,
                busy_s=3600.0, mean_util_pct=util, reset_count=0, computed_at=hour,
            ),
        )  # fmt: skip
    endpoint, _ = ServingEndpoint.objects.get_or_create(node=node, url="http://127.0.0.1:8000/metrics", kind="vllm")
    endpoint.gpus.set(gpus[:serving_gpus])
    bounds, counts = ttft if ttft else ([], None)
    EndpointHourUsage.objects.update_or_create(
        endpoint=endpoint, hour_start=hour,
        defaults=dict(
            prompt_tokens=tokens[0], generation_tokens=tokens[1], requests=sum(counts or []), observed_s=3600.0,
            ttft_bucket_bounds_s=bounds, ttft_bucket_counts=counts, reset_count=0, computed_at=hour,
        ),
    )  # fmt: skip


def h100_node(organization: Any, *, fleet: Fleet | None = None, site: Site | None = None) -> Node:
    site = site or SiteFactory(
        organization=organization, name="sjc-1", grid_zone="US-CAL-CISO", country="US", pue=Decimal("1.20")
    )
    fleet = fleet or Fleet.objects.create(organization=organization, name="enterprise")
    node = NodeFactory(fleet=fleet, site=site, hostname="h100-a", tenure="rented", commissioned_at=LONG_AGO)
    for index in range(2):
        GpuFactory(node=node, index=index, name="NVIDIA H100 80GB HBM3")
    NodePrice.objects.create(
        fleet=fleet, node=node, kind="rented", rate_per_h=Decimal("2.50"), rate_per="gpu", valid_from=LONG_AGO
    )
    SiteTariff.objects.get_or_create(
        site=site, defaults={"flat_price_per_kwh": Decimal("0.30"), "valid_from": LONG_AGO}
    )
    return node


def h100_usage(node: Node) -> None:
    for hour in HOURS:
        hour_usage(
            node, hour, energies_j=(1_800_000.0, 3_600_000.0), utils=(80.0, 2.0), tokens=(1_000_000, 500_000),
            serving_gpus=1, ttft=(H100_BOUNDS, H100_TTFT_PER_HOUR),
        )  # fmt: skip
    ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)


def rtx_node(organization: Any) -> Node:
    site = SiteFactory(
        organization=organization, name="sjc-2", grid_zone="US-CAL-CISO", country="US", pue=Decimal("1.10")
    )
    fleet = Fleet.objects.create(organization=organization, name="consumer")
    node = NodeFactory(fleet=fleet, site=site, hostname="rtx-a", tenure="owned", commissioned_at=LONG_AGO)
    for index in range(4):
        GpuFactory(node=node, index=index, name="NVIDIA GeForce RTX 4090")
    NodePrice.objects.create(
        fleet=fleet, kind="owned", capex=Decimal("35040"), lifetime_years=Decimal(4), opex_per_h=Decimal("0.20"),
        valid_from=LONG_AGO,
    )  # fmt: skip
    SiteTariff.objects.create(site=site, flat_price_per_kwh=Decimal("0.20"), valid_from=LONG_AGO)
    for hour in HOURS:
        ttft = (RTX_BOUNDS_H3, RTX_TTFT_H3) if hour == H3 else (RTX_BOUNDS, RTX_TTFT_PER_HOUR)
        hour_usage(
            node, hour, energies_j=(1_080_000.0,) * 4, utils=(90.0, 90.0, 90.0, 1.0), tokens=(600_000, 300_000),
            serving_gpus=3, ttft=ttft, integrated=hour == H3,
        )  # fmt: skip
    ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)
    return node


def live_grid(zone: str = "US-CAL-CISO", g_per_kwh: str = "200", hours: tuple[datetime, ...] = HOURS) -> None:
    for hour in hours:
        GridIntensity.objects.create(
            zone=zone, hour_start=hour, kind="average", source="electricitymaps", gco2e_per_kwh=Decimal(g_per_kwh),
            fetched_at=hour,
        )  # fmt: skip


@dataclass
class Fleets:
    h100: Node
    rtx: Node
    other_org_node: Node

    @property
    def enterprise(self) -> Fleet:
        return self.h100.fleet

    @property
    def consumer(self) -> Fleet:
        return self.rtx.fleet


@pytest.fixture
def fleets(org_a: Any, org_b: Any) -> Fleets:
    live_grid()
    h100 = h100_node(org_a)
    SiteMarketFactor.objects.create(
        site=h100.site, gco2e_per_kwh=Decimal("50"), source="contract:PPA-7", valid_from=LONG_AGO
    )
    h100_usage(h100)
    rtx = rtx_node(org_a)
    other = h100_node(org_b)
    h100_usage(other)
    return Fleets(h100=h100, rtx=rtx, other_org_node=other)


@pytest.fixture
def viewer_a(org_a: Any) -> Any:
    user = UserFactory(username="victor")
    MembershipFactory(user=user, organization=org_a, role=Role.VIEWER)
    return user


@pytest.fixture
def client_a(user_a: Any) -> APIClient:
    """Org A's admin, signed in with a browser session."""
    client = APIClient()
    client.force_login(user_a)
    return client


@pytest.fixture
def token_client_a(viewer_a: Any) -> APIClient:
    """Org A's viewer, with a personal token."""
    _, token = personal_token_create(user=viewer_a, name="reporting tool")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def mixed_grid(fleets: Any) -> Any:
    """Every kind of grid value: the RTX site moved to zone SE-SE3, simulated hourly values (40 g/kWh)
    in H1 and H2 and none in H3 (the annual average stands in); the H100 site keeps its live 200 g/kWh."""
    site = fleets.rtx.site
    site.grid_zone, site.country = "SE-SE3", "SE"
    site.save()
    for hour in (H1, H2):
        GridIntensity.objects.create(
            zone="SE-SE3", hour_start=hour, kind="average", source="simulated:annual-shaped",
            gco2e_per_kwh=Decimal(40), fetched_at=hour,
        )  # fmt: skip
    ledger_node_hours_compute(node_id=fleets.rtx.pk, hour_starts=HOURS)
    return fleets
