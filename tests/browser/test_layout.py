"""Every page fits a 1,280 x 800 window: no horizontal page scroll (wide tables scroll inside their card),
no console error (a favicon included), a screenshot of each in test-results/screenshots/."""

from __future__ import annotations

import pytest

from fleets.models import Node, Role
from tests.helpers.browser import CHROMIUM, PASSWORD, shoot
from tests.helpers.dashboard_data import two_fleets
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"),
]

WIDTH, HEIGHT = 1280, 800


@pytest.fixture
def small_window(browser_page):
    browser_page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    return browser_page


@pytest.fixture
def admin_signed_in(live_server, small_window, transactional_db):
    organization = OrganizationFactory(name="Acme AI", slug="acme-ai")
    two_fleets(organization)
    user = UserFactory(username="ada", is_staff=True)
    MembershipFactory(user=user, organization=organization, role=Role.ADMIN)
    page = small_window
    page.goto(f"{live_server.url}/accounts/login/")
    shoot(page, "login-1280")
    assert _page_width(page) <= WIDTH
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/finance/")
    return page


def _page_width(page) -> int:
    return page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")


def test_no_page_scrolls_sideways_at_1280_and_none_logs_a_console_error(admin_signed_in, live_server):
    page = admin_signed_in
    node = Node.objects.order_by("pk").first()
    paths = [
        "/finance/", "/finance/?period=last-month&granularity=month", "/finance/prices/", "/sustainability/",
        "/compare/", "/compare/?by=gpu_model", "/nodes/", f"/nodes/{node.pk}/", "/admin/",
        "/admin/telemetry/collectorstatus/", "/api/docs/",
    ]  # fmt: skip
    widths = {}
    for path in paths:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        name = path.replace(f"/nodes/{node.pk}/", "/node/").strip("/")
        name = name.replace("/", "-").replace("?", "-").replace("&", "-").replace("=", "-")
        shoot(page, f"{name}-1280")
        widths[path] = _page_width(page)

    assert {path: width for path, width in widths.items() if width > WIDTH} == {}
    assert page.console_errors == []  # type: ignore[attr-defined]
