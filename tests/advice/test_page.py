"""The /advice/ page: classes with their advice and explanation; the form for admin and engineer only."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from advice.models import AdviceSettings, WorkloadClass
from advice.services import advice_refresh
from fleets.models import Role
from tests.helpers.dashboard_data import two_fleets
from tests.helpers.factories import MembershipFactory

pytestmark = pytest.mark.django_db

FORM = {"name": "batch", "llm_model": "", "ttft_target_ms": "5000", "ttft_percentile": "50", "deadline_h": "24",
        "expected_output_tokens_per_day": "1000000", "carbon_weight": "0.5"}  # fmt: skip


def signed_in(organization, role):
    membership = MembershipFactory(organization=organization, role=role)
    client = Client()
    client.force_login(membership.user)
    return client


def test_the_page_shows_each_class_with_its_advice_explained(org_a):
    two_fleets(org_a)
    AdviceSettings.objects.create(organization=org_a, min_hours_of_data=3)
    WorkloadClass.objects.create(organization=org_a, name="chat", ttft_target_ms=200,
                                 expected_output_tokens_per_day=10**9)  # fmt: skip
    advice_refresh(organization_id=org_a.pk, now=timezone.now())
    page = signed_in(org_a, Role.VIEWER).get("/advice/").content.decode()
    assert 'data-class="chat"' in page
    assert 'data-status="ok"' in page
    assert "100% on enterprise (h100-sxm;" in page
    assert 'data-outcome="all_consumer"' in page
    assert 'id="load-curves-chart"' in page
    assert 'id="read-only"' in page and 'id="class-form"' not in page
    assert 'href="/advice/" aria-current="page"' in page


def test_an_engineer_adds_a_class_and_a_viewer_may_not(org_a):
    response = signed_in(org_a, Role.ENGINEER).post("/advice/", FORM)
    assert response.status_code == 200
    assert 'id="class-added"' in response.content.decode()
    added = WorkloadClass.objects.get(organization=org_a, name="batch")
    assert (added.deadline_h, str(added.carbon_weight)) == (24, "0.50")
    assert signed_in(org_a, Role.VIEWER).post("/advice/", FORM | {"name": "other"}).status_code == 403
    again = signed_in(org_a, Role.ADMIN).post("/advice/", FORM)
    assert again.status_code == 400  # the name is taken
    assert WorkloadClass.objects.filter(organization=org_a).count() == 1
