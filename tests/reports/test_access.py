"""Who may read which report: personal tokens, node tokens, anonymous callers, organization scoping."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from fleets.models import PersonalToken, Role
from fleets.personal_tokens import personal_token_create
from fleets.services import credential_issue
from fleets.tokens import token_sha256
from tests.helpers.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

REPORTS = [
    "/api/v1/reports/usage/?period=2026-Q4",
    "/api/v1/reports/comparison/?period=2026-Q4",
    "/api/v1/reports/sustainability/?period=2026-Q4",
    "/api/v1/reports/focus/?period=2026-Q4",
    "/api/v1/reports/journal/?period=2026-11",
]
TOKENS = "/api/v1/tokens/"


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


# --- personal tokens ---------------------------------------------------------------


def test_a_token_is_shown_once_and_stored_hashed(client_a, user_a):
    created = client_a.post(TOKENS, {"name": "carbon tool"}, format="json")

    assert created.status_code == 201
    token = created.json()["token"]
    assert token.startswith("wlp_") and len(token) > 40
    row = PersonalToken.objects.get()
    assert (row.user, row.name, row.token_sha256, row.prefix) == (
        user_a,
        "carbon tool",
        token_sha256(token),
        token[:12],
    )
    assert token not in {row.token_sha256, row.prefix, row.name}
    listed = client_a.get(TOKENS).json()
    assert listed == [
        {
            "id": row.pk,
            "name": "carbon tool",
            "prefix": token[:12],
            "created_at": listed[0]["created_at"],
            "last_used_at": None,
            "expires_at": None,
            "revoked_at": None,
            "active": True,
            "scope": "reports",
        }
    ]
    assert token not in str(listed)


def test_a_token_reads_reports_of_its_users_organizations(fleets, token_client_a):
    response = token_client_a.get("/api/v1/reports/usage/", {"period": "2026-Q4", "granularity": "total"})

    assert response.status_code == 200
    assert [row["cost"] for row in response.json()["results"]] == ["21.01"]  # Org A only
    assert PersonalToken.objects.get().last_used_at is not None


def test_a_token_cannot_issue_tokens(token_client_a):
    response = token_client_a.post(TOKENS, {"name": "another"}, format="json")

    assert response.status_code == 403
    assert PersonalToken.objects.count() == 1


def test_revoking_a_token_locks_it_out(viewer_a):
    row, token = personal_token_create(user=viewer_a, name="tool")
    client = bearer(token)
    assert client.get(REPORTS[0]).status_code == 200

    assert client.delete(f"{TOKENS}{row.pk}/").status_code == 204

    response = client.get(REPORTS[0])
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    row.refresh_from_db()
    assert row.revoked_at is not None


def test_revoking_from_a_session_and_listing_the_state(client_a, user_a):
    row, _ = personal_token_create(user=user_a, name="old")

    assert client_a.delete(f"{TOKENS}{row.pk}/").status_code == 204
    assert client_a.delete(f"{TOKENS}{row.pk}/").status_code == 204  # idempotent

    assert [(t["name"], t["active"]) for t in client_a.get(TOKENS).json()] == [("old", False)]


def test_nobody_lists_or_revokes_another_users_tokens(client_a, user_b):
    row, token = personal_token_create(user=user_b, name="bob's")

    assert client_a.get(TOKENS).json() == []
    assert client_a.delete(f"{TOKENS}{row.pk}/").status_code == 404
    row.refresh_from_db()
    assert row.revoked_at is None
    assert bearer(token).get(REPORTS[0]).status_code == 200


def test_an_expired_token_is_refused(viewer_a):
    _, token = personal_token_create(user=viewer_a, name="short", expires_at=timezone.now() - timedelta(seconds=1))

    assert bearer(token).get(REPORTS[0]).status_code == 401


def test_an_expiry_must_be_in_the_future(client_a):
    past = (timezone.now() - timedelta(days=1)).isoformat()

    assert client_a.post(TOKENS, {"name": "x", "expires_at": past}, format="json").status_code == 400
    future = (timezone.now() + timedelta(days=30)).isoformat()
    created = client_a.post(TOKENS, {"name": "x", "expires_at": future}, format="json")
    assert created.status_code == 201 and created.json()["expires_at"] is not None


def test_an_inactive_users_token_is_refused(viewer_a):
    _, token = personal_token_create(user=viewer_a, name="tool")
    viewer_a.is_active = False
    viewer_a.save()

    assert bearer(token).get(REPORTS[0]).status_code == 401


@pytest.mark.parametrize("header", ["Bearer wlp_unknown", "Bearer something-else", "Bearer a b"])
def test_unknown_or_malformed_bearer_is_401(db, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)

    response = client.get(REPORTS[0])

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="wattledger"'


# --- node tokens and anonymous callers --------------------------------------------------


@pytest.mark.parametrize("url", [*REPORTS, TOKENS, "/api/schema/"])
def test_a_node_token_is_forbidden_on_every_report_endpoint(fleets, url):
    client = bearer(credential_issue(node=fleets.h100))

    response = client.get(url)

    assert response.status_code == 403  # not 401: re-sending the same token cannot help
    assert "WWW-Authenticate" not in response


def test_a_node_token_cannot_revoke_or_issue_tokens(fleets, viewer_a):
    row, _ = personal_token_create(user=viewer_a, name="tool")
    client = bearer(credential_issue(node=fleets.h100))

    assert client.delete(f"{TOKENS}{row.pk}/").status_code == 403
    assert client.post(TOKENS, {"name": "x"}, format="json").status_code == 403


@pytest.mark.parametrize("url", REPORTS)
def test_anonymous_callers_are_asked_to_authenticate(db, url):
    response = APIClient().get(url)

    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"


def test_anonymous_callers_have_no_tokens(db):
    assert APIClient().get(TOKENS).status_code == 401
    assert APIClient().post(TOKENS, {"name": "x"}, format="json").status_code == 401


# --- roles and organization scoping -----------------------------------------------------


@pytest.mark.parametrize("url", REPORTS)
def test_every_member_role_may_read_reports(fleets, org_a, url):
    for role in Role.values:
        member = MembershipFactory(organization=org_a, role=role).user
        client = APIClient()
        client.force_login(member)

        assert client.get(url).status_code == 200, role


def _org_b_refs(fleets):
    other = fleets.other_org_node
    return {
        "organization": [other.fleet.organization.slug, str(other.fleet.organization_id), "no-such-org"],
        "fleet": [other.fleet_id, 999_999],
        "site": [other.site_id],
        "node": [other.pk],
    }


@pytest.mark.parametrize("param", ["organization", "fleet", "site", "node"])
def test_usage_of_another_organization_is_404(fleets, client_a, param):
    for value in _org_b_refs(fleets)[param]:
        response = client_a.get("/api/v1/reports/usage/", {"period": "2026-Q4", param: value})

        assert response.status_code == 404, (param, value)


@pytest.mark.parametrize("param", ["organization", "fleet", "baseline"])
def test_comparison_of_another_organization_is_404(fleets, client_a, param):
    refs = _org_b_refs(fleets)
    for value in refs["fleet" if param == "baseline" else param]:
        response = client_a.get("/api/v1/reports/comparison/", {"period": "2026-Q4", param: value})

        assert response.status_code == 404, (param, value)


def test_sustainability_of_another_organization_is_404(fleets, client_a):
    for value in _org_b_refs(fleets)["organization"]:
        response = client_a.get("/api/v1/reports/sustainability/", {"period": "2026-Q4", "organization": value})

        assert response.status_code == 404, value


def test_each_user_sees_only_their_own_organization(fleets, user_b):
    client = APIClient()
    client.force_login(user_b)

    usage = client.get("/api/v1/reports/usage/", {"period": "2026-Q4", "granularity": "total", "group_by": "fleet"})
    comparison = client.get("/api/v1/reports/comparison/", {"period": "2026-Q4"})
    sustainability = client.get("/api/v1/reports/sustainability/", {"period": "2026-Q4"})

    assert [(r["group_key"], r["cost"]) for r in usage.json()["results"]] == [
        (str(fleets.other_org_node.fleet_id), "16.62")
    ]
    assert [r["fleet_id"] for r in comparison.json()["results"]] == [fleets.other_org_node.fleet_id]
    assert (sustainability.json()["organization"], sustainability.json()["it_kwh"]) == ("org-b", 4.5)


def test_a_member_of_two_organizations_names_one_for_sustainability(fleets, user_a, org_b):
    MembershipFactory(user=user_a, organization=org_b, role=Role.VIEWER)
    client = APIClient()
    client.force_login(user_a)

    unnamed = client.get("/api/v1/reports/sustainability/", {"period": "2026-Q4"})
    named = client.get("/api/v1/reports/sustainability/", {"period": "2026-Q4", "organization": "org-b"})
    both = client.get(
        "/api/v1/reports/usage/", {"period": "2026-Q4", "granularity": "total", "group_by": "organization"}
    )

    assert unnamed.status_code == 400
    assert named.json()["it_kwh"] == 4.5
    assert len(both.json()["results"]) == 2


def test_a_user_of_no_organization_gets_empty_reports(db):
    client = APIClient()
    client.force_login(UserFactory(username="nobody"))

    assert client.get(REPORTS[0]).json()["results"] == []
    assert client.get(REPORTS[1]).json()["results"] == []
    assert client.get(REPORTS[2]).status_code == 404
