"""In a real browser: a finance user changes a node's rent on the prices page, sees the ledger hours it
re-opened and, once the ledger has run, the finance totals change; a viewer gets no form."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounting.models import NodePrice
from accounting.node_hour_lines import ledger_node_hours_compute, ledger_pending_run
from fleets.models import Role
from tests.helpers.browser import CHROMIUM, PASSWORD, shoot
from tests.helpers.factories import (
    FleetFactory,
    GpuFactory,
    MembershipFactory,
    NodeFactory,
    OrganizationFactory,
    SiteFactory,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"),
]

JAN_1 = datetime(2026, 1, 1, tzinfo=UTC)
PERIOD = "?start=2026-01-01&end=2026-01-03"


@pytest.fixture
def rented_node(transactional_db):
    """Acme AI's h100-a: 2 GPUs, rented at 2.00 per GPU-hour from Jan 1; 48 stored hours: 192.00."""
    organization = OrganizationFactory(name="Acme AI", slug="acme-ai")
    site = SiteFactory(organization=organization, name="fra-1", currency="EUR", grid_zone="")
    node = NodeFactory(fleet=FleetFactory(organization=organization, name="inference"), site=site,
                       hostname="h100-a", commissioned_at=JAN_1 - timedelta(days=30))  # fmt: skip
    for index in range(2):
        GpuFactory(node=node, index=index, uuid=f"GPU-browser-{index}")
    NodePrice.objects.create(fleet=node.fleet, node=node, kind="rented", rate_per_h=2, valid_from=JAN_1)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[JAN_1 + timedelta(hours=n) for n in range(48)])
    return node


def sign_in(page, live_server, node, role: str, username: str) -> None:
    MembershipFactory(organization=node.fleet.organization, role=role, user__username=username)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/finance/")


def total_cost(page, live_server) -> Decimal:
    page.goto(f"{live_server.url}/finance/{PERIOD}")
    return Decimal(page.get_attribute("#tile-cost .value", "data-value"))


def test_finance_changes_a_rent_and_sees_the_ledger_reopen_and_the_totals_change(
    browser_page,
    live_server,
    rented_node,
):
    page = browser_page
    sign_in(page, live_server, rented_node, Role.FINANCE, "fiona")
    assert total_cost(page, live_server) == Decimal("192.00")

    page.goto(f"{live_server.url}/finance/prices/")
    page.select_option("select[name=node]", label="h100-a")
    page.fill("input[name=rate_per_h]", "3.00")
    page.fill("input[name=valid_from]", "2026-01-02")
    page.click("#rent-form button[type=submit]")

    assert page.inner_text("#hours-reopened") == "24"
    assert page.inner_text("tr[data-node=h100-a] .pending") == "24"
    shoot(page, "prices-changed")
    ledger_pending_run(now=timezone.now())  # what the ledger worker does next
    assert total_cost(page, live_server) == Decimal("240.00")  # 24 h x 2 GPUs x 2.00 + 24 h x 2 GPUs x 3.00
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_a_viewer_reads_prices_but_gets_no_form(browser_page, live_server, rented_node):
    page = browser_page
    sign_in(page, live_server, rented_node, Role.VIEWER, "vic")

    page.goto(f"{live_server.url}/finance/prices/")

    assert page.locator("#rent-form").count() == 0
    assert "needs the admin or finance role" in page.inner_text("#read-only")
    assert "2.00 EUR per gpu-hour" in page.inner_text("tr[data-node=h100-a]")


def test_finance_uploads_prices_and_the_page_follows_the_worker_to_the_answer(
    celery_worker_process, browser_page, live_server, rented_node, tmp_path
):
    page = browser_page
    sign_in(page, live_server, rented_node, Role.FINANCE, "fred")
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("fleet,node,kind,rate_per_h,rate_per,valid_from\ninference,,rented,1,gpu,2025-06-01T00:00:00Z\n")
    bad.write_text("fleet,node,kind,rate_per_h,rate_per,valid_from\ninference,h100-z,rented,1,gpu,2026-02-01\n")

    page.goto(f"{live_server.url}/finance/prices/")
    page.set_input_files("#upload-form input[name=file]", str(good))
    page.click("#upload-form button[type=submit]")
    # The page may be rendered with the task already done (a fast worker): its script fills the outcome from
    # the status it reads then, so wait for the outcome, not for the state alone.
    page.wait_for_selector("#upload-status[data-state=done] .outcome:not(:empty)", timeout=60_000)
    assert "1 price(s) saved" in page.inner_text("#upload-status .outcome")
    assert "1 of 1 rows" in page.inner_text("#upload-status .progress")

    page.set_input_files("#upload-form input[name=file]", str(bad))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-status[data-state=done] li[data-line='2']", timeout=60_000)
    assert "no node h100-z in fleet inference" in page.inner_text("#upload-status .refused")
    shoot(page, "prices-upload-refused")
    assert page.console_errors == []  # type: ignore[attr-defined]
