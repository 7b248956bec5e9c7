"""A user of one organization can neither read nor change another's rows, model by model."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleets.models import Fleet, Gpu, Membership, Node, NodeCredential, Organization, Role, Site
from fleets.selectors import fleets_for_user, gpus_for_user, nodes_for_user, sites_for_user
from fleets.services import credential_issue
from tests.helpers.factories import GpuFactory, MembershipFactory, NodeFactory, UserFactory


@pytest.fixture
def inventory(org_a, org_b, user_a, user_b):
    """Each organization gets a node with a GPU and a credential."""
    rows = {}
    for key, org in (("a", org_a), ("b", org_b)):
        node = NodeFactory(fleet__organization=org, hostname=f"host-{key}")
        gpu = GpuFactory(node=node)
        credential_issue(node=node)
        rows[key] = {
            Organization: org,
            Membership: Membership.objects.get(organization=org),
            Site: node.site,
            Fleet: node.fleet,
            Node: node,
            Gpu: gpu,
            NodeCredential: NodeCredential.objects.get(node=node),
        }
    return rows


MODELS = [Organization, Membership, Site, Fleet, Node, Gpu, NodeCredential]


def admin_url(model, action, *args):
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{action}", args=args)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_admin_list_shows_only_own_organization(client, user_a, inventory, model):
    client.force_login(user_a)

    response = client.get(admin_url(model, "changelist"))

    assert response.status_code == 200
    shown = {obj.pk for obj in response.context["cl"].queryset}
    assert inventory["a"][model].pk in shown
    assert inventory["b"][model].pk not in shown


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_admin_cannot_open_or_change_another_organizations_row(client, user_a, inventory, model):
    client.force_login(user_a)
    foreign = inventory["b"][model]
    before = model.objects.filter(pk=foreign.pk).values().get()

    opened = client.get(admin_url(model, "change", foreign.pk))
    changed = client.post(admin_url(model, "change", foreign.pk), {"name": "hijacked", "hostname": "hijacked"})
    deleted = client.post(admin_url(model, "delete", foreign.pk), {"post": "yes"})

    for response in (opened, changed, deleted):
        assert response.status_code == 302 and response.url == reverse("admin:index")
    assert model.objects.filter(pk=foreign.pk).values().get() == before


def test_admin_form_offers_only_own_fleets_and_sites(client, user_a, inventory):
    client.force_login(user_a)

    response = client.get(admin_url(Node, "add"))

    form = response.context["adminform"].form
    assert list(form.fields["fleet"].queryset) == [inventory["a"][Fleet]]
    assert list(form.fields["site"].queryset) == [inventory["a"][Site]]


def test_selectors_scope_every_model_to_the_users_organizations(inventory, user_a):
    assert list(sites_for_user(user=user_a)) == [inventory["a"][Site]]
    assert list(fleets_for_user(user=user_a)) == [inventory["a"][Fleet]]
    assert list(nodes_for_user(user=user_a)) == [inventory["a"][Node]]
    assert list(gpus_for_user(user=user_a)) == [inventory["a"][Gpu]]


def test_non_admin_members_see_nothing_in_the_admin(client, inventory, org_a):
    viewer = UserFactory(username="vic", is_staff=True)
    MembershipFactory(user=viewer, organization=org_a, role=Role.VIEWER)
    client.force_login(viewer)

    response = client.get(admin_url(Node, "changelist"))

    assert response.status_code in (200, 403)
    if response.status_code == 200:
        assert not list(response.context["cl"].queryset)
