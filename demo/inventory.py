"""Writes the demo organization from ``demo.spec``: safe to run again, it updates in place.

Nodes are commissioned when the backfill window starts (never later on a
re-run), and every price, tariff and market factor is valid from then. The
GPUs are entered before their first report, with the UUIDs their simulated
collectors will report (the simulator is deterministic in seed and hostname),
so that their asset rows exist before any hour is accounted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from accounting.models import GpuAsset, NodePrice, SiteMarketFactor, SiteTariff, SiteTax
from accounting.models.prices import ValidityPeriod
from demo import spec
from demo.spec import FleetSpec, NodeSpec
from fleets.models import Fleet, Gpu, Membership, Node, Organization, Role, Site
from fleets.services import organization_get_or_create
from telemetry.collector.simulated import SimulatedBackend, parse_simulate_spec


@dataclass(frozen=True)
class DemoNode:
    node: Node
    spec: NodeSpec
    fleet: FleetSpec


@dataclass(frozen=True)
class DemoInventory:
    organization: Organization
    nodes: list[DemoNode]
    changed: bool  # a price, tariff, factor, asset or node changed: stored ledger lines are stale


def demo_login_ensure(*, organization: Organization) -> None:
    """The demo admin, a superuser and admin of the organization, with the printed password."""
    user, _ = get_user_model().objects.get_or_create(username=spec.USERNAME)
    if not (user.is_staff and user.is_superuser and user.check_password(spec.PASSWORD)):
        user.is_staff = user.is_superuser = True
        user.set_password(spec.PASSWORD)
        user.save()
    Membership.objects.update_or_create(user=user, organization=organization, defaults={"role": Role.ADMIN})


@transaction.atomic
def demo_inventory_seed(*, window_start: datetime) -> DemoInventory:
    """Create or update the organization, login, sites, fleets, nodes, GPUs, assets and prices."""
    organization, _ = organization_get_or_create(name=spec.ORGANIZATION)
    before = _ledger_inputs(organization)
    demo_login_ensure(organization=organization)
    since = _commissioned_since(organization, window_start)
    sites = {site.name: _site_upsert(organization, site, since) for site in spec.SITES}
    nodes = []
    for fleet_spec in spec.FLEETS:
        fleet, _ = Fleet.objects.update_or_create(
            organization=organization, name=fleet_spec.name, defaults={"description": fleet_spec.description}
        )
        _price_upsert(NodePrice(fleet=fleet, node=None), fleet_spec.price, since)
        for node_spec in fleet_spec.nodes:
            node = _node_upsert(fleet, sites[node_spec.site], node_spec, since)
            nodes.append(DemoNode(node, node_spec, fleet_spec))
    return DemoInventory(organization, nodes, changed=_ledger_inputs(organization) != before)


def _ledger_inputs(organization: Organization) -> list[Any]:
    """Everything of the inventory that the ledger prices and weighs, to tell whether a run changed it."""
    org = {"organization": organization}
    by_site = {"site__organization": organization}
    return [
        list(Site.objects.filter(**org).order_by("pk").values_list("pk", "grid_zone", "pue", "currency", "time_zone")),
        list(Node.objects.filter(fleet__organization=organization).order_by("pk").values_list()),
        list(NodePrice.objects.filter(fleet__organization=organization).order_by("pk").values_list()),
        list(SiteTariff.objects.filter(**by_site).order_by("pk").values_list()),
        list(SiteMarketFactor.objects.filter(**by_site).order_by("pk").values_list()),
        list(SiteTax.objects.filter(**by_site).order_by("pk").values_list()),
        list(GpuAsset.objects.filter(gpu__node__fleet__organization=organization).order_by("pk").values_list()),
    ]


def _commissioned_since(organization: Organization, window_start: datetime) -> datetime:
    """The window's start, or an earlier commissioning of a previous run (history is never cut short)."""
    earliest = (
        Node.objects.filter(fleet__organization=organization, commissioned_at__isnull=False)
        .order_by("commissioned_at")
        .values_list("commissioned_at", flat=True)
        .first()
    )
    return min(window_start, earliest) if earliest else window_start


