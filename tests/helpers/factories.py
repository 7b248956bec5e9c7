"""factory_boy factories for the inventory (fleets) and the ledger's inputs (accounting).

Each accounting factory's defaults are a plausible row that its model's ``clean`` accepts; a test names
the values its assertions depend on.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model

from accounting.models import GpuAsset, NodePrice, SiteMarketFactor, SitePue, SiteTariff
from advice.models import WorkloadClass
from fleets.models import Fleet, Gpu, Membership, Node, Organization, Role, Site
from grid.models import GridIntensity, IntensityKind
from scope2.models import ContractualInstrument

# When an accounting row comes into force unless a test says otherwise: before any hour the suite computes.
LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Org {n}")
    slug = factory.LazyAttribute(lambda o: o.name.lower().replace(" ", "-"))


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("correct horse battery staple")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    organization = factory.SubFactory(OrganizationFactory)
    role = Role.VIEWER


class SiteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Site

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"site-{n}")
    grid_zone = "DE"
    country = "DE"


class FleetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Fleet

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"fleet-{n}")


class NodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Node

    fleet = factory.SubFactory(FleetFactory)
    site = factory.SubFactory(SiteFactory, organization=factory.SelfAttribute("..fleet.organization"))
    hostname = factory.Sequence(lambda n: f"gpu-{n:03d}")


class GpuFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Gpu

    node = factory.SubFactory(NodeFactory)
    uuid = factory.Sequence(lambda n: f"GPU-{n:08d}-0000-0000-0000-000000000000")
    index = factory.Sequence(lambda n: n % 8)
    name = "NVIDIA H100 80GB HBM3"


class NodePriceFactory(factory.django.DjangoModelFactory):
    """A node's own rent, 2.50 per GPU-hour without power; ``node=None, fleet=...`` is the fleet's default."""

    class Meta:
        model = NodePrice

    node = factory.SubFactory(NodeFactory)
    fleet = factory.LazyAttribute(lambda price: price.node.fleet)
    kind = NodePrice.Kind.RENTED
    rate_per_h = Decimal("2.50")
    rate_per = NodePrice.RatePer.GPU
    valid_from = LONG_AGO


class SiteInForceFactory(factory.django.DjangoModelFactory):
    """A site's dated input (tariff, PUE, market factor), in force since LONG_AGO and still."""

    class Meta:
        abstract = True

    site = factory.SubFactory(SiteFactory)
    valid_from = LONG_AGO


class SiteTariffFactory(SiteInForceFactory):
    """A flat 0.30 per kWh, in the site's currency."""

    class Meta:
        model = SiteTariff

    flat_price_per_kwh = Decimal("0.30")


class SitePueFactory(SiteInForceFactory):
    class Meta:
        model = SitePue

    pue = Decimal("1.20")


class SiteMarketFactorFactory(SiteInForceFactory):
    class Meta:
        model = SiteMarketFactor

    gco2e_per_kwh = Decimal(50)
    source = "contract:test"


class GpuAssetFactory(factory.django.DjangoModelFactory):
    """A GPU bought new, its embodied carbon spread over its catalog lifetime."""

    class Meta:
        model = GpuAsset

    gpu = factory.SubFactory(GpuFactory)
    condition = GpuAsset.Condition.NEW


class GridIntensityFactory(factory.django.DjangoModelFactory):
    """One live hour of a zone's average intensity, fetched as the hour began."""

    class Meta:
        model = GridIntensity

    zone = "DE"
    hour_start = factory.Sequence(lambda n: LONG_AGO + timedelta(hours=n))
    kind = IntensityKind.AVERAGE
    source = "electricitymaps"
    gco2e_per_kwh = Decimal(200)
    fetched_at = factory.SelfAttribute("hour_start")


class ContractualInstrumentFactory(factory.django.DjangoModelFactory):
    """A solar PPA of 100 MWh delivered at the site over 2025, generated in its zone."""

    class Meta:
        model = ContractualInstrument

    site = factory.SubFactory(SiteFactory)
    organization = factory.SelfAttribute("site.organization")
    kind = ContractualInstrument.Kind.PPA
    name = factory.Sequence(lambda n: f"Solar PPA {n}")
    volume_mwh = Decimal(100)
    delivery_start = datetime(2025, 1, 1, tzinfo=UTC)
    delivery_end = datetime(2026, 1, 1, tzinfo=UTC)
    vintage_year = 2025
    generation_zone = factory.SelfAttribute("site.grid_zone")
    technology = ContractualInstrument.Technology.SOLAR


class WorkloadClassFactory(factory.django.DjangoModelFactory):
    """A latency-sensitive class: P99 TTFT under 500 ms, a million output tokens a day."""

    class Meta:
        model = WorkloadClass

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"class-{n}")
    ttft_target_ms = 500
    expected_output_tokens_per_day = 1_000_000
