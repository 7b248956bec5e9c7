"""Pages read at a glance in a 1,280 x 800 window, on data shaped like the demo's (two fleets, each serving
the demo's two LLMs under their full names): the comparison's P99 TTFT and the nodes table's Cost are on screen
without scrolling, no page scrolls sideways, a table wider than its card says so, and no chart label is
clipped (every text of every Plotly figure lies inside its figure)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounting.models import NodeHourLedger
from accounting.site_hours import site_hours_rebuild
from advice.models import AdviceSettings, WorkloadClass
from advice.services import advice_refresh
from fleets.models import Node, Role
from telemetry.collector.simprofiles import LLAMA_8B, QWEN_14B
from telemetry.models import ServingEndpoint
from tests.helpers.browser import CHROMIUM, PASSWORD, SCREENSHOTS, shoot
from tests.helpers.dashboard_data import second_model_serve, two_fleets
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)"),
]

WIDTH, HEIGHT = 1280, 800

# Every text of every chart whose box leaves its figure's box (1 px of anti-aliasing allowed): a clipped label.
CLIPPED_LABELS = """() => {
  const clipped = [];
  const outside = (box, frame) => box.left < frame.left - 1 || box.right > frame.right + 1
    || box.top < frame.top - 1 || box.bottom > frame.bottom + 1;
  document.querySelectorAll(".js-plotly-plot").forEach((plot) => {
    const frame = plot.getBoundingClientRect();
    plot.querySelectorAll("svg.main-svg text").forEach((text) => {
      const box = text.getBoundingClientRect();
      if (!text.textContent.trim() || box.width === 0 || !outside(box, frame)) return;
      const at = [box.left, box.right, box.top, box.bottom].map(Math.round).join(", ");
      clipped.push(`${plot.id}: "${text.textContent}" at ${at}`);
    });
  });
  return clipped;
}"""


@pytest.fixture
def demo_like(transactional_db):
    organization = OrganizationFactory(name="Acme AI", slug="acme-ai")
    for fleet in two_fleets(organization):
        second_model_serve(fleet)
    ServingEndpoint.objects.filter(model_name="llama-8b").update(model_name=LLAMA_8B)
    ServingEndpoint.objects.filter(model_name="qwen-14b").update(model_name=QWEN_14B)
    # The same hours on each of the 7 days before: a daily chart of the last 7 days has a bar a day.
    for line in list(NodeHourLedger.objects.all()):
        for days in range(1, 8):
            copy = NodeHourLedger.objects.get(pk=line.pk)
            copy.pk, copy.hour_start = None, line.hour_start - timedelta(days=days)
            copy.save()
    site_hours_rebuild(organization_ids=[organization.pk])  # lines copied by hand: their site-hours summed again
    AdviceSettings.objects.create(organization=organization, min_hours_of_data=3)
    WorkloadClass.objects.create(organization=organization, name="chat", ttft_target_ms=200,
                                 expected_output_tokens_per_day=10**9)  # fmt: skip
    advice_refresh(organization_id=organization.pk, now=timezone.now())
    return organization


@pytest.fixture
def signed_in(live_server, browser_page, demo_like):
    user = UserFactory(username="ada", is_staff=True)
    MembershipFactory(user=user, organization=demo_like, role=Role.ADMIN)
    page = browser_page
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/finance/")
    return page


def _open(page, url: str, name: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    shoot(page, f"glance-{name}")
    page.screenshot(path=str(SCREENSHOTS / f"glance-{name}-first-screen.png"))  # what one sees as it opens


def _on_screen(page, selector: str) -> bool:
    """The element lies wholly inside the window as the page opens (no scrolling, the page's or its card's)."""
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    return box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= WIDTH and box["y"] + box["height"] <= HEIGHT


def test_the_decisive_columns_are_on_screen_at_1280_by_800(signed_in, live_server):
    page = signed_in

    _open(page, f"{live_server.url}/compare/?by=llm_model", "compare-llm")
    assert _on_screen(page, "#col-ttft-p99")
    assert _on_screen(page, "#comparison tbody tr:first-child td.ttft-p99")
    assert "scrolls" not in page.locator("#comparison").locator("..").get_attribute("class")

    _open(page, f"{live_server.url}/nodes/", "nodes")
    assert _on_screen(page, "#col-cost")
    for cell in page.locator("#nodes td.cost, #nodes td.tokens").all():  # whole numbers, none cut by the card
        box = cell.bounding_box()
        assert box is not None and box["x"] + box["width"] <= WIDTH

    _open(page, f"{live_server.url}/finance/", "finance")
    assert "scrolls" not in page.locator("#by-fleet").locator("..").get_attribute("class")


def test_the_daily_cost_chart_has_one_tick_under_each_bar_and_no_date_twice(signed_in, live_server):
    page = signed_in

    _open(page, f"{live_server.url}/finance/?period=7d&granularity=day", "finance-7d")

    chart = page.locator("#chart-cost-by-fleet")
    bars = chart.locator(".trace.bars").first.locator(".point").count()
    ticks = chart.locator(".xtick text").evaluate_all("texts => texts.map((text) => text.textContent.trim())")
    assert bars >= 7  # a day of lines on each of the last 7 days (the 8th, cut by the period, may hold none)
    assert len(ticks) == bars and len(set(ticks)) == bars


def test_every_column_is_one_click_away_and_a_wide_table_says_it_scrolls(signed_in, live_server):
    page = signed_in
    _open(page, f"{live_server.url}/compare/?by=llm_model", "compare-llm")

    page.click("a.more-columns")
    page.wait_for_load_state("networkidle")

    assert "columns=all" in page.url and "by=llm_model" in page.url
    assert page.locator("#comparison th", has_text="Requests/s while serving").count() == 1
    assert "scrolls" in page.locator("#comparison").locator("..").get_attribute("class")
    assert page.locator("#comparison").locator("..").evaluate("card => getComputedStyle(card, '::before').content")


def test_no_page_scrolls_sideways_and_no_chart_label_is_clipped(signed_in, live_server):
    page = signed_in
    node = Node.objects.order_by("pk").first()
    paths = [
        "/finance/", "/finance/?period=7d&granularity=day", "/finance/prices/", "/sustainability/",
        "/compare/", "/compare/?by=gpu_model", "/compare/?by=llm_model", "/compare/?by=llm_model&columns=all",
        "/nodes/", f"/nodes/{node.pk}/", "/advice/", "/scenarios/", "/fleet/tokens/",
    ]  # fmt: skip
    wide, clipped = {}, {}
    for path in paths:
        name = path.strip("/").replace("/", "-").replace("?", "-").replace("&", "-").replace("=", "-")
        _open(page, f"{live_server.url}{path}", name)
        width = page.evaluate("document.scrollingElement.scrollWidth")
        if width > page.evaluate("window.innerWidth"):
            wide[path] = width
        if found := page.evaluate(CLIPPED_LABELS):
            clipped[path] = found

    assert wide == {}
    assert clipped == {}
    assert page.console_errors == []  # type: ignore[attr-defined]