def _site_upsert(organization: Organization, site_spec: spec.SiteSpec, since: datetime) -> Site:
    site = Site.objects.filter(organization=organization, name=site_spec.name).first() or Site(
        organization=organization, name=site_spec.name
    )
    site.grid_zone, site.country, site.pue = site_spec.grid_zone, site_spec.country, site_spec.pue
    site.time_zone, site.currency = site_spec.time_zone, site_spec.currency
    site.full_clean()
    site.save()
    if site_spec.windows:
        windows = [window.as_json() for window in site_spec.windows]
        tariff = {
            "windows": windows, "flat_price_per_kwh": None, "prices_include_vat": site_spec.prices_include_vat,
            "fixed_per_month": site_spec.fixed_per_month, "demand_per_kw_month": site_spec.demand_per_kw_month,
        }  # fmt: skip
        _period_upsert(SiteTariff(site=site), tariff, since)
    if site_spec.tax is not None:
        tax = site_spec.tax
        taxes = {"vat_rate": tax.vat_rate, "vat_recoverable": tax.vat_recoverable,
                 "energy_tax_per_kwh": tax.energy_tax_per_kwh}  # fmt: skip
        _period_upsert(SiteTax(site=site), taxes, since)
    if site_spec.market is not None:
        market = {"gco2e_per_kwh": site_spec.market.g_per_kwh, "source": site_spec.market.source}
        _period_upsert(SiteMarketFactor(site=site), market, since)
    return site


def _price_upsert(new: NodePrice, price: spec.PriceSpec, since: datetime) -> None:
    fields = {
        "kind": price.kind,
        "rate_per_h": price.rate_per_gpu_h,
        "rate_per": NodePrice.RatePer.GPU,
        "includes_power": price.includes_power,
        "capex": price.capex,
        "lifetime_years": price.lifetime_years,
        "opex_per_h": price.opex_per_h,
    }
    _period_upsert(new, fields, since)


def _period_upsert(new: ValidityPeriod, fields: dict[str, Any], since: datetime) -> None:
    """Update the subject's first period (valid from ``since`` at the latest), or create it."""
    existing = type(new)._default_manager.filter(**new.subject_filter()).order_by("valid_from").first()
    row = existing or new
    for name, value in fields.items():
        setattr(row, name, value)
    row.valid_from = min(row.valid_from, since) if existing else since
    row.full_clean()
    row.save()


def _node_upsert(fleet: Fleet, site: Site, node_spec: spec.NodeSpec, since: datetime) -> Node:
    node, _ = Node.objects.get_or_create(
        fleet=fleet, hostname=node_spec.hostname, defaults={"site": site, "commissioned_at": since}
    )
    node.site, node.tenure = site, node_spec.tenure
    node.commissioned_at = min(node.commissioned_at or since, since)
    node.decommissioned_at = None
    node.full_clean()
    node.save()
    if node_spec.price is not None:
        _price_upsert(NodePrice(fleet=fleet, node=node), node_spec.price, since)
    for gpu, asset in zip(_gpus_upsert(node, node_spec), node_spec.assets, strict=False):
        _asset_upsert(gpu, asset, since)
    return node


def _gpus_upsert(node: Node, node_spec: spec.NodeSpec) -> list[Gpu]:
    """The GPUs the node's simulated collector will report, under the same UUIDs."""
    backend = SimulatedBackend(parse_simulate_spec(node_spec.simulate), seed=spec.SEED, hostname=node.hostname)
    gpus = []
    for identity in backend.inventory():
        gpu, _ = Gpu.objects.update_or_create(
            uuid=identity.uuid,
            defaults={
                "node": node,
                "index": identity.index,
                "name": identity.name,
                "energy_counter_supported": identity.energy_counter_supported,
            },
        )
        gpus.append(gpu)
    return gpus


def _asset_upsert(gpu: Gpu, asset: spec.AssetSpec, since: datetime) -> None:
    used = asset.prior_use_years > 0
    GpuAsset.objects.update_or_create(
        gpu=gpu,
        defaults={
            "acquired_on": (since - timedelta(days=asset.acquired_days_before)).date(),
            "condition": GpuAsset.Condition.SECOND_HAND if used else GpuAsset.Condition.NEW,
            "prior_use_years": asset.prior_use_years,
            "expected_own_years": asset.expected_own_years,
        },
    )
