"""In a real browser (Debian's headless Chromium driven by Playwright): log in, open every dashboard,
see the charts drawn, change the period, and no console errors. Screenshots go to test-results/.

Playwright never downloads a browser here: it launches /usr/bin/chromium, which .ci/run installs.
"""

from __future__ import annotations

import pytest

from fleets.models import Role
from tests.helpers.browser import CHROMIUM, PASSWORD, shoot
from tests.helpers.dashboard_data import two_fleets
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"),
]


@pytest.fixture
def signed_in(live_server, browser_page, transactional_db):
    organization = OrganizationFactory(name="Acme AI", slug="acme-ai")
    two_fleets(organization)
    user = UserFactory(username="fiona")
    MembershipFactory(user=user, organization=organization, role=Role.FINANCE)
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "fiona")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/finance/")
    return page


@pytest.mark.parametrize(
    ("path", "charts"),
    [("/finance/", 3), ("/sustainability/", 3), ("/compare/", 2), ("/nodes/", 0)],
)
def test_each_dashboard_draws_its_charts_without_console_errors(signed_in, live_server, path, charts):
    page = signed_in

    page.goto(f"{live_server.url}{path}")
    page.wait_for_load_state("networkidle")

    assert page.locator(".chart .main-svg").count() >= charts, "Plotly drew an SVG for every chart"
    assert page.locator("text=Acme AI").count() >= 1
    shoot(page, path.strip("/"))
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_node_page_draws_telemetry_charts(signed_in, live_server):
    page = signed_in
    page.goto(f"{live_server.url}/nodes/")
    page.click("#nodes a >> nth=0")
    page.wait_for_load_state("networkidle")

    assert page.locator(".chart .main-svg").count() >= 8
    shoot(page, "node")
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_the_period_picker_changes_the_figures(signed_in, live_server):
    page = signed_in
    page.goto(f"{live_server.url}/finance/?period=7d")
    week = page.locator("#tile-cost .value").inner_text()

    page.select_option("select[name=period]", "last-month")
    page.click("#period-picker button[type=submit]")
    page.wait_for_load_state("networkidle")

    assert "period=last-month" in page.url
    assert page.locator("#tile-cost").count() == 0 or page.locator("#tile-cost .value").inner_text() != week
    assert page.console_errors == []  # type: ignore[attr-defined]
