"""Every model registered in the admin, seen by an admin of Org A: nothing of Org B, in any list or form.

The test walks the admin's registry, so a model registered later is checked too:
its list, the change, history and delete pages of Org B's rows, and the choices of
every relation field in its add and change forms (and of its list filters) must
hold only rows of Org A. Users are rows of an organization through their
memberships; superusers belong to no organization's choices.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import models
from django.test import Client
from django.urls import NoReverseMatch, reverse

from fleets.admin import ORGANIZATION_PATHS
from fleets.models import Gpu, Node, Organization, PersonalToken, Role
from fleets.services import credential_issue
from tests.helpers.factories import GpuFactory, MembershipFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db

User = get_user_model()
REGISTERED = sorted(
    (model for model in apps.get_models() if admin.site.is_registered(model)), key=lambda m: m._meta.label
)
WHEN = datetime(2026, 11, 2, 10, tzinfo=UTC)
ALLOWED_ELSEWHERE = {302, 403, 404}  # redirected to the login, refused, or not found: never shown


def filled(model: type[models.Model], **given: Any) -> models.Model:
    """A saved row of ``model`` with ``given`` values and plain ones for every other required field."""
    values = dict(given)
    for field in model._meta.concrete_fields:
        if field.name in values or field.attname in values or field.primary_key or field.null:
            continue
        if field.has_default() or getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            continue
        values[field.name] = _plain_value(field)
    return model.objects.create(**values)


def _plain_value(field: models.Field) -> Any:
    if field.choices:
        return field.choices[0][0]
    if isinstance(field, models.DecimalField):
        return Decimal(1)
    if isinstance(field, (models.FloatField, models.IntegerField)):
        return 1
    if isinstance(field, models.BooleanField):
        return False
    if isinstance(field, models.DateTimeField):
        return WHEN
    if isinstance(field, models.DateField):
        return WHEN.date()
    if isinstance(field, models.JSONField):
        return []
    if isinstance(field, (models.CharField, models.TextField)):
        return "x"
    if isinstance(field, models.BinaryField):
        return b"x"
    raise AssertionError(f"no plain value for {field!r}: give it in the test")


def organization_rows(organization: Organization, key: str) -> list[models.Model]:
    """One row of every organization-scoped model, for ``organization``."""
    node = NodeFactory(fleet__organization=organization, hostname=f"host-{key}")
    gpu = GpuFactory(node=node)
    credential_issue(node=node)
    rows: list[models.Model] = [organization, node.site, node.fleet, node, gpu, *node.credentials.all()]
    for model in REGISTERED:
        path = ORGANIZATION_PATHS.get(model)
        if path is None or model in {Organization, type(node.site), type(node.fleet), Node, Gpu} or path == "id":
            continue
        if model._meta.label in {"fleets.Membership", "fleets.NodeCredential"}:
            continue
        rows.append(filled(model, **_owner_fields(model, organization, node, gpu)))
    return rows


def _owner_fields(model: type[models.Model], organization: Organization, node: Node, gpu: Gpu) -> dict[str, Any]:
    """Values for the relation fields of ``model`` that lead to ``organization``."""
    values: dict[str, Any] = {}
    for field in model._meta.concrete_fields:
        if not field.is_relation:
            continue
        related = field.related_model
        target = {Organization: organization, Node: node, Gpu: gpu, type(node.site): node.site}.get(related)
        if related is type(node.fleet):
            target = node.fleet
        if target is not None:
            values[field.name] = target
    names = {field.name for field in model._meta.concrete_fields}
    if "key" in names:
        values.setdefault("key", f"custom-{organization.slug}")
    if "volume_mwh" in names:  # an instrument has a volume or a share, never neither
        values.setdefault("volume_mwh", Decimal(1))
    if "delivery_end" in names:  # a delivery period ends after it starts
        values.setdefault("delivery_end", WHEN.replace(year=WHEN.year + 1))
    if "end" in names:  # a locked period ends after it starts
        values.setdefault("end", WHEN.replace(year=WHEN.year + 1))
    return values


@pytest.fixture
def world(org_a: Organization, org_b: Organization, user_a: Any, user_b: Any) -> dict[str, Any]:
    anna = UserFactory(username="anna")
    MembershipFactory(user=anna, organization=org_a, role=Role.VIEWER)
    root = UserFactory(username="root", is_staff=True, is_superuser=True)
    MembershipFactory(user=root, organization=org_a, role=Role.ADMIN)  # a superuser in Org A too
    UserFactory(username="loner")  # in no organization
    for user in (user_a, user_b):
        PersonalToken.objects.create(user=user, name="tool", prefix=f"wlp_{user.username}", token_sha256=user.username)
    Group.objects.create(name="auditors")
    # A failed password login (kept: no success follows for that name) and a successful one
    # of Org B's admin leave django-axes' records.
    Client().post("/accounts/login/", {"username": "mallory", "password": "wrong"}, REMOTE_ADDR="203.0.113.9")
    Client().post("/accounts/login/", {"username": user_b.username, "password": "correct horse battery staple"})
    rows_a = organization_rows(org_a, "a")
    rows_b = organization_rows(org_b, "b")
    return {"rows_a": rows_a, "rows_b": rows_b, "anna": anna, "root": root}


def belongs_to_a(obj: models.Model, admin_a: Any, org_a: Organization) -> bool:
    """Whether an admin of Org A may see ``obj``: the one rule per kind of row."""
    if isinstance(obj, User):
        return not obj.is_superuser and obj.memberships.filter(organization=org_a).exists()
    if isinstance(obj, PersonalToken):
        return obj.user_id == admin_a.pk  # tokens belong to people: one's own
    path = ORGANIZATION_PATHS.get(type(obj))
    if path is None:
        return False  # not an organization's row: an organization admin sees none of them
    return type(obj).objects.filter(pk=obj.pk, **{path: org_a.pk}).exists()


def admin_url(model: type[models.Model], action: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{action}", args=args)


def relation_choices(response: Any) -> dict[str, list[models.Model]]:
    """The objects offered by each relation field of the page's form."""
    form = response.context["adminform"].form
    return {
        name: list(field.queryset)
        for name, field in form.fields.items()
        if getattr(field, "queryset", None) is not None
    }


