"""The node-price CSV carries depreciation by the book and the price's currency, checked as the API checks them."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounting.models import NodePrice
from fleets.models import Node
from tests.helpers.uploads import upload_answer

pytestmark = pytest.mark.django_db

HEADER = (
    "fleet,node,kind,capex,lifetime_years,in_service_at,salvage_value,depreciation_method,currency,life_changes,"
    "valid_from\n"
)
# 12,000 less 1,200 salvage over a year by hour from 1 January 2026, in USD at the EUR site; the life becomes
# two years from 1 July (the cell's JSON quoted, its quotes doubled).
GOOD = (
    'inference,h100-a,owned,12000,1,2026-01-01T00:00:00Z,1200,hour,USD,"[{""from"": ""2026-07-01T00:00:00Z"", '
    '""lifetime_years"": ""2""}]",2026-01-01T00:00:00Z\n'
)


def upload(client: APIClient, text: str) -> Any:
    return upload_answer(client, "/api/v1/node-prices/upload/", {"file": SimpleUploadedFile("p.csv", text.encode())})


def test_an_owned_price_s_book_fields_and_currency_come_from_the_file(finance: APIClient, node_a: Node) -> None:
    response = upload(finance, HEADER + GOOD)

    assert response.status_code == 201, response.content
    price = NodePrice.objects.get()
    assert (price.capex, price.salvage_value, price.depreciation_method, price.currency) == (
        Decimal(12000),
        Decimal(1200),
        "hour",
        "USD",
    )
    assert price.in_service_at.isoformat() == "2026-01-01T00:00:00+00:00"
    assert price.life_changes == [{"from": "2026-07-01T00:00:00+00:00", "lifetime_years": "2"}]
    book = finance.get(f"/api/v1/node-prices/{price.pk}/book-value/", {"at": "2026-01-02T00:00:00Z"}).json()
    # by hour: 10,800 over 8,760 h, 24 h charged; a life of 2 years from 1 July ends 1 January 2028
    assert Decimal(book["accumulated_depreciation"]) == (Decimal(10800) * 24 / 8760).quantize(Decimal("1e-6"))
    assert (book["currency"], book["end_of_life_at"]) == ("USD", "2028-01-01T00:00:00Z")


@pytest.mark.parametrize(
    ("column", "value", "field"),
    [
        ("salvage_value", "20000", "salvage_value"),
        ("lifetime_years", "-4", "lifetime_years"),
        ("currency", "XYZ", "currency"),
        ("depreciation_method", "weekly", "depreciation_method"),
        ("in_service_at", "not a date", "in_service_at"),
        ("life_changes", "next year", "life_changes"),
    ],
)
def test_a_bad_book_value_refuses_the_row_naming_the_field(
    finance: APIClient, node_a: Node, column: str, value: str, field: str
) -> None:
    columns = HEADER.strip().split(",")
    cells = {
        "fleet": "inference", "node": "h100-a", "kind": "owned", "capex": "12000", "lifetime_years": "1",
        "in_service_at": "2026-01-01T00:00:00Z", "salvage_value": "0", "depreciation_method": "month",
        "currency": "", "life_changes": "", "valid_from": "2026-01-01T00:00:00Z",
    } | {column: value}  # fmt: skip
    text = HEADER + ",".join(cells[name] for name in columns) + "\n"

    response = upload(finance, text)

    assert response.status_code == 400
    (refused,) = response.json()["refused"]
    assert refused["reason"].startswith(f"{field}:"), refused
    assert not NodePrice.objects.exists()
