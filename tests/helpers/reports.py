"""The report tests' three hours and two fleets, priced and weighed by the real ledger; the figures are
worked by hand in tests/reports/conftest.py's docstring."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from accounting.models import NodePrice, SiteTariff
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.models import Fleet, Node, Site
from telemetry.models import EndpointHourUsage, GpuHourUsage, ServingEndpoint
from tests.helpers.factories import GpuFactory, GridIntensityFactory, NodeFactory, NodePriceFactory, SiteFactory

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
            node=node, gpu=gpu, hour_start=hour,
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
        node=node, endpoint=endpoint, hour_start=hour,
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
    NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=LONG_AGO)
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
        valid_from=LONG_AGO, depreciation_method="hour",  # by hour: 35,040 / 35,040 h = 1.00 an hour, all year
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
        GridIntensityFactory(zone=zone, hour_start=hour, gco2e_per_kwh=Decimal(g_per_kwh))


def no_intensity_in_h3(node: Node, zone: str = "ZZ-NOWHERE") -> None:
    """The node's site moved to a zone with hourly values in H1 and H2 (200 g/kWh) and none in H3, nor an annual
    average to stand in: a third of its facility kWh have no grid intensity. Its lines computed again."""
    site = node.site
    site.grid_zone, site.country = zone, "ZZ"
    site.save()
    for hour in (H1, H2):
        GridIntensityFactory(zone=zone, hour_start=hour, gco2e_per_kwh=Decimal(200), source="csv:own")
    ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)


LLAMA_TTFT = ([0.1, 0.25, 0.5, 1.0], [500, 300, 150, 45, 5])
QWEN_QUEUE = ([0.1, 0.5], [300, 90, 10])
LLAMA_ITL = ([0.01, 0.025, 0.05, 0.1], [100_000, 150_000, 40_000, 9_000, 1_000])


def gpu_hours(node: Any, hour: Any, energies_j: tuple[float, float], util_pct: tuple[float, float]) -> None:
    for gpu, energy_j, util in zip(node.gpus.order_by("index"), energies_j, util_pct, strict=True):
        GpuHourUsage.objects.create(
            gpu=gpu, hour_start=hour, energy_j=energy_j, energy_counter_j=energy_j, energy_integrated_j=0.0,
            energy_method="counter", observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0,
            mean_util_pct=util, reset_count=0, computed_at=hour,
        )  # fmt: skip


def endpoint(node: Any, model_name: str, kind: str) -> ServingEndpoint:
    served = ServingEndpoint.objects.create(
        node=node, url="http://127.0.0.1:8000/metrics", kind=kind, model_name=model_name
    )
    served.gpus.set(node.gpus.all())
    return served


def endpoint_hour(served: ServingEndpoint, hour: Any, **fields: Any) -> None:
    ttft, itl = fields.pop("ttft", ([], None)), fields.pop("itl", ([], None))
    EndpointHourUsage.objects.create(
        endpoint=served, hour_start=hour, observed_s=3600.0, reset_count=0, computed_at=hour,
        ttft_bucket_bounds_s=ttft[0], ttft_bucket_counts=ttft[1], itl_bucket_bounds_s=itl[0],
        itl_bucket_counts=itl[1], **{"prompt_tokens": 0, "generation_tokens": 0, "requests": 0, **fields},
    )  # fmt: skip
