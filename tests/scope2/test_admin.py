"""The admin shows an organization's own instruments read-only, and its residual-mix factors."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from scope2.models import ResidualMixFactor
from tests.helpers.factories import MembershipFactory, OrganizationFactory

pytestmark = pytest.mark.django_db


def test_org_admin_sees_own_instruments_read_only_and_no_one_elses(
    client: Client, org_a: Any, ppa: dict[str, Any]
) -> None:
    admin_b = MembershipFactory(organization=OrganizationFactory(name="Org B", slug="org-b"), role="admin").user
    admin_b.is_staff = True
    admin_b.save()
    client.force_login(admin_b)
    assert ppa["name"] not in client.get(reverse("admin:scope2_contractualinstrument_changelist")).content.decode()
    assert client.get(reverse("admin:scope2_contractualinstrument_change", args=[ppa["id"]])).status_code in {
        302, 403, 404,
    }  # fmt: skip

    admin_a = MembershipFactory(organization=org_a, role="admin").user
    admin_a.is_staff = True
    admin_a.save()
    client.force_login(admin_a)
    assert ppa["name"] in client.get(reverse("admin:scope2_contractualinstrument_changelist")).content.decode()
    assert client.get(reverse("admin:scope2_contractualinstrument_add")).status_code == 403


def test_org_admin_enters_a_residual_mix_factor(client: Client, org_a: Any) -> None:
    admin_a = MembershipFactory(organization=org_a, role="admin").user
    admin_a.is_staff = True
    admin_a.save()
    client.force_login(admin_a)
    response = client.post(
        reverse("admin:scope2_residualmixfactor_add"),
        {"organization": org_a.pk, "zone": "DE", "year": 2025, "gco2e_per_kwh": "400", "source": "AIB ERM 2025 v1.0"},
    )
    assert response.status_code == 302
    assert ResidualMixFactor.objects.get(organization=org_a).source == "AIB ERM 2025 v1.0"
