"""In a real browser: the advice page shows each class's recommendation and why; an engineer adds a class."""

from __future__ import annotations

import pytest
from django.utils import timezone

from advice.models import AdviceSettings, WorkloadClass
from advice.services import advice_refresh
from fleets.models import Role
from tests.helpers.browser import CHROMIUM, PASSWORD, shoot
from tests.helpers.dashboard_data import two_fleets
from tests.helpers.factories import MembershipFactory, OrganizationFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"),
]


@pytest.fixture
def advised(transactional_db):
    """Acme AI: an H100 and an RTX 4090 fleet with 3 measured hours, a chat and a deferrable batch class."""
    organization = OrganizationFactory(name="Acme AI", slug="acme-ai")
    two_fleets(organization)
    AdviceSettings.objects.create(organization=organization, min_hours_of_data=3)
    WorkloadClass.objects.create(organization=organization, name="chat", ttft_target_ms=200,
                                 expected_output_tokens_per_day=10**9)  # fmt: skip
    WorkloadClass.objects.create(organization=organization, name="batch", ttft_target_ms=2000, ttft_percentile=50,
                                 expected_output_tokens_per_day=10**9, deadline_h=24, carbon_weight=1)  # fmt: skip
    advice_refresh(organization_id=organization.pk, now=timezone.now())
    return organization


def test_an_engineer_reads_the_advice_and_adds_a_class(browser_page, live_server, advised):
    page = browser_page
    MembershipFactory(organization=advised, role=Role.ENGINEER, user__username="erin")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "erin")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/finance/")

    page.click("nav >> text=Advice")
    page.wait_for_url(f"{live_server.url}/advice/")
    chat = page.locator("section[data-class=chat]")
    assert chat.locator(".status").get_attribute("data-status") == "ok"
    assert chat.locator("tr[data-fleet=enterprise] .share").inner_text() == "100 %"
    assert "Why:" in chat.locator(".explanation").inner_text()
    assert chat.locator("tr[data-outcome=all_consumer]").inner_text().endswith("no")
    batch = page.locator("section[data-class=batch]")
    assert "consumer" in batch.locator(".explanation").inner_text()  # P50 2 s holds on the cheaper RTX 4090s
    assert batch.locator(".window").get_attribute("data-status") == "no_forecast"
    shoot(page, "advice")
    page.set_viewport_size({"width": 1280, "height": 800})  # wide tables scroll inside their card, never the page
    width = page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")
    assert width <= 1280

    page.fill("#class-form input[name=name]", "summaries")
    page.fill("#class-form input[name=ttft_target_ms]", "1000")
    page.fill("#class-form input[name=expected_output_tokens_per_day]", "5000000")
    page.click("#class-form button[type=submit]")
    assert "summaries" in page.inner_text("#class-added")
    assert page.locator("section[data-class=summaries] .status").get_attribute("data-status") == "pending"
    shoot(page, "advice-class-added")
    assert page.console_errors == []  # type: ignore[attr-defined]
