"""Uploading an organization's hourly intensities as CSV: REST endpoint and management command."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from fleets.models import Role
from fleets.personal_tokens import personal_token_create
from governance.models import AuditEntry, LockedPeriod
from grid import api as grid_api
from grid.models import GridIntensity
from tests.helpers.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

GOOD = "zone,hour_start,gco2e_per_kwh,kind\nDE,2024-05-01T13:00:00Z,312.5,average\nde,2024-05-01T16:00:00+02:00,298,\n"
BAD = (
    "zone,hour_start,gco2e_per_kwh\n"
    "DE,2024-05-01T13:00:00Z,312.5\n"
    "DE,2024-05-01T13:30:00Z,300\n"
    "DE,2024-05-01T15:00:00Z,lots\n"
)


def upload(client: APIClient, body: str, *, organization: str = "org-a", content_type: str = "text/csv") -> Any:
    url = reverse("grid-intensity-csv") + f"?organization={organization}&source_name=acme"
    return client.generic("POST", url, body.encode(), content_type=content_type)


def member(organization: Any, role: str) -> APIClient:
    client = APIClient()
    user = UserFactory(username=f"{role}-of-{organization.slug}")
    MembershipFactory(user=user, organization=organization, role=role)
    client.force_login(user)
    return client


@pytest.fixture
def admin_a(user_a: Any) -> APIClient:
    client = APIClient()
    client.force_login(user_a)
    return client


def test_url_is_api_v1_grid_intensity_csv() -> None:
    assert reverse("grid-intensity-csv") == "/api/v1/grid/intensity.csv"


def test_good_file_is_stored_for_the_organization(admin_a: APIClient, org_a: Any) -> None:
    response = upload(admin_a, GOOD)

    assert response.status_code == 201, response.content
    assert response.json() == {"organization": "org-a", "source_name": "acme", "stored": 2}
    rows = GridIntensity.objects.order_by("hour_start").values_list(
        "zone", "kind", "source", "gco2e_per_kwh", "is_estimated", "organization_id"
    )
    assert [(row[0], row[1], row[2], str(row[3]), row[4], row[5]) for row in rows] == [
        ("DE", "average", "csv:acme", "312.500", False, org_a.pk),
        ("DE", "average", "csv:acme", "298.000", False, org_a.pk),
    ]


def test_sustainability_members_may_upload(org_a: Any) -> None:
    assert upload(member(org_a, Role.SUSTAINABILITY), GOOD).status_code == 201


def test_bad_file_lists_line_numbers_and_stores_nothing(admin_a: APIClient) -> None:
    response = upload(admin_a, BAD)

    assert response.status_code == 400
    body = response.json()
    assert body["problem_count"] == 2
    assert [problem.split(":")[0] for problem in body["problems"]] == ["line 3", "line 4"]
    assert "not the start of a UTC hour" in body["problems"][0]
    assert not GridIntensity.objects.exists()


def test_user_of_another_organization_gets_404_and_nothing_is_stored(user_b: Any, org_a: Any) -> None:
    client = APIClient()
    client.force_login(user_b)

    assert upload(client, GOOD, organization="org-a").status_code == 404
    assert upload(client, GOOD, organization="no-such-org").status_code == 404
    assert not GridIntensity.objects.exists()


def test_viewer_gets_403_and_nothing_is_stored(org_a: Any) -> None:
    for role in (Role.VIEWER, Role.FINANCE, Role.ENGINEER):
        assert upload(member(org_a, role), GOOD).status_code == 403
    assert not GridIntensity.objects.exists()


def test_anonymous_is_asked_to_authenticate(org_a: Any) -> None:
    response = upload(APIClient(), GOOD)

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert not GridIntensity.objects.exists()


def test_a_browser_session_with_its_csrf_token_uploads(user_a: Any, org_a: Any) -> None:
    # given: a signed-in browser, which checks CSRF as a real one does (the test client skips it by default)
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user_a)
    browser.get("/accounts/login/")  # any page with a form sets the CSRF cookie
    csrf_token = browser.cookies["csrftoken"].value

    # when: it posts the file with the token
    url = reverse("grid-intensity-csv") + "?organization=org-a&source_name=acme"
    response = browser.generic("POST", url, GOOD.encode(), content_type="text/csv", HTTP_X_CSRFTOKEN=csrf_token)

    # then: stored, not a 500 from reading the CSV body as a form
    assert response.status_code == 201, response.content
    assert GridIntensity.objects.count() == 2


def test_a_browser_session_without_the_csrf_token_is_refused(user_a: Any, org_a: Any) -> None:
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user_a)

    response = upload(browser, GOOD)

    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
    assert not GridIntensity.objects.exists()


def test_a_personal_token_uploads_as_in_the_readme(user_a: Any, org_a: Any) -> None:
    _, token = personal_token_create(user=user_a, name="supplier sync")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")

    response = upload(client, GOOD)

    assert response.status_code == 201, response.content
    assert response.json()["stored"] == 2


def test_a_file_over_the_limit_is_413_and_stores_nothing(
    admin_a: APIClient, org_a: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grid_api, "MAX_CSV_BYTES", len(GOOD) - 1)

    response = upload(admin_a, GOOD)

    assert response.status_code == 413
    assert "over the limit" in response.json()["detail"]
    assert not GridIntensity.objects.exists()


def test_not_csv_is_415_and_missing_source_name_is_400(admin_a: APIClient) -> None:
    assert upload(admin_a, GOOD, content_type="application/json").status_code == 415
    response = admin_a.generic("POST", reverse("grid-intensity-csv") + "?organization=org-a", GOOD.encode(), "text/csv")
    assert response.status_code == 400
    assert "source_name" in response.json()
    assert not GridIntensity.objects.exists()


# --- the management command ------------------------------------------------------


def test_command_stores_a_good_file_and_says_how_many_hours(org_a: Any, tmp_path: Path) -> None:
    csv_file = tmp_path / "acme.csv"
    csv_file.write_text(GOOD)
    out = StringIO()

    call_command("import_grid_csv", "--organization", "org-a", "--source", "acme", str(csv_file), stdout=out)

    assert out.getvalue().strip() == "stored 2 hour(s) for org-a as csv:acme"
    assert set(GridIntensity.objects.values_list("organization_id", "source")) == {(org_a.pk, "csv:acme")}


def test_command_lists_line_numbered_problems_fails_and_stores_nothing(org_a: Any, tmp_path: Path) -> None:
    csv_file = tmp_path / "bad.csv"
    csv_file.write_text(BAD)

    with pytest.raises(CommandError) as caught:
        call_command("import_grid_csv", "--organization", "org-a", "--source", "acme", str(csv_file))

    assert "line 3: hour_start" in str(caught.value) and "line 4: gco2e_per_kwh" in str(caught.value)
    assert not GridIntensity.objects.exists()


@pytest.mark.parametrize(
    ("organization", "source", "message"),
    [("no-such-org", "acme", "no organization"), ("org-a", "bad name!", "source name")],
)
def test_command_refuses_unknown_organization_and_bad_source_name(
    org_a: Any, tmp_path: Path, organization: str, source: str, message: str
) -> None:
    csv_file = tmp_path / "acme.csv"
    csv_file.write_text(GOOD)
    with pytest.raises(CommandError, match=message):
        call_command("import_grid_csv", "--organization", organization, "--source", source, str(csv_file))
    assert not GridIntensity.objects.exists()


def test_a_file_with_an_hour_in_a_locked_period_is_refused_and_stores_nothing(admin_a: APIClient, org_a: Any) -> None:
    LockedPeriod.objects.create(
        organization=org_a, start=datetime(2024, 5, 1, 14, tzinfo=UTC), end=datetime(2024, 6, 1, tzinfo=UTC),
        reason="May closed", locked_at=datetime(2024, 6, 2, tzinfo=UTC),
    )  # fmt: skip
    response = upload(admin_a, GOOD)  # 13:00 is before the lock, 14:00 (16:00+02:00) inside it

    assert response.status_code == 409
    assert "is locked (May closed)" in response.json()["error"]
    assert not GridIntensity.objects.exists()
    before_the_lock = "zone,hour_start,gco2e_per_kwh\nDE,2024-05-01T13:00:00Z,312.5\n"
    assert upload(admin_a, before_the_lock).status_code == 201


def test_an_upload_is_audited_with_its_file_hash_zones_and_hours(admin_a: APIClient, org_a: Any) -> None:
    assert upload(admin_a, GOOD).status_code == 201

    entry = AuditEntry.objects.get(organization=org_a)

    assert (entry.username, entry.action, entry.subject) == ("alice", "create", "grid_intensity_upload")
    assert entry.after == {
        "source_name": "acme", "file_sha256": hashlib.sha256(GOOD.encode()).hexdigest(), "rows": 2, "stored": 2,
        "zones": ["DE"], "first_hour": "2024-05-01T13:00:00+00:00", "last_hour": "2024-05-01T14:00:00+00:00",
    }  # fmt: skip
    assert upload(admin_a, BAD).status_code == 400
    assert upload(member(org_a, Role.VIEWER), GOOD).status_code == 403
    assert AuditEntry.objects.count() == 1  # refused uploads change nothing, so leave no entry


def test_the_command_is_audited_and_refused_in_a_locked_period_like_the_upload(org_a: Any, tmp_path: Path) -> None:
    csv_file = tmp_path / "acme.csv"
    csv_file.write_text(GOOD)
    call_command("import_grid_csv", "--organization", "org-a", "--source", "acme", str(csv_file), stdout=StringIO())
    entry = AuditEntry.objects.get()
    assert (entry.subject, entry.username, entry.after["stored"]) == ("grid_intensity_upload", "", 2)
    LockedPeriod.objects.create(
        organization=org_a, start=datetime(2024, 5, 1, tzinfo=UTC), end=datetime(2024, 6, 1, tzinfo=UTC),
        reason="May closed", locked_at=datetime(2024, 6, 2, tzinfo=UTC),
    )  # fmt: skip
    csv_file.write_text(GOOD.replace("312.5", "100"))
    with pytest.raises(CommandError, match=r"is locked \(May closed\)"):
        call_command("import_grid_csv", "--organization", "org-a", "--source", "acme", str(csv_file))
    assert GridIntensity.objects.filter(gco2e_per_kwh=100).count() == 0
    assert AuditEntry.objects.count() == 1
