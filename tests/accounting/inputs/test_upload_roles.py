"""The CSV uploads of prices and instruments for every role, and for another organization's user (404)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounting.models import NodePrice
from fleets.models import Node, Role, Site
from governance.models import AuditEntry
from scope2.models import ContractualInstrument
from tests.helpers.inputs import ROLES
from tests.helpers.uploads import upload_answer

pytestmark = pytest.mark.django_db

PRICES = (
    "/api/v1/node-prices/upload/",
    "fleet,node,kind,rate_per_h,rate_per,capex,lifetime_years,valid_from,valid_to\n"
    "inference,h100-a,rented,2.50,gpu,,,2026-01-02T00:00:00Z,\n",
    {Role.ADMIN, Role.FINANCE},
)
INSTRUMENTS = (
    "/api/v1/instruments/upload/",
    "site,kind,name,volume_mwh,delivery_start,delivery_end,vintage_year,generation_zone,technology\n"
    "fra-1,go,Hydro Q1,60,2025-01-01T00:00:00Z,2025-04-01T00:00:00Z,2025,NO,hydro\n",
    {Role.ADMIN, Role.SUSTAINABILITY},
)


def stored() -> tuple[int, int, int]:
    return NodePrice.objects.count(), ContractualInstrument.objects.count(), AuditEntry.objects.count()


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("url", "text", "allowed"), [PRICES, INSTRUMENTS], ids=["prices", "instruments"])
def test_each_upload_answers_by_role(
    client_as: Callable[..., APIClient], node_a: Node, site_a: Site, role: str, url: str, text: str, allowed: set[str]
) -> None:
    response = upload_answer(client_as(role), url, {"file": SimpleUploadedFile("u.csv", text.encode())})
    if role in allowed:
        assert (response.status_code, response.json()["saved"]) == (201, 1), response.content
        assert sum(stored()) == 2  # the row and its audit entry
    else:
        assert response.status_code == 403, response.content
        assert stored() == (0, 0, 0)


@pytest.mark.parametrize(("url", "text", "allowed"), [PRICES, INSTRUMENTS], ids=["prices", "instruments"])
def test_another_organizations_admin_gets_404_and_nothing_is_stored(
    client_as: Callable[..., APIClient], node_a: Node, site_a: Site, org_b: Any, url: str, text: str, allowed: Any
) -> None:
    outsider = client_as(Role.ADMIN, org_b)
    response = outsider.post(url, {"file": SimpleUploadedFile("u.csv", text.encode()), "organization": "org-a"})
    assert response.status_code == 404, response.content
    assert stored() == (0, 0, 0)
