"""The audit trail: who, when, what before and after; read by admins, exported as CSV without formulas."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

import pytest
from django.test import Client
from rest_framework.test import APIClient

from fleets.models import Node, Role, Site
from governance.models import AuditEntry
from tests.helpers.factories import MembershipFactory
from tests.helpers.inputs import rent_body

pytestmark = pytest.mark.django_db


def test_a_price_change_is_kept_with_its_values_before_and_after(
    finance: APIClient, admin_a: APIClient, node_a: Node
) -> None:
    price = finance.post("/api/v1/node-prices/", rent_body(node_a), format="json").json()
    finance.patch(f"/api/v1/node-prices/{price['id']}/", {"rate_per_h": "3.00"}, format="json")

    entries = admin_a.get("/api/v1/audit/").json()

    assert [(e["action"], e["subject"], e["username"], e["ledger_hours_reopened"]) for e in entries] == [
        ("update", "node_price", "fiona", 24),
        ("create", "node_price", "fiona", 24),
    ]
    assert (entries[0]["before"]["rate_per_h"], entries[0]["after"]["rate_per_h"]) == ("2.500000", "3.000000")
    assert entries[1]["before"] is None and entries[1]["object_id"] == price["id"]


def test_instrument_changes_are_audited(client_as: Callable[..., APIClient], admin_a: APIClient, site_a: Site) -> None:
    body = {
        "site": site_a.pk, "kind": "go", "name": "Hydro GOs", "volume_mwh": "25",
        "delivery_start": "2025-01-01T00:00:00Z", "delivery_end": "2025-04-01T00:00:00Z", "vintage_year": 2025,
        "generation_zone": "NO", "technology": "hydro",
    }  # fmt: skip
    client = client_as(Role.SUSTAINABILITY, username="sam")
    created = client.post("/api/v1/instruments/", body, format="json").json()
    client.patch(f"/api/v1/instruments/{created['id']}/", {"volume_mwh": "30"}, format="json")

    update = admin_a.get("/api/v1/audit/").json()[0]

    assert (update["subject"], update["username"], update["action"]) == ("instrument", "sam", "update")
    assert (update["before"]["volume_mwh"], update["after"]["volume_mwh"]) == ("25.000000", "30.000000")


@pytest.mark.parametrize("role", [Role.FINANCE, Role.SUSTAINABILITY, Role.ENGINEER, Role.VIEWER])
def test_only_admins_read_the_audit_trail(client_as: Callable[..., APIClient], org_a, role: str) -> None:
    assert client_as(role).get("/api/v1/audit/").status_code == 403


def test_the_csv_export_escapes_cells_a_spreadsheet_would_run(
    client_as: Callable[..., APIClient], admin_a: APIClient, node_a: Node
) -> None:
    client_as(Role.FINANCE, username="=HYPERLINK(1)").post("/api/v1/node-prices/", rent_body(node_a), format="json")

    response = admin_a.get("/api/v1/audit/", {"format": "csv"})

    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(row["username"], row["subject"], row["ledger_hours_reopened"]) for row in rows] == [
        ("'=HYPERLINK(1)", "node_price", "24")
    ]
    assert '"rate_per_h": "2.500000"' in rows[0]["after"]


def test_the_admin_lists_only_the_entries_of_organizations_one_administers(
    finance: APIClient, node_a: Node, node_other: Node, org_b
) -> None:
    finance.post("/api/v1/node-prices/", rent_body(node_a), format="json")
    AuditEntry.objects.create(organization=org_b, username="bob", at=node_other.created_at, action="create",
                              subject="node_price", object_id=1)  # fmt: skip
    admin_b = MembershipFactory(organization=org_b, role=Role.ADMIN, user__is_staff=True).user
    browser = Client()
    browser.force_login(admin_b)

    page = browser.get("/admin/governance/auditentry/")

    assert page.status_code == 200
    assert b"bob" in page.content and b"fiona" not in page.content
