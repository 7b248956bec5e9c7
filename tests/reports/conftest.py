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
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounting.models import LedgerSettings, SiteMarketFactor
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Fleet, Node, Role
from fleets.personal_tokens import personal_token_create
from grid.models import GridIntensity
from tests.helpers.factories import MembershipFactory, UserFactory
from tests.helpers.reports import (
    H1,
    H2,
    HOURS,
    LLAMA_ITL,
    LLAMA_TTFT,
    LONG_AGO,
    QWEN_QUEUE,
    endpoint,
    endpoint_hour,
    gpu_hours,
    h100_node,
    h100_usage,
    live_grid,
    rtx_node,
)


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


@pytest.fixture
def two_models(org_a: Any) -> Any:
    live_grid(hours=(H1, H2))
    node = h100_node(org_a)
    gpu_hours(node, H1, (1_800_000.0, 3_600_000.0), (80.0, 60.0))
    gpu_hours(node, H2, (360_000.0, 360_000.0), (1.0, 1.0))
    llama, qwen = endpoint(node, "llama-8b", "vllm"), endpoint(node, "qwen-14b", "tgi")
    endpoint_hour(
        llama, H1, prompt_tokens=600_000, generation_tokens=300_000, requests=1000,
        ttft=LLAMA_TTFT, ttft_sum_s=250.0, itl=LLAMA_ITL, itl_sum_s=6000.0,
    )  # fmt: skip
    endpoint_hour(
        qwen, H1, prompt_tokens=100_000, generation_tokens=200_000, requests=400, ttft=QWEN_QUEUE, ttft_sum_s=40.0
    )
    endpoint_hour(llama, H2)  # scraped, served nothing
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[H1, H2])
    LedgerSettings.objects.update_or_create(organization=org_a, defaults={"goodput_ttft_target_ms": 300})
    return node
