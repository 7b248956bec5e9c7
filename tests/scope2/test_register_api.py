"""The instrument register's REST doors: who may write, who may read, what is refused."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from fleets.models import Role, Site
from scope2.models import ContractualInstrument
from tests.helpers.factories import OrganizationFactory, SiteFactory

pytestmark = pytest.mark.django_db


def go_body(site: Site, **changes: Any) -> dict[str, Any]:
    body = {
        "site": site.pk, "kind": "go", "name": "Hydro GOs Q1", "volume_mwh": "25",
        "delivery_start": "2025-01-01T00:00:00Z", "delivery_end": "2025-04-01T00:00:00Z", "vintage_year": 2025,
        "generation_zone": "NO", "technology": "hydro", "evidence_reference": "NECS cancellation 2025-88812",
    }  # fmt: skip
    return body | changes


@pytest.fixture
def registered(sustainability_a: APIClient, site_a: Site) -> dict[str, Any]:
    response = sustainability_a.post("/api/v1/instruments/", go_body(site_a), format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.parametrize("role", [Role.ADMIN, Role.SUSTAINABILITY])
def test_admin_and_sustainability_create_and_update(
    client_as: Callable[..., APIClient], site_a: Site, role: str
) -> None:
    client = client_as(role)
    created = client.post("/api/v1/instruments/", go_body(site_a), format="json")
    assert created.status_code == 201
    shown = created.json()
    assert (shown["volume_mwh"], shown["emission_factor_gco2e_per_kwh"], shown["hourly_profile_hours"]) == (25, None, 0)
    changed = client.patch(f"/api/v1/instruments/{shown['id']}/", {"volume_mwh": "30"}, format="json")
    assert (changed.status_code, changed.json()["volume_mwh"]) == (200, 30)


@pytest.mark.parametrize("role", [Role.FINANCE, Role.ENGINEER, Role.VIEWER])
def test_other_roles_read_but_may_not_write(
    client_as: Callable[..., APIClient], site_a: Site, registered: dict[str, Any], role: str
) -> None:
    client = client_as(role)
    assert [row["id"] for row in client.get("/api/v1/instruments/").json()] == [registered["id"]]
    assert client.get(f"/api/v1/instruments/{registered['id']}/").status_code == 200
    assert client.post("/api/v1/instruments/", go_body(site_a), format="json").status_code == 403
    url = f"/api/v1/instruments/{registered['id']}/"
    assert client.patch(url, {"volume_mwh": "1"}, format="json").status_code == 403
    assert ContractualInstrument.objects.get().volume_mwh == 25


def test_another_organizations_user_gets_404(
    client_as: Callable[..., APIClient], site_a: Site, registered: dict[str, Any]
) -> None:
    outsider = client_as(Role.ADMIN, OrganizationFactory(name="Org B", slug="org-b"))
    url = f"/api/v1/instruments/{registered['id']}/"
    assert outsider.get("/api/v1/instruments/").json() == []
    assert outsider.get(url).status_code == 404
    assert outsider.patch(url, {"volume_mwh": "1"}, format="json").status_code == 404
    assert outsider.get(f"{url}evidence/").status_code == 404
    body = go_body(site_a, organization="org-a")
    assert outsider.post("/api/v1/instruments/", body, format="json").status_code == 404
    assert outsider.get("/api/v1/reports/scope2/", {"period": "2025", "organization": "org-a"}).status_code == 404


def test_a_site_of_another_organization_is_refused(sustainability_a: APIClient) -> None:
    elsewhere = SiteFactory(organization=OrganizationFactory(name="Org B", slug="org-b"))
    response = sustainability_a.post("/api/v1/instruments/", go_body(elsewhere), format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == f"site {elsewhere.pk} is not a site of this organization"


def test_a_fossil_instrument_without_its_factor_is_refused(sustainability_a: APIClient, site_a: Site) -> None:
    body = go_body(site_a, kind="supplier_rate", technology="mixed")
    response = sustainability_a.post("/api/v1/instruments/", body, format="json")
    assert (response.status_code, response.json()["detail"]) == (
        400, "state emission_factor_gco2e_per_kwh: mixed is not zero-emission",
    )  # fmt: skip


def test_shares_of_one_site_above_100_percent_are_refused_on_update_too(
    sustainability_a: APIClient, site_a: Site
) -> None:
    tariff = go_body(
        site_a, kind="supplier_rate", name="Green tariff", volume_mwh=None, share_of_consumption="0.6",
        technology="mixed", emission_factor_gco2e_per_kwh="120",
    )  # fmt: skip
    first = sustainability_a.post("/api/v1/instruments/", tariff, format="json").json()
    later = tariff | {"name": "Top-up", "share_of_consumption": "0.3", "delivery_start": "2025-03-01T00:00:00Z"}
    second = sustainability_a.post("/api/v1/instruments/", later, format="json").json()
    response = sustainability_a.patch(
        f"/api/v1/instruments/{second['id']}/", {"share_of_consumption": "0.5"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["detail"] == (
        "over-allocated: on 2025-03-01 00:00 UTC site 'fra-1' is already covered by 'Green tariff' 60 %; "
        "50 % more for 'Top-up' would cover 110 %"
    )
    assert ContractualInstrument.objects.get(pk=second["id"]).share_of_consumption == Decimal("0.3")
    assert first["share_of_consumption"] == 0.6


def test_evidence_file_is_attached_hashed_and_served_back(
    sustainability_a: APIClient, client_as: Callable[..., APIClient], registered: dict[str, Any]
) -> None:
    url = f"/api/v1/instruments/{registered['id']}/evidence/"
    upload = SimpleUploadedFile("cancellation.pdf", b"%PDF-1.4 statement", content_type="application/pdf")
    response = sustainability_a.put(url, {"file": upload}, format="multipart")
    assert response.status_code == 200
    assert response.json()["evidence_file_name"] == "cancellation.pdf"
    assert response.json()["evidence_file_sha256"] == hashlib.sha256(b"%PDF-1.4 statement").hexdigest()
    served = client_as(Role.VIEWER).get(url)
    assert (served.status_code, served.content) == (200, b"%PDF-1.4 statement")


def test_openapi_documents_the_register_and_the_scope2_reports(client_as: Callable[..., APIClient]) -> None:
    schema = client_as(Role.VIEWER).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    assert set(paths["/api/v1/instruments/"]) >= {"get", "post"}
    assert set(paths["/api/v1/instruments/{instrument_id}/"]) >= {"get", "patch"}
    assert (
        "multipart/form-data" in paths["/api/v1/instruments/{instrument_id}/evidence/"]["put"]["requestBody"]["content"]
    )
    assert set(paths["/api/v1/reports/scope2/"]["get"]["responses"]["200"]["content"]) == {
        "application/json",
        "text/csv",
    }
    assert "/api/v1/reports/scope2/ghg-table/" in paths and "/api/v1/reports/scope2/esrs/" in paths
    assert {"personalToken": []} in paths["/api/v1/instruments/"]["post"]["security"]


@pytest.mark.parametrize(
    ("name", "disposition"),
    [
        ('a"b.pdf', 'attachment; filename="a\\"b.pdf"'),
        ('x.pdf"; filename=evil.html', 'attachment; filename="evil.html\\""'),
        ("zürich €.pdf", "attachment; filename*=utf-8''z%C3%BCrich%20%E2%82%AC.pdf"),
    ],
)
def test_an_evidence_files_name_cannot_bend_the_download_header(
    sustainability_a: APIClient,
    client_as: Callable[..., APIClient],
    registered: dict[str, Any],
    name: str,
    disposition: str,
) -> None:
    url = f"/api/v1/instruments/{registered['id']}/evidence/"
    upload = SimpleUploadedFile(name, b"%PDF-1.4 statement", content_type="application/pdf")
    assert sustainability_a.put(url, {"file": upload}, format="multipart").status_code == 200
    served = client_as(Role.VIEWER).get(url)
    assert (served.status_code, served["Content-Type"]) == (200, "application/octet-stream")
    assert served["Content-Disposition"] == disposition
    assert served["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("role", [Role.FINANCE, Role.ENGINEER, Role.VIEWER])
def test_only_admin_and_sustainability_attach_evidence_and_another_organization_gets_404(
    client_as: Callable[..., APIClient], registered: dict[str, Any], role: str
) -> None:
    url = f"/api/v1/instruments/{registered['id']}/evidence/"

    def upload() -> SimpleUploadedFile:
        return SimpleUploadedFile("x.pdf", b"%PDF-1.4 forged", content_type="application/pdf")

    assert client_as(role).put(url, {"file": upload()}, format="multipart").status_code == 403
    outsider = client_as(Role.ADMIN, OrganizationFactory(name="Org B", slug="org-b"))
    assert outsider.put(url, {"file": upload()}, format="multipart").status_code == 404
    assert ContractualInstrument.objects.get().evidence_file_name == ""
