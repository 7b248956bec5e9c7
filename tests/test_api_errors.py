"""Refused credentials answer 401 with WWW-Authenticate on every endpoint, in the documented error body."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command
from rest_framework.test import APIClient

from fleets.personal_tokens import personal_token_create, personal_token_revoke
from fleets.services import credential_issue
from tests.helpers.factories import NodeFactory, UserFactory

# Every API operation but ingest (node tokens, answered by the ingest path itself).
OPERATIONS = [
    ("get", "/api/v1/reports/usage/?period=2026-11"),
    ("get", "/api/v1/reports/comparison/?period=2026-11"),
    ("get", "/api/v1/reports/sustainability/?period=2026-11"),
    ("get", "/api/v1/nodes/"),
    ("get", "/api/v1/nodes/1/"),
    ("get", "/api/v1/tokens/"),
    ("post", "/api/v1/tokens/"),
    ("delete", "/api/v1/tokens/1/"),
    ("post", "/api/v1/grid/intensity.csv?organization=x&source_name=y"),
    ("get", "/api/schema/?format=json"),
]


def revoked_token() -> str:
    user = UserFactory(username="leaver")
    row, token = personal_token_create(user=user, name="old")
    personal_token_revoke(user=user, token_id=row.pk)
    return token


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "url"), OPERATIONS)
@pytest.mark.parametrize("credential", ["unknown", "revoked", "none", "malformed"])
def test_refused_credentials_get_401_with_www_authenticate_everywhere(method, url, credential):
    client = APIClient()
    header = {
        "unknown": "Bearer wlp_" + "x" * 40,
        "revoked": f"Bearer {revoked_token()}",
        "none": None,
        "malformed": "Bearer a b",
    }[credential]
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)

    response = getattr(client, method)(url)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="wattledger"'
    assert "json" in response["Content-Type"]
    body = response.json()
    assert set(body) == {"detail"} and isinstance(body["detail"], str)


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "url"), OPERATIONS[:-2])
def test_a_node_token_gets_403_in_the_error_body(method, url):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {credential_issue(node=NodeFactory())}")

    response = getattr(client, method)(url)

    assert response.status_code == 403
    assert "WWW-Authenticate" not in response
    assert set(response.json()) == {"detail"}


def test_the_schema_documents_401_403_and_the_error_bodies(tmp_path, db):
    call_command("spectacular", "--file", str(tmp_path / "schema.yaml"))
    schema = yaml.safe_load((tmp_path / "schema.yaml").read_text())

    assert schema["components"]["schemas"]["Error"]["required"] == ["detail"]
    for path, methods in schema["paths"].items():
        if path == "/api/v1/ingest/":
            continue
        for method, operation in methods.items():
            responses = operation["responses"]
            assert {"401", "403"} <= set(responses), (method, path)
            for code, response in responses.items():
                if code == "414":  # the WSGI server's refusal of an over-long URL, before the app: HTML
                    assert list(response["content"]) == ["text/html"], (method, path)
                elif code.startswith("4"):
                    assert "application/json" in response["content"], (method, path, code)
    detail = schema["paths"]["/api/v1/nodes/{node_id}/"]["get"]["responses"]
    assert "404" in detail
    period = {p["name"]: p for p in schema["paths"]["/api/v1/reports/usage/"]["get"]["parameters"]}
    assert "Excludes start and end" in period["period"]["description"]
    assert "excludes period" in period["start"]["description"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/nodes/null,null/", "/api/v1/tokens/x/", "/api/v2/anything"])
def test_an_api_url_that_matches_no_route_answers_json_404(client, path):
    client.force_login(UserFactory(username="lost"))

    response = client.get(path)

    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


@pytest.mark.django_db
def test_a_page_url_that_matches_no_route_answers_the_html_404(client):
    response = client.get("/no-such-page/")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/v1/audit/?format=csv", "/api/v1/reports/usage/?format=csv&period=x"])
def test_errors_are_json_whatever_format_was_asked_for(url):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {credential_issue(node=NodeFactory())}")

    response = client.get(url)

    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"
    assert set(response.json()) == {"detail"}


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/docs/", "/api/schema/"])
@pytest.mark.parametrize("method", ["options", "post", "put", "patch", "delete", "trace"])
def test_the_api_docs_answer_every_method_without_a_server_error(client, url, method):
    client.force_login(UserFactory(username="reader"))

    response = getattr(client, method)(url)

    assert response.status_code < 500, response.content[:200]


@pytest.mark.django_db
def test_the_swagger_page_is_a_page_only(client):
    client.force_login(UserFactory(username="reader"))

    assert client.get("/api/docs/").status_code == 200
    assert client.head("/api/docs/").status_code == 200
    assert client.options("/api/docs/").status_code == 405
