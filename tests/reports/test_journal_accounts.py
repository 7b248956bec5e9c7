"""An organization's own account map in the journal: ``/api/v1/journal-accounts/`` and the journal using it.

November of tests/reports/conftest.py: Org A's h100-a rents 2 x 5.00 (10.00), its costs foot to 14.01;
Org B's h100 node has the same usage and rent, and no map of its own.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounting.models import JournalAccount
from fleets.models import Role
from governance.models import AuditEntry
from tests.helpers.factories import MembershipFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/journal-accounts/"
RENT_5410 = {
    "charge_kind": "rent", "debit_account_code": "5410", "debit_account_name": "Cloud GPU rent",
    "credit_account_code": "2440", "credit_account_name": "Supplier payables",
}  # fmt: skip
# The journal's expense (debit-side) accounts: the default map's 6xxx and Org A's own rent account.
EXPENSES = {"5410", "6100", "6200", "6300", "6400", "6990"}


def _journal(client: APIClient, **query: str) -> list[dict[str, str]]:
    response = client.get("/api/v1/reports/journal/", query)
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


@pytest.fixture
def finance_a(client_as: Callable[..., APIClient]) -> APIClient:
    return client_as(Role.FINANCE, username="fiona")


def test_an_organization_s_rent_account_is_used_and_the_journal_still_foots(
    finance_a: APIClient, fleets: Any, org_a: Any, org_b: Any
) -> None:
    # given: Org A maps rent to 5410; a member of both organizations reads the journal
    created = finance_a.post(URL, RENT_5410 | {"organization": org_a.slug}, format="json")
    assert created.status_code == 201, created.content
    reader = MembershipFactory(organization=org_a, role=Role.VIEWER).user
    MembershipFactory(organization=org_b, role=Role.VIEWER, user=reader)
    client = APIClient()
    client.force_authenticate(reader)
    # when
    rows = _journal(client, period="2026-11")
    # then: Org A's rent is debited to 5410 and credited to 2440, named as its own map
    rent = {(row["entity_id"], row["account"]): row for row in rows if row["charge_kind"] == "rent"}
    a, b = str(org_a.pk), str(org_b.pk)
    assert (rent[(a, "5410")]["debit"], rent[(a, "5410")]["account_name"]) == ("10.00", "Cloud GPU rent")
    assert rent[(a, "2440")]["credit"] == "10.00"
    assert {row["account_map"] for key, row in rent.items() if key[0] == a} == {"organization"}
    # Org B keeps the default map
    assert (rent[(b, "6100")]["debit"], rent[(b, "2000")]["credit"]) == ("10.00", "10.00")
    assert {row["account_map"] for key, row in rent.items() if key[0] == b} == {"default"}
    # Org A's expense debits still foot to its usage report's cost, 14.01; debits equal credits
    expense_a = sum(Decimal(r["amount"]) for r in rows if r["entity_id"] == a and r["account"] in EXPENSES)
    assert expense_a == Decimal("14.01")
    assert sum(Decimal(r["debit"]) for r in rows) == sum(Decimal(r["credit"]) for r in rows)


def test_the_map_is_audited_scoped_and_refused_to_other_roles(
    finance_a: APIClient, client_as: Callable[..., APIClient], org_b: Any
) -> None:
    row = finance_a.post(URL, RENT_5410, format="json").json()
    changed = finance_a.patch(f"{URL}{row['id']}/", {"debit_account_code": "5411"}, format="json")
    viewer = client_as(Role.VIEWER)
    outsider = client_as(Role.FINANCE, organization=org_b)

    assert changed.status_code == 200 and changed.json()["debit_account_code"] == "5411"
    assert AuditEntry.objects.filter(subject="journal_account", object_id=row["id"]).count() == 2
    assert viewer.post(URL, RENT_5410 | {"charge_kind": "opex"}, format="json").status_code == 403
    assert viewer.get(URL).json()[0]["debit_account_code"] == "5411"
    assert outsider.get(f"{URL}{row['id']}/").status_code == 404
    assert outsider.get(URL).json() == []
    assert finance_a.delete(f"{URL}{row['id']}/").status_code == 204
    assert AuditEntry.objects.filter(subject="journal_account", action="delete").count() == 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"debit_account_code": ""}, "debit_account_code"),
        ({"credit_account_code": "   "}, "credit_account_code"),
        ({"debit_account_code": "5" * 21}, "debit_account_code"),
        ({"charge_kind": "purchase"}, "charge_kind"),
    ],
)
def test_bad_account_codes_are_refused_naming_the_field(finance_a: APIClient, changes: dict, field: str) -> None:
    response = finance_a.post(URL, RENT_5410 | changes, format="json")

    assert response.status_code == 400
    assert field in response.json()
    assert not JournalAccount.objects.exists()


def test_a_second_row_for_a_mapped_kind_is_refused(finance_a: APIClient) -> None:
    assert finance_a.post(URL, RENT_5410, format="json").status_code == 201

    response = finance_a.post(URL, RENT_5410 | {"debit_account_code": "5499"}, format="json")

    assert response.status_code == 400
    assert "charge_kind" in response.json()["detail"]
