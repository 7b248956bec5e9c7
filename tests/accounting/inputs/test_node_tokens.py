"""Engineers manage nodes and node tokens (API and page); viewers and the other roles read; outsiders get 404."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from fleets.models import Fleet, Node, NodeCredential, Organization, Role, Site
from fleets.services import credential_authenticate, credential_issue
from fleets.tokens import token_sha256
from governance.models import AuditEntry
from tests.helpers.factories import FleetFactory, MembershipFactory, NodeFactory, SiteFactory
from tests.helpers.inputs import ROLES

pytestmark = pytest.mark.django_db

NODE_MANAGERS = {Role.ADMIN, Role.ENGINEER}


@pytest.fixture
def node(fleet_a: Fleet, site_a: Site) -> Node:
    """A node of Org A (no ledger lines: tokens only) with one active token."""
    node = NodeFactory(fleet=fleet_a, site=site_a, hostname="h100-c")
    credential_issue(node=node)
    return node


@pytest.fixture
def other(org_b: Organization) -> Node:
    site = SiteFactory(organization=org_b, name="ams-1")
    return NodeFactory(fleet=FleetFactory(organization=org_b, name="other"), site=site, hostname="other-1")


def writes(node: Node) -> list[tuple[str, str, dict[str, Any]]]:
    token = NodeCredential.objects.filter(node=node, revoked_at__isnull=True).first()
    enroll = {"fleet": node.fleet_id, "site": node.site_id, "hostname": "h100-new"}
    return [
        ("post", "/api/v1/node-enrollments/", enroll),
        ("post", "/api/v1/node-tokens/", {"node": node.pk, "revoke_others": False}),
        ("delete", f"/api/v1/node-tokens/{token.pk}/", {}),
    ]


@pytest.mark.parametrize("role", ROLES)
def test_each_node_write_answers_by_role(client_as: Callable[..., APIClient], node: Node, role: str) -> None:
    client = client_as(role)
    for method, url, body in writes(node):
        audited = AuditEntry.objects.count()
        response = getattr(client, method)(url, body, format="json")
        if role in NODE_MANAGERS:
            assert response.status_code in (200, 201), (url, response.content)
            assert AuditEntry.objects.count() > audited
        else:
            assert response.status_code == 403, (url, response.status_code)
            assert AuditEntry.objects.count() == audited
    # the new node's and the handed-over one (the first revoked), or the first one alone
    expected = 2 if role in NODE_MANAGERS else 1
    assert NodeCredential.objects.filter(revoked_at__isnull=True).count() == expected


def test_another_organizations_engineer_gets_404_and_changes_nothing(
    client_as: Callable[..., APIClient], node: Node, org_b: Organization, other: Node
) -> None:
    outsider = client_as(Role.ENGINEER, org_b)
    for method, url, body in writes(node):
        assert getattr(outsider, method)(url, body, format="json").status_code == 404, url
    mixed = {"fleet": other.fleet_id, "site": node.site_id, "hostname": "sneaky"}  # their fleet, our site
    assert outsider.post("/api/v1/node-enrollments/", mixed, format="json").status_code == 404
    assert outsider.get("/api/v1/node-tokens/").json() == []
    assert (Node.objects.filter(fleet=node.fleet).count(), NodeCredential.objects.count()) == (1, 1)
    assert not AuditEntry.objects.exists()


def test_an_enrolled_nodes_token_is_shown_once_stored_hashed_and_speaks_for_that_node_only(
    client_as: Callable[..., APIClient], fleet_a: Fleet, site_a: Site
) -> None:
    engineer = client_as(Role.ENGINEER, username="erin")
    body = {"fleet": fleet_a.pk, "site": site_a.pk, "hostname": "h200-1"}
    response = engineer.post("/api/v1/node-enrollments/", body, format="json")
    assert response.status_code == 201
    assert response["Cache-Control"] == "no-store"
    token = response.json()["token"]
    assert token.startswith("wln_") and response.json()["prefix"] == token[:12]
    stored = NodeCredential.objects.get()
    assert stored.token_sha256 == token_sha256(token)
    assert credential_authenticate(token=token).node_id == Node.objects.get(hostname="h200-1").pk
    listed = engineer.get("/api/v1/node-tokens/").json()
    assert [(row["hostname"], row["prefix"], row["revoked_at"]) for row in listed] == [("h200-1", token[:12], None)]
    assert token not in str(listed) and token not in str(list(AuditEntry.objects.values("before", "after")))
    assert [(e.subject, e.username) for e in AuditEntry.objects.order_by("id")] == [
        ("node", "erin"),
        ("node_token", "erin"),
    ]
    again = engineer.post("/api/v1/node-enrollments/", body, format="json")
    assert again.status_code == 400
    assert "already enrolled" in again.json()["detail"]


def test_rotation_revokes_the_old_token_and_revoking_the_new_one_locks_the_node_out(
    client_as: Callable[..., APIClient], node: Node
) -> None:
    engineer = client_as(Role.ENGINEER)
    old = credential_issue(node=node)  # a token we hold in plaintext
    rotated = engineer.post("/api/v1/node-tokens/", {"node": node.pk}, format="json").json()
    assert rotated["revoked_count"] == 2
    assert credential_authenticate(token=old) is None
    assert credential_authenticate(token=rotated["token"]).node_id == node.pk
    revoked = engineer.delete(f"/api/v1/node-tokens/{rotated['token_id']}/")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    assert credential_authenticate(token=rotated["token"]) is None


def member_client(client: Client, organization: Organization, role: str) -> Client:
    client.force_login(MembershipFactory(organization=organization, role=role).user)
    return client


@pytest.mark.parametrize("role", ROLES)
def test_the_page_lets_engineers_and_admins_enroll_and_others_read(
    client: Client, org_a: Organization, node: Node, role: str
) -> None:
    browser = member_client(client, org_a, role)
    page = browser.get("/fleet/tokens/")
    assert page.status_code == 200
    assert "h100-c" in page.content.decode()
    form = {"action": "enroll", "fleet": node.fleet_id, "site": node.site_id, "hostname": "h100-page"}
    response = browser.post("/fleet/tokens/", form)
    if role in NODE_MANAGERS:
        assert response.status_code == 200
        token = response.context["issued"]["token"]
        assert token in response.content.decode()
        assert NodeCredential.objects.get(node__hostname="h100-page").token_sha256 == token_sha256(token)
        assert token not in browser.get("/fleet/tokens/").content.decode()  # shown once
    else:
        assert response.status_code == 403
        assert 'id="read-only"' in page.content.decode()
        assert not Node.objects.filter(hostname="h100-page").exists()


def test_the_page_revokes_and_answers_404_for_another_organizations_token(
    client: Client, org_a: Organization, org_b: Organization, node: Node, other: Node
) -> None:
    theirs = credential_issue(node=other)
    browser = member_client(client, org_a, Role.ENGINEER)
    assert browser.post("/fleet/tokens/", {"action": "revoke", "token": NodeCredential.objects.get(
        token_sha256=token_sha256(theirs)).pk}).status_code == 404  # fmt: skip
    assert browser.post("/fleet/tokens/", {"action": "rotate", "node": other.pk}).status_code == 404
    assert credential_authenticate(token=theirs) is not None
    ours = NodeCredential.objects.get(node=node)
    response = browser.post("/fleet/tokens/", {"action": "revoke", "token": ours.pk})
    assert response.status_code == 200 and 'id="token-revoked"' in response.content.decode()
    ours.refresh_from_db()
    assert ours.revoked_at is not None
