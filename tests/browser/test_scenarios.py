"""In a real browser: a member creates a scenario on /scenarios/, runs it (a real Celery worker replays the
ledger) and sees the result beside what happened, the page following the run's progress by itself."""

from __future__ import annotations

import pytest

from advice.models import WorkloadClass
from fleets.models import Role
from tests.helpers.browser import CHROMIUM, PASSWORD, shoot
from tests.helpers.factories import MembershipFactory
from tests.helpers.scenarios_data import acme_ledger

pytestmark = [
    pytest.mark.browser,
    pytest.mark.celery_worker,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"),
]


def fits(page) -> bool:
    return page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)") <= 1280


def test_a_member_runs_a_lifetime_scenario_and_sees_embodied_per_token_fall(
    celery_worker_process, browser_page, live_server, transactional_db
):
    acme = acme_ledger("Acme Browser")
    WorkloadClass.objects.create(
        organization=acme["organization"], name="chat", llm_model="llama-8b", ttft_target_ms=980,
        expected_output_tokens_per_day=10**9,
    )  # fmt: skip
    MembershipFactory(organization=acme["organization"], role=Role.VIEWER, user__username="sam")
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "sam")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/finance/")

    page.click("nav >> text=Scenarios")
    page.fill("input[name=name]", "Keep the H100s 8 years")
    page.fill("input[name=start]", "2026-01-05")
    page.fill("input[name=end]", "2026-01-06")
    page.select_option("select[name=kind]", "lifetime")
    page.select_option("select[name=fleet]", label="enterprise")
    page.fill("input[name=extra_years]", "4")
    page.click("#scenario-form button[type=submit]")
    page.wait_for_selector("#run-form")
    page.click("#run-form button[type=submit]")
    page.wait_for_selector("#scenario-status[data-status=done]", timeout=60_000)

    row = page.locator("tr[data-figure=embodied_gco2e_per_1m_output_tokens]")
    assert row.locator(".actual").inner_text() == "200.0"
    assert row.locator(".scenario").inner_text() == "120.0"  # the enterprise fleet's share halved
    enterprise = page.locator("#result-fleets tr[data-fleet=enterprise][data-side=scenario] .embodied")
    assert enterprise.inner_text() == "100.0 (40.00 to 160.0)"
    life = page.locator("table.lifetime[data-fleet=enterprise]")
    assert [life.locator(f"tr[data-extra='{k}'] .embodied").inner_text() for k in (0, 4)] == ["200.0", "100.0"]
    operational = page.locator("tr[data-figure=location_gco2e_per_1m_output_tokens]")
    assert operational.locator(".actual").inner_text() == operational.locator(".scenario").inner_text()
    assert (
        page.inner_text("#changes .change-row")
        == "Keep the cards longer (lifetime)\tfleet = enterprise; extra_years = 4"
    )
    chat = page.locator("#result-classes tr[data-class=chat]")
    assert (chat.locator(".actual").inner_text(), chat.locator(".scenario").inner_text()) == ("973", "973 meets")
    shoot(page, "scenario-lifetime")
    page.set_viewport_size({"width": 1280, "height": 800})  # as tests/browser/test_layout.py: no sideways scroll
    assert fits(page)
    page.click("text=All scenarios")
    assert page.inner_text("tr[data-scenario='Keep the H100s 8 years'] .status") == "Done"
    assert fits(page)
    shoot(page, "scenarios-1280")
    assert page.console_errors == []  # type: ignore[attr-defined]
