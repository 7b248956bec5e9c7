"""``/account/tokens/``: a signed-in person creates a personal API token (shown once, stored hashed), sees their
own tokens only, and revokes one; every form is CSRF-protected."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from fleets.models import PersonalToken
from fleets.personal_tokens import personal_token_create
from fleets.tokens import token_sha256
from tests.helpers.factories import MembershipFactory, UserFactory

URL = "/account/tokens/"
pytestmark = pytest.mark.django_db


@pytest.fixture
def member():
    return MembershipFactory(role="viewer").user


def _issued(html: str) -> str:
    found = re.search(r'<code id="token-value">(wlp_[^<]+)</code>', html)
    assert found is not None, "no token shown"
    return found.group(1)


def test_a_token_created_on_the_page_is_shown_once_stored_hashed_and_reads_the_reports(client: Client, member):
    client.force_login(member)
    assert 'href="/account/tokens/"' in client.get("/finance/").content.decode()  # in the navigation

    created = client.post(URL, {"action": "create", "name": "carbon tool"})

    assert created.status_code == 200 and created["Cache-Control"] == "no-store"
    token = _issued(created.content.decode())
    row = PersonalToken.objects.get(user=member)
    assert (row.name, row.token_sha256, row.prefix) == ("carbon tool", token_sha256(token), token[: len(row.prefix)])
    assert token not in str(PersonalToken.objects.values_list().get())  # only its hash is kept
    assert 'id="token-value"' not in client.get(URL).content.decode()  # shown this once
    api = Client().get("/api/v1/reports/usage/", headers={"Authorization": f"Bearer {token}"})
    assert api.status_code == 200


def test_each_person_sees_and_revokes_their_own_tokens_only(client: Client, member):
    mine, _ = personal_token_create(user=member, name="mine")
    theirs, _ = personal_token_create(user=UserFactory(), name="someone else's")
    client.force_login(member)

    page = client.get(URL).content.decode()
    assert "mine" in page and "someone else" not in page and theirs.prefix not in page

    refused = client.post(URL, {"action": "revoke", "token": theirs.pk})
    assert refused.status_code == 400
    revoked = client.post(URL, {"action": "revoke", "token": mine.pk})
    assert revoked.status_code == 200 and 'id="token-revoked"' in revoked.content.decode()
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.revoked_at is not None and theirs.revoked_at is None


def test_an_expiry_in_the_past_is_refused(client: Client, member):
    client.force_login(member)
    answer = client.post(URL, {"action": "create", "name": "old", "expires_on": "2001-01-01"})
    assert answer.status_code == 400 and "must be a day in the future" in answer.content.decode()
    assert not PersonalToken.objects.exists()


def test_the_forms_need_the_csrf_token_and_the_page_a_signed_in_person(member):
    browser = Client(enforce_csrf_checks=True)
    assert browser.get(URL).status_code == 302  # to the sign-in page
    browser.force_login(member)
    assert browser.post(URL, {"action": "create", "name": "forged"}).status_code == 403
    assert not PersonalToken.objects.exists()


def test_a_token_of_scope_metrics_created_on_the_page_reads_metrics_only(client: Client, member):
    client.force_login(member)

    created = client.post(URL, {"action": "create", "name": "prometheus", "scope": "metrics"})

    html = created.content.decode()
    token = _issued(html)
    assert "/metrics</code>" in html  # the example is the one URL it reads
    assert PersonalToken.objects.get(user=member).scope == "metrics"
    assert "<td>metrics</td>" in client.get(URL).content.decode()
    bearer = {"Authorization": f"Bearer {token}"}
    assert Client().get("/metrics", headers=bearer).status_code == 200
    assert Client().get("/api/v1/reports/usage/", headers=bearer).status_code == 403
