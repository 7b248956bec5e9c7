"""factory_boy factories for the inventory."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from fleets.models import Fleet, Gpu, Membership, Node, Organization, Role, Site


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
