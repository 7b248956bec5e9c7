"""Nodes and node tokens changed in the Django admin: audited like the API and the tokens page; a node's move,
new dates or deletion refused where they alter a stored line of a locked period.

Node h100-a (fleet "inference", site fra-1, commissioned 2025-12-01) belongs to Org A, with 48 stored lines
(Jan 1-2, 2026); org-b's node is apart.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from accounting.models import LedgerPending, NodeHourLedger
from fleets.models import Fleet, Node, NodeCredential, Organization, Site
from fleets.services import node_token_rotate
from governance.models import AuditEntry, LockedPeriod
from tests.helpers.factories import NodeFactory, SiteFactory
from tests.helpers.inputs import JAN_1, JAN_2, JAN_3

pytestmark = pytest.mark.django_db


def node_form(node: Node, **changed: str) -> dict[str, str]:
    form = {
        "fleet": str(node.fleet_id), "site": str(node.site_id), "hostname": node.hostname, "tenure": node.tenure,
        "commissioned_at_0": "2025-12-01", "commissioned_at_1": "00:00:00", "decommissioned_at_0": "",
        "decommissioned_at_1": "",
    }  # fmt: skip
    return form | changed


def test_a_node_changed_in_the_admin_is_audited_with_before_and_after(
    staff: Client, node_a: Node, org_a: Organization
) -> None:
    url = reverse("admin:fleets_node_change", args=[node_a.pk])
    response = staff.post(url, node_form(node_a, hostname="h100-renamed", decommissioned_at_0="2026-02-01",
                                         decommissioned_at_1="00:00:00"))  # fmt: skip
    assert response.status_code == 302, response.content
    entry = AuditEntry.objects.get()
    assert (entry.organization_id, entry.username, entry.action, entry.subject, entry.object_id) == (
        org_a.pk, "ada", "update", "node", node_a.pk,
    )  # fmt: skip
    assert (entry.before["hostname"], entry.after["hostname"]) == ("h100-a", "h100-renamed")
    assert (entry.before["decommissioned_at"], entry.after["decommissioned_at"]) == (None, "2026-02-01T00:00:00Z")


def test_a_node_form_saved_unchanged_leaves_no_entry(staff: Client, node_a: Node) -> None:
    response = staff.post(reverse("admin:fleets_node_change", args=[node_a.pk]), node_form(node_a))
    assert response.status_code == 302, response.content
    assert not AuditEntry.objects.exists()


def test_a_node_token_revoked_in_the_admin_is_audited_by_prefix_never_its_hash(staff: Client, node_a: Node) -> None:
    credential = node_token_rotate(node=node_a).credential
    url = reverse("admin:fleets_nodecredential_change", args=[credential.pk])
    response = staff.post(url, {"revoked_at_0": "2026-01-05", "revoked_at_1": "12:00:00"})
    assert response.status_code == 302, response.content
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.subject, entry.object_id) == ("ada", "update", "node_token",
                                                                              credential.pk)  # fmt: skip
    assert entry.before == {"id": credential.pk, "node": node_a.pk, "revoked_at": None, "prefix": credential.prefix}
    assert entry.after["revoked_at"] == "2026-01-05T12:00:00Z"
    assert credential.token_sha256 not in str(entry.before) + str(entry.after)


def test_a_node_token_deleted_in_the_admin_is_audited(staff: Client, node_a: Node) -> None:
    credential = node_token_rotate(node=node_a).credential
    response = staff.post(reverse("admin:fleets_nodecredential_delete", args=[credential.pk]), {"post": "yes"})
    assert response.status_code == 302, response.content
    assert not NodeCredential.objects.exists()
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.subject, entry.object_id, entry.before["prefix"], entry.after) == (
        "delete", "node_token", credential.pk, credential.prefix, None,
    )  # fmt: skip


def test_tokens_revoked_from_the_changelist_are_audited_one_by_one(staff: Client, node_a: Node) -> None:
    first = node_token_rotate(node=node_a, revoke_others=False).credential
    second = node_token_rotate(node=node_a, revoke_others=False).credential
    response = staff.post(
        reverse("admin:fleets_nodecredential_changelist"),
        {"action": "delete_selected", "_selected_action": [first.pk, second.pk], "post": "yes"},
    )
    assert response.status_code == 302, response.content
    assert sorted(AuditEntry.objects.values_list("object_id", "action")) == sorted(
        [(first.pk, "delete"), (second.pk, "delete")]
    )


def test_a_node_deleted_in_the_admin_is_audited_with_its_tokens(
    staff: Client, fleet_a: Fleet, site_a: Site, org_a: Organization
) -> None:
    node = NodeFactory(fleet=fleet_a, site=site_a, hostname="spare-1")
    credential = node_token_rotate(node=node).credential
    response = staff.post(reverse("admin:fleets_node_delete", args=[node.pk]), {"post": "yes"})
    assert response.status_code == 302, response.content
    assert not Node.objects.filter(pk=node.pk).exists()
    entries = AuditEntry.objects.order_by("id").values_list("action", "subject", "object_id")
    assert list(entries) == [("delete", "node_token", credential.pk), ("delete", "node", node.pk)]
    assert AuditEntry.objects.get(subject="node").before["hostname"] == "spare-1"


@pytest.fixture
def january_1_locked(org_a: Organization) -> LockedPeriod:
    return LockedPeriod.objects.create(organization=org_a, start=JAN_1, end=JAN_2, reason="Jan 1 closed",
                                       locked_at=JAN_3)  # fmt: skip


def shown(response: Any) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_a_node_moved_to_another_site_in_the_admin_is_refused_while_its_lines_are_locked(
    staff: Client, node_a: Node, org_a: Organization, january_1_locked: LockedPeriod
) -> None:
    # given: h100-a's lines of Jan 1 are locked, and a dirtier site of the same organization
    dirty = SiteFactory(organization=org_a, name="waw-1", grid_zone="PL")
    url = reverse("admin:fleets_node_change", args=[node_a.pk])

    # when: the admin moves the node there
    response = staff.post(url, node_form(node_a, site=str(dirty.pk)))

    # then: refused, shown, nothing changed, no entry, no line re-opened
    assert (response.status_code, response["Location"]) == (302, url)
    assert any("is locked (Jan 1 closed)" in message for message in shown(response))
    assert Node.objects.get(pk=node_a.pk).site_id == node_a.site_id
    assert not AuditEntry.objects.exists()
    assert not LedgerPending.objects.exists()


def test_a_node_moved_with_no_locked_line_is_audited_and_reopens_every_line(
    staff: Client, node_a: Node, org_a: Organization
) -> None:
    dirty = SiteFactory(organization=org_a, name="waw-1", grid_zone="PL")
    response = staff.post(reverse("admin:fleets_node_change", args=[node_a.pk]), node_form(node_a, site=str(dirty.pk)))
    assert "48 ledger hours re-opened for recomputation" in shown(response)
    entry = AuditEntry.objects.get()
    assert (entry.subject, entry.before["site"], entry.after["site"], entry.ledger_hours_reopened) == (
        "node", node_a.site_id, dirty.pk, 48,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("changed", "refused"),
    [
        ({"tenure": "owned"}, True),
        ({"commissioned_at_0": "2026-01-02", "commissioned_at_1": "06:00:00"}, True),  # Jan 1 out of service
        ({"decommissioned_at_0": "2026-01-01", "decommissioned_at_1": "12:30:00"}, True),
        ({"decommissioned_at_0": "2026-01-02", "decommissioned_at_1": "12:00:00"}, False),  # after the lock
        ({"hostname": "h100-renamed"}, False),  # no line's input
    ],
)
def test_a_node_change_in_the_admin_is_refused_where_it_alters_a_locked_line(
    staff: Client, node_a: Node, january_1_locked: LockedPeriod, changed: dict[str, str], refused: bool
) -> None:
    response = staff.post(reverse("admin:fleets_node_change", args=[node_a.pk]), node_form(node_a, **changed))
    assert any("is locked" in message for message in shown(response)) is refused
    assert AuditEntry.objects.exists() is not refused


def test_a_node_with_locked_lines_is_not_deleted_in_the_admin(
    staff: Client, node_a: Node, january_1_locked: LockedPeriod
) -> None:
    response = staff.post(reverse("admin:fleets_node_delete", args=[node_a.pk]), {"post": "yes"})
    assert any("is locked" in message for message in shown(response))
    assert Node.objects.filter(pk=node_a.pk).exists()
    assert NodeHourLedger.objects.filter(node=node_a).count() == 48
    assert not AuditEntry.objects.exists()
