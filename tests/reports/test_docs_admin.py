"""The interactive API docs (served without a CDN), the schema, and personal tokens in the admin."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from rest_framework.test import APIClient

from fleets.personal_tokens import personal_token_create
from tests.helpers.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_docs_page_loads_only_our_own_static_assets(client_a):
    response = client_a.get("/api/docs/")

    html = response.content.decode()
    assert response.status_code == 200
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert len(assets) >= 3  # CSS, the bundle, the preset (and the icon)
    for asset in assets:
        assert asset.startswith("/static/drf_spectacular_sidecar/"), asset
        assert finders.find(asset.removeprefix("/static/")), f"{asset} is not among the static files"
    # no CDN named anywhere (a word, not any run of letters: the page's CSRF token is random text)
    assert not re.search(r"\bcdn\b|jsdelivr|unpkg|cdnjs", html, re.IGNORECASE)
    assert not re.search(r"https?://", html.replace("http://testserver", ""))


def test_docs_and_schema_need_a_signed_in_user(db):
    assert APIClient().get("/api/docs/").status_code in {401, 403}
    assert APIClient().get("/api/schema/").status_code in {401, 403}


def test_schema_describes_the_reports_and_the_personal_token(client_a):
    schema = client_a.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    for path in ("/api/v1/reports/usage/", "/api/v1/reports/comparison/", "/api/v1/reports/sustainability/"):
        assert set(schema["paths"][path]["get"]["responses"]["200"]["content"]) == {"application/json", "text/csv"}
    assert "/api/v1/tokens/{token_id}/" in schema["paths"]
    assert schema["components"]["securitySchemes"]["personalToken"]["scheme"] == "bearer"


def test_staff_see_only_their_own_tokens_in_the_admin(user_a, user_b):
    personal_token_create(user=user_a, name="alice's")
    personal_token_create(user=user_b, name="bob's")
    root = UserFactory(username="root", is_staff=True, is_superuser=True)
    client = APIClient()

    client.force_login(user_a)
    mine = client.get("/admin/fleets/personaltoken/").content.decode()
    client.force_login(root)
    everyone = client.get("/admin/fleets/personaltoken/").content.decode()

    assert "alice&#x27;s" in mine and "bob&#x27;s" not in mine
    assert "alice&#x27;s" in everyone and "bob&#x27;s" in everyone


def test_a_staff_user_revokes_a_token_in_the_admin_but_cannot_delete_it(user_a):
    row, _ = personal_token_create(user=user_a, name="tool")
    client = APIClient()
    client.force_login(user_a)

    response = client.post(
        "/admin/fleets/personaltoken/", {"action": "revoke", "_selected_action": [row.pk]}, follow=True
    )

    row.refresh_from_db()
    assert response.status_code == 200 and row.revoked_at is not None
    assert client.get(f"/admin/fleets/personaltoken/{row.pk}/delete/").status_code == 403