@pytest.fixture
def browser_a(user_a: Any) -> Client:
    client = Client()
    client.force_login(user_a)
    return client


def test_the_registry_is_walked() -> None:
    labels = {model._meta.label for model in REGISTERED}
    assert {"fleets.Membership", "auth.User", "accounting.NodePrice", "telemetry.ServingEndpoint"} <= labels


@pytest.mark.parametrize("model", REGISTERED, ids=lambda model: model._meta.label)
def test_an_organization_admin_sees_nothing_of_another_organization(
    model: type[models.Model], world: dict[str, Any], browser_a: Client, user_a: Any, org_a: Organization
) -> None:
    rows = list(model.objects.all())
    others = [row for row in rows if not belongs_to_a(row, user_a, org_a)]
    assert rows, f"the test made no {model._meta.label} row"

    # the list
    listing = browser_a.get(admin_url(model, "changelist"))
    assert listing.status_code in {200, 403}
    if listing.status_code == 200:
        shown = list(listing.context["cl"].result_list)
        assert [row for row in shown if not belongs_to_a(row, user_a, org_a)] == []
        for spec in listing.context["cl"].filter_specs:
            if isinstance(spec, admin.RelatedFieldListFilter):
                related = spec.field.related_model
                offered = [related.objects.get(pk=pk) for pk, _ in spec.lookup_choices]
                assert [row for row in offered if not belongs_to_a(row, user_a, org_a)] == []

    # another organization's rows: no page shows them
    for row in others:
        for action in ("change", "history", "delete"):
            try:
                url = admin_url(model, action, row.pk)
            except NoReverseMatch:
                continue
            assert browser_a.get(url).status_code in ALLOWED_ELSEWHERE, (action, row)

    # the forms offer only Org A's rows
    pages = [admin_url(model, "add")] + [
        admin_url(model, "change", row.pk) for row in rows if belongs_to_a(row, user_a, org_a)
    ]
    for url in pages:
        page = browser_a.get(url)
        if page.status_code != 200:
            continue
        for name, choices in relation_choices(page).items():
            outside = [choice for choice in choices if not belongs_to_a(choice, user_a, org_a)]
            assert outside == [], f"{url} field {name!r} offers {outside}"


def test_the_membership_form_offers_exactly_the_organizations_users(
    world: dict[str, Any], browser_a: Client, user_a: Any
) -> None:
    page = browser_a.get(admin_url(type(user_a.memberships.first()), "add"))

    assert page.status_code == 200
    offered = sorted(user.username for user in relation_choices(page)["user"])
    assert offered == ["alice", "anna"]  # not bob (Org B), root (a superuser), loner (no organization)


def test_an_organization_admin_cannot_add_another_organizations_user(
    world: dict[str, Any], browser_a: Client, user_b: Any, org_a: Organization
) -> None:
    membership_model = type(user_b.memberships.first())
    response = browser_a.post(
        admin_url(membership_model, "add"), {"user": user_b.pk, "organization": org_a.pk, "role": Role.ADMIN}
    )

    assert response.status_code == 200  # the form again, with an error on the user
    assert "user" in response.context["adminform"].form.errors
    assert not membership_model.objects.filter(user=user_b, organization=org_a).exists()


def test_a_superuser_still_sees_every_user(world: dict[str, Any]) -> None:
    client = Client()
    client.force_login(world["root"])
    membership_model = type(world["root"].memberships.first())

    page = client.get(admin_url(membership_model, "add"))

    assert {user.username for user in relation_choices(page)["user"]} == {
        "alice",
        "anna",
        "bob",
        "root",
        "loner",
    }
