"""Every editable admin audits its saves: the registry is walked, so an admin registered later is checked too.

For each model the admin registers, a superuser's save of a changed row through
its ``ModelAdmin`` must leave an ``AuditEntry`` (the admin's name, the row's fields
before and after), unless the model is listed in ``NOT_AUDITED`` with the reason.
A new editable admin fails here until it audits (and gets a row in ``CHANGES``:
how to change one of its rows) or is listed with its reason.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.messages.storage.cookie import CookieStorage
from django.db import models, transaction
from django.test import Client, RequestFactory
from django.urls import reverse

from accounting.models import HardwareProfile, LedgerSettings, SiteTax
from advice.models import AdviceSettings
from fleets.models import Fleet, Membership, Node, Organization, Role, Site
from fleets.services import node_token_rotate
from governance.models import AuditEntry
from scope2.models import ResidualMixFactor
from telemetry.models import PrometheusSource
from tests.helpers.factories import (
    GpuAssetFactory,
    MembershipFactory,
    NodePriceFactory,
    SiteFactory,
    SiteMarketFactorFactory,
    SitePueFactory,
    SiteTariffFactory,
    UserFactory,
    WorkloadClassFactory,
)

pytestmark = pytest.mark.django_db

REGISTERED = sorted(
    (model for model in apps.get_models() if admin.site.is_registered(model)), key=lambda m: m._meta.label
)
WHEN = datetime(2026, 1, 2, 12, tzinfo=UTC)
READ_ONLY = "every field of its form is read-only: a save changes nothing"

# Editable in the admin, yet not audited: why. Each "read-only" reason is checked below (its form has no field).
NOT_AUDITED: dict[str, str] = {
    "auth.User": "Django's own; changed by superusers only (an organization admin has no Django model permission), "
    "and a user belongs to no organization while every audit entry is an organization's; a person's role in an "
    "organization is a Membership, audited",
    "auth.Group": "Django's own, superusers only; the product reads no group (roles are memberships)",
    "fleets.PersonalToken": "a person's own credential, not an organization's input (an entry needs an "
    "organization); only revoked here, and the revocation stays on the row (revoked_at)",
    "fleets.Gpu": READ_ONLY + " (GPUs are as their collectors report them)",
    "fleets.GpuInstallation": READ_ONLY + " (installations are as the samples showed)",
    "axes.AccessAttempt": READ_ONLY + " (login protection's own records)",
    "axes.AccessLog": READ_ONLY + " (login protection's own records)",
    "axes.AccessFailureLog": READ_ONLY + " (login protection's own records)",
}


@pytest.fixture
def root(db: Any) -> Any:
    return UserFactory(username="root", is_staff=True, is_superuser=True)


def superuser_request(user: Any) -> Any:
    request = RequestFactory().post("/admin/")
    request.user = user
    request._messages = CookieStorage(request)  # the admins say how many hours re-opened
    return request


def editable(model_admin: admin.ModelAdmin, request: Any) -> bool:
    return bool(model_admin.has_change_permission(request) or model_admin.has_add_permission(request))


def h100_profile(organization: Organization) -> HardwareProfile:
    return HardwareProfile.objects.create(
        organization=organization,
        key="h100-sxm",
        display_name="H100 SXM",
        nvml_names=["NVIDIA H100 80GB HBM3"],
        gpu_class="enterprise",
        tdp_w=700,
        idle_w=70,
        memory_gb=80,
        embodied_low_kgco2e=79,
        embodied_central_kgco2e=197,
        embodied_high_kgco2e=315,
        host_embodied_kgco2e_per_gpu=Decimal("312.5"),
        sources=[{"what": "tdp_w", "title": "the datasheet", "year": 2024}],
    )


# How to change one row of each audited model: the row, and the fields the edit sets.
Change = Callable[[dict[str, Any]], tuple[models.Model, dict[str, Any]]]
CHANGES: dict[str, Change] = {
    "fleets.Organization": lambda w: (w["org"], {"name": "Org A renamed"}),
    "fleets.Membership": lambda w: (
        MembershipFactory(organization=w["org"], role=Role.VIEWER),
        {"role": Role.ADMIN},
    ),
    "fleets.Fleet": lambda w: (w["fleet"], {"description": "the chat fleet"}),
    "telemetry.PrometheusSource": lambda w: (
        PrometheusSource.objects.create(organization=w["org"], name="prom", url="http://prometheus:9090"),
        {"host_label": "hostname"},
    ),
    "fleets.Site": lambda w: (w["site"], {"grid_zone": "FR", "time_zone": "Europe/Paris"}),
    "fleets.Node": lambda w: (w["node"], {"site": SiteFactory(organization=w["org"], name="ams-2")}),
    "fleets.NodeCredential": lambda w: (node_token_rotate(node=w["node"]).credential, {"revoked_at": WHEN}),
    "accounting.NodePrice": lambda w: (NodePriceFactory(node=w["node"]), {"rate_per_h": Decimal("3.00")}),
    "accounting.SiteTariff": lambda w: (SiteTariffFactory(site=w["site"]), {"flat_price_per_kwh": Decimal("0.4")}),
    "accounting.SitePue": lambda w: (SitePueFactory(site=w["site"]), {"pue": Decimal("1.3")}),
    "accounting.SiteTax": lambda w: (
        SiteTax.objects.create(site=w["site"], vat_rate=Decimal("0.25"), valid_from=datetime(2026, 1, 1, tzinfo=UTC)),
        {"vat_rate": Decimal("0.19")},
    ),
    "accounting.SiteMarketFactor": lambda w: (SiteMarketFactorFactory(site=w["site"]), {"gco2e_per_kwh": 60}),
    "accounting.GpuAsset": lambda w: (GpuAssetFactory(gpu=w["node"].gpus.first()), {"acquired_on": WHEN.date()}),
    "accounting.LedgerSettings": lambda w: (
        LedgerSettings.objects.create(organization=w["org"]),
        {"amortization": "utilization"},
    ),
    "accounting.HardwareProfile": lambda w: (h100_profile(w["org"]), {"tdp_w": 650}),
    "scope2.ResidualMixFactor": lambda w: (
        ResidualMixFactor.objects.create(
            organization=w["org"], zone="DE", year=2026, gco2e_per_kwh=400, source="AIB ERM v1.0"
        ),
        {"gco2e_per_kwh": 410},
    ),
    "advice.WorkloadClass": lambda w: (WorkloadClassFactory(organization=w["org"]), {"ttft_target_ms": 900}),
    "advice.AdviceSettings": lambda w: (
        AdviceSettings.objects.create(organization=w["org"]),
        {"webhook_url": "https://hooks.example.com/advice"},
    ),
}


@pytest.fixture
def world(org_a: Organization, site_a: Site, fleet_a: Fleet, node_a: Node) -> dict[str, Any]:
    return {"org": org_a, "site": site_a, "fleet": fleet_a, "node": node_a}


def test_the_walk_sees_the_registry_and_its_lists_name_registered_models() -> None:
    labels = {model._meta.label for model in REGISTERED}
    assert {"fleets.Membership", "advice.AdviceSettings", "fleets.Site", "governance.AuditEntry"} <= labels
    assert set(NOT_AUDITED) <= labels
    assert set(CHANGES) <= labels
    assert not set(NOT_AUDITED) & set(CHANGES)


@pytest.mark.parametrize("model", REGISTERED, ids=lambda model: model._meta.label)
def test_every_editable_admin_audits_a_save_or_says_why_not(
    model: type[models.Model], world: dict[str, Any], root: Any
) -> None:
    model_admin = admin.site._registry[model]
    request = superuser_request(root)
    label = model._meta.label
    if not editable(model_admin, request):
        assert label not in NOT_AUDITED, f"{label} is read-only in the admin: take it off NOT_AUDITED"
        return
    if label in NOT_AUDITED:
        if NOT_AUDITED[label].startswith(READ_ONLY):
            assert list(model_admin.get_form(request)().fields) == [], f"{label}: its form has editable fields"
        return
    assert label in CHANGES, f"{label} is editable in the admin: audit its saves and say how to change a row "
    "in CHANGES, or list it in NOT_AUDITED with the reason"

    # given: one row of the model, edited as its admin form would
    row, edits = CHANGES[label](world)
    row = type(row)._default_manager.get(pk=row.pk)
    for name, value in edits.items():
        setattr(row, name, value)
    seen = set(AuditEntry.objects.values_list("pk", flat=True))

    # when: the admin saves it
    form = model_admin.get_form(request, row)(instance=row)
    with transaction.atomic():  # as the change view does
        model_admin.save_model(request, row, form, change=True)

    # then: an entry with the admin's name, the edited fields before and after
    entries = AuditEntry.objects.exclude(pk__in=seen)
    assert entries.exists(), f"{label} saved in the admin left no audit entry"
    assert {entry.username for entry in entries} == {"root"}
    assert any(entry.before != entry.after and entry.before is not None for entry in entries)


# --- the admin paths the walk stands for, through the admin's pages -------------------


def test_a_role_raised_in_the_admin_is_audited_with_the_admin_and_before_and_after(
    staff: Client, org_a: Organization
) -> None:
    member = MembershipFactory(organization=org_a, role=Role.VIEWER, user__username="vic")
    url = reverse("admin:fleets_membership_change", args=[member.pk])
    form = {"user": str(member.user_id), "organization": str(org_a.pk), "role": "admin"}
    assert staff.post(url, form).status_code == 302
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.subject, entry.object_id, entry.organization_id) == (
        "ada", "update", "membership", member.pk, org_a.pk,
    )  # fmt: skip
    assert (entry.before["role"], entry.after["role"]) == ("viewer", "admin")
    assert Membership.objects.get(pk=member.pk).role == "admin"


def test_a_webhook_set_in_the_admin_is_audited_with_before_and_after(staff: Client, org_a: Organization) -> None:
    options = AdviceSettings.objects.create(organization=org_a, webhook_url="https://hooks.example.com/old")
    url = reverse("admin:advice_advicesettings_change", args=[options.pk])
    form = {"organization": str(org_a.pk), "min_hours_of_data": "24", "curve_days": "14",
            "webhook_url": "https://hooks.example.com/new", "notify_emails": ""}  # fmt: skip
    response = staff.post(url, form)
    assert response.status_code == 302, response.content
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.subject, entry.before["webhook_url"], entry.after["webhook_url"]) == (
        "ada", "advice_settings", "https://hooks.example.com/old", "https://hooks.example.com/new",
    )  # fmt: skip


def test_a_workload_class_added_and_deleted_in_the_admin_is_audited(staff: Client, org_a: Organization) -> None:
    form = {"organization": str(org_a.pk), "name": "chat", "llm_model": "", "ttft_target_ms": "500",
            "ttft_percentile": "99", "deadline_h": "", "expected_output_tokens_per_day": "1000",
            "carbon_weight": "0"}  # fmt: skip
    assert staff.post(reverse("admin:advice_workloadclass_add"), form).status_code == 302
    workload_class = org_a.workload_classes.get()
    url = reverse("admin:advice_workloadclass_delete", args=[workload_class.pk])
    assert staff.post(url, {"post": "yes"}).status_code == 302
    assert list(AuditEntry.objects.order_by("id").values_list("username", "action", "subject", "object_id")) == [
        ("ada", "create", "workload_class", workload_class.pk), ("ada", "delete", "workload_class", workload_class.pk),
    ]  # fmt: skip


def test_a_prometheus_source_saved_in_the_admin_is_audited_without_its_secrets(
    world: dict[str, Any], root: Any
) -> None:
    # given: a source with a bearer token, whose token and host label an admin changes
    source = PrometheusSource.objects.create(
        organization=world["org"], name="prom", url="http://prometheus:9090", bearer_token="old-secret-token"
    )
    source.bearer_token, source.host_label = "new-secret-token", "hostname"
    model_admin = admin.site._registry[PrometheusSource]
    request = superuser_request(root)

    # when: the admin saves it
    with transaction.atomic():
        model_admin.save_model(request, source, model_admin.get_form(request, source)(instance=source), change=True)

    # then: the change is audited, and neither token is in the trail
    entry = AuditEntry.objects.get(subject="prometheus_source")
    assert (entry.before["host_label"], entry.after["host_label"]) == ("Hostname", "hostname")
    assert "secret-token" not in str(entry.before) + str(entry.after)
