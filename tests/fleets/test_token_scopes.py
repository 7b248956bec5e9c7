"""A personal token's scope: reports (the default) or metrics (``/metrics`` only), chosen at issue."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from fleets.models import PersonalToken, TokenScope

pytestmark = pytest.mark.django_db

TOKENS = "/api/v1/tokens/"


@pytest.fixture
def client_a(user_a: Any) -> APIClient:
    """Org A's admin, signed in with a browser session: tokens are issued there."""
    client = APIClient()
    client.force_login(user_a)
    return client


def _bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def test_a_token_is_of_scope_reports_unless_asked(client_a):
    created = client_a.post(TOKENS, {"name": "carbon tool"}, format="json")

    assert created.json()["scope"] == "reports"
    assert PersonalToken.objects.get().scope == TokenScope.REPORTS


def test_a_metrics_token_reads_metrics_and_nothing_else(client_a):
    created = client_a.post(TOKENS, {"name": "prometheus", "scope": "metrics"}, format="json")

    assert created.status_code == 201 and created.json()["scope"] == "metrics"
    scraper = _bearer(created.json()["token"])
    assert scraper.get("/metrics").status_code == 200
    assert scraper.get("/api/v1/reports/usage/?period=2026-11").status_code == 403
    assert client_a.get(TOKENS).json()[0]["scope"] == "metrics"


def test_a_reports_token_reads_reports_not_metrics(client_a):
    token = client_a.post(TOKENS, {"name": "tool"}, format="json").json()["token"]

    assert _bearer(token).get("/api/v1/reports/usage/?period=2026-11").status_code == 200
    assert _bearer(token).get("/metrics").status_code == 403


def test_an_unknown_scope_is_refused(client_a):
    refused = client_a.post(TOKENS, {"name": "x", "scope": "admin"}, format="json")

    assert refused.status_code == 400 and "scope" in refused.json()
