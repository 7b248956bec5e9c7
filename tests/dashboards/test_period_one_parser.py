"""A page and the report API read a period with one parser (common.periods): the same text, the same range."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine

from fleets.models import Role
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory

NOW = datetime(2026, 11, 17, 9, 41, tzinfo=UTC)


@pytest.fixture
def member(db, client):
    user = UserFactory(username="period-reader")
    MembershipFactory(user=user, organization=OrganizationFactory(name="Acme AI", slug="acme-ai"), role=Role.FINANCE)
    client.force_login(user)
    return user


def shown(client, query: dict[str, str]) -> tuple[str, str]:
    period = client.get("/finance/", query).context["period"]
    return f"{period.start:%Y-%m-%dT%H:%M:%SZ}", f"{period.end:%Y-%m-%dT%H:%M:%SZ}"


def reported(client, query: dict[str, str]) -> tuple[str, str]:
    answer = client.get("/api/v1/reports/usage/", {**query, "granularity": "total"})
    assert answer.status_code == 200, answer.content
    return answer.json()["start"], answer.json()["end"]


@time_machine.travel(NOW, tick=False)
def test_without_a_period_a_page_and_a_report_cover_the_same_default_preset(client, member):
    # 09:41: the hour in progress is left out of both (the ledger holds nothing still to compute).
    assert shown(client, {}) == reported(client, {}) == ("2026-11-10T09:00:00Z", "2026-11-17T09:00:00Z")


@time_machine.travel(NOW, tick=False)
def test_a_pages_start_and_end_are_the_apis_period_and_the_range_of_its_export_link(client, member):
    month = shown(client, {"start": "2026-11-01", "end": "2026-11-30"})

    assert month == reported(client, {"period": "2026-11"}) == ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    assert month == reported(client, dict(zip(("start", "end"), month, strict=True)))


@time_machine.travel(NOW, tick=False)
def test_the_same_start_and_end_text_starts_alike_and_the_page_includes_its_end_day(client, member):
    # The one reading that differs (common.periods): a page's "to" date is included, the API's bare date is the
    # instant at its midnight, exclusive like every end there. Both are relied on, so neither was changed.
    text = {"start": "2026-11-01", "end": "2026-11-02"}

    assert shown(client, text) == ("2026-11-01T00:00:00Z", "2026-11-03T00:00:00Z")
    assert reported(client, text) == ("2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z")


@time_machine.travel(NOW, tick=False)
def test_a_custom_range_submitted_again_from_its_picker_stays_the_same(client, member):
    page = client.get("/finance/", {"start": "2026-11-01", "end": "2026-11-02"}).content.decode()

    assert 'name="start" value="2026-11-01"' in page
    assert 'name="end" value="2026-11-02"' in page  # the last day included, not the exclusive end
    assert shown(client, {"start": "2026-11-01", "end": "2026-11-02"}) == (
        "2026-11-01T00:00:00Z",
        "2026-11-03T00:00:00Z",
    )
