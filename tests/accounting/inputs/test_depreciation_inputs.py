"""Depreciation inputs through the API: an owned price's book fields, its book value, a prospective life change."""

from __future__ import annotations

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounting.models import LedgerPending
from fleets.models import Node, Organization
from governance.models import AuditEntry, LockedPeriod
from tests.helpers.inputs import JAN_1, JAN_2, JAN_3, rent_body

pytestmark = pytest.mark.django_db
URL = "/api/v1/node-prices/"


def owned_body(node: Node, **changes: object) -> dict:
    # 12,000 less 1,200 salvage over a year from 1 January 2026, by month: 900 a month
    return rent_body(
        node, kind="owned", rate_per_h=None, capex="12000", lifetime_years="1", salvage_value="1200",
        in_service_at=JAN_1.isoformat(), valid_from=JAN_1.isoformat(),
    ) | changes  # fmt: skip


def test_an_owned_price_keeps_its_book_fields_and_reports_its_book_value(finance: APIClient, node_a: Node) -> None:
    created = finance.post(URL, owned_body(node_a), format="json")

    assert created.status_code == 201, created.content
    price = created.json()
    assert (price["salvage_value"], price["depreciation_method"], price["life_changes"]) == ("1200.000000", "month", [])
    book = finance.get(f"{URL}{price['id']}/book-value/", {"at": "2026-04-01T00:00:00Z"}).json()
    # three months at 900: 2,700 charged, 9,300 left on the books
    assert (book["accumulated_depreciation"], book["book_value"]) == ("2700.000000", "9300.000000")
    assert (book["end_of_life_at"], book["disposed_at"], book["currency"]) == ("2027-01-01T00:00:00Z", None, "EUR")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"salvage_value": "20000"}, "salvage_value"),
        ({"salvage_value": "-1"}, "salvage_value"),
        ({"lifetime_years": "-4"}, "lifetime_years"),
        ({"depreciation_method": "weekly"}, "depreciation_method"),
    ],
)
def test_bad_book_values_are_refused_naming_the_field(
    finance: APIClient, node_a: Node, changes: dict, field: str
) -> None:
    response = finance.post(URL, owned_body(node_a, **changes), format="json")

    assert response.status_code == 400
    assert field in response.json()


def test_a_salvage_above_the_stored_capex_is_refused_on_change(finance: APIClient, node_a: Node) -> None:
    price = finance.post(URL, owned_body(node_a), format="json").json()

    response = finance.patch(f"{URL}{price['id']}/", {"salvage_value": "15000"}, format="json")

    assert response.status_code == 400
    assert "salvage_value" in response.json()["detail"]


def test_a_life_change_reopens_only_the_hours_from_its_date_and_is_audited(finance: APIClient, node_a: Node) -> None:
    price = finance.post(URL, owned_body(node_a), format="json").json()
    LedgerPending.objects.all().delete()
    audited = AuditEntry.objects.count()

    response = finance.post(
        f"{URL}{price['id']}/life-changes/", {"effective_from": JAN_2.isoformat(), "lifetime_years": "2"}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["ledger_hours_reopened"] == 24  # Jan 2 of the 48 stored hours
    assert response.json()["life_changes"] == [{"from": "2026-01-02T00:00:00+00:00", "lifetime_years": "2.00"}]
    assert AuditEntry.objects.count() == audited + 1
    book = finance.get(f"{URL}{price['id']}/book-value/", {"at": JAN_3.isoformat()}).json()
    assert book["end_of_life_at"] == "2028-01-01T00:00:00Z"


def test_a_life_change_dated_in_a_locked_period_is_refused(
    finance: APIClient, node_a: Node, org_a: Organization
) -> None:
    price = finance.post(URL, owned_body(node_a), format="json").json()
    LockedPeriod.objects.create(organization=org_a, start=JAN_1, end=JAN_2, reason="Jan 1 closed", locked_at=JAN_3)
    body = {"effective_from": "2026-01-01T12:00:00Z", "lifetime_years": "2"}

    refused = finance.post(f"{URL}{price['id']}/life-changes/", body, format="json")
    allowed = finance.post(
        f"{URL}{price['id']}/life-changes/", body | {"effective_from": JAN_2.isoformat()}, format="json"
    )

    assert refused.status_code == 409
    assert allowed.status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"effective_from": "2026-01-02T00:00:00Z", "lifetime_years": "-1"}, "lifetime_years"),
        ({"effective_from": "2026-06-01T00:00:00Z", "lifetime_years": "0.2"}, "life_changes"),  # ends before it
    ],
)
def test_a_bad_life_change_is_refused_naming_the_field(
    finance: APIClient, node_a: Node, body: dict, field: str
) -> None:
    price = finance.post(URL, owned_body(node_a), format="json").json()

    response = finance.post(f"{URL}{price['id']}/life-changes/", body, format="json")

    assert response.status_code == 400
    assert field in str(response.json())


def test_a_rented_price_has_no_book_value(finance: APIClient, node_a: Node) -> None:
    price = finance.post(URL, rent_body(node_a), format="json").json()

    response = finance.get(f"{URL}{price['id']}/book-value/")

    assert response.status_code == 400
    assert Decimal(price["rate_per_h"]) == Decimal("2.5")
