"""Every dashboard page, with data and without, as each role: what a user would read on it."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from accounting.site_hours import site_hours_rebuild
from accounting.templatetags.ledger import ms_from_s, number, price
from common.charts import figure_html, series_lines
from fleets.models import Node, Role
from tests.helpers.dashboard_data import recent_hours, two_fleets
from tests.helpers.factories import (
    GridIntensityFactory,
    MembershipFactory,
    NodeFactory,
    OrganizationFactory,
    UserFactory,
)

PAGES = ["/finance/", "/sustainability/", "/compare/", "/nodes/"]
ROLES = [r.value for r in Role]


@pytest.fixture
def organization(db):
    return OrganizationFactory(name="Acme AI", slug="acme-ai")


def member(organization, role):
    user = UserFactory(username=f"{role}-user")
    MembershipFactory(user=user, organization=organization, role=role)
    return user


@pytest.fixture
def fleets(organization):
    return two_fleets(organization)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_with_data_for_every_role(client, organization, fleets, path, role):
    client.force_login(member(organization, role))

    response = client.get(path)

    assert response.status_code == 200
    html = response.content.decode()
    assert "No data for this period yet" not in html
    assert "Acme AI" in html


@pytest.mark.parametrize("path", PAGES)
def test_every_page_shows_an_empty_state_without_data(client, organization, path):
    client.force_login(member(organization, "viewer"))

    response = client.get(path)

    assert response.status_code == 200
    assert re.search(r"No (data for this period yet|nodes yet)", response.content.decode())


@pytest.mark.parametrize("path", PAGES)
def test_pages_ask_anonymous_users_to_log_in(client, path):
    response = client.get(path)

    assert response.status_code == 302 and response.url.startswith("/accounts/login/")


def test_finance_tiles_match_the_report_api_for_the_same_period(client, organization, fleets):
    client.force_login(member(organization, "finance"))
    page = client.get("/finance/?period=7d").content.decode()
    period = client.get("/finance/?period=7d").context["period"]

    api = client.get(
        "/api/v1/reports/usage/",
        {"start": period.start.isoformat(), "end": period.end.isoformat(), "granularity": "total", "currency": "USD"},
    ).json()["results"][0]

    assert _tile(page, "tile-cost") == Decimal(str(api["cost"]))
    assert _tile(page, "tile-cost-per-1m") == Decimal(str(api["cost_per_1m_tokens"]))
    assert _tile(page, "tile-idle") == Decimal(str(api["idle_cost"]))


def test_sustainability_tiles_match_the_report_api(client, organization, fleets):
    client.force_login(member(organization, "sustainability"))
    response = client.get("/sustainability/?period=7d")
    period = response.context["period"]

    api = client.get(
        "/api/v1/reports/sustainability/",
        {"start": period.start.isoformat(), "end": period.end.isoformat(), "organization": "acme-ai"},
    ).json()

    assert _tile(response.content.decode(), "tile-location") == Decimal(str(api["location_tco2e"]))
    assert _tile(response.content.decode(), "tile-sci") == Decimal(str(api["sci_gco2e_per_1k_tokens"]))
    assert "annual" in response.content.decode()  # fallback hours are labelled in the data-quality panel


def test_per_token_carbon_tiles_without_a_figure_say_why(client, organization, fleets):
    # given: the period's lines served no tokens and have no grid intensity (their zone unknown)
    NodeHourLedger.objects.update(
        prompt_tokens=0, generation_tokens=0, location_gco2e_per_kwh=None, location_co2e_g=None
    )
    site_hours_rebuild()  # lines written by hand: their site-hours summed again
    client.force_login(member(organization, "sustainability"))
    # when
    html = client.get("/sustainability/?period=7d").content.decode()
    # then: each tile names what is missing, as the SCI block of the Scope 2 report does
    sci = _tile_html(html, "tile-sci")
    assert "not stated: no tokens served in the period; intensity coverage incomplete:" in sci
    assert "facility kWh have no grid intensity" in sci
    assert "not stated: no output tokens served in the period" in _tile_html(html, "tile-sci-output")


def test_per_token_carbon_tiles_with_a_figure_give_no_reason(client, organization, fleets):
    client.force_login(member(organization, "sustainability"))
    html = client.get("/sustainability/?period=7d").content.decode()
    assert "not stated" not in _tile_html(html, "tile-sci") + _tile_html(html, "tile-sci-output")


def test_carbon_per_token_with_kwh_of_no_intensity_is_not_stated_on_the_pages_and_says_why(
    client, organization, fleets
):
    # given the enterprise site in a zone with hourly values for its first two hours, none for the last, and no
    # annual average to stand in: a third of its kWh have no grid intensity
    enterprise, _ = fleets
    node = Node.objects.get(fleet=enterprise)
    node.site.grid_zone, node.site.country = "ZZ-NOWHERE", "ZZ"
    node.site.save()
    hours = recent_hours()
    for hour in hours[:-1]:
        GridIntensityFactory(zone="ZZ-NOWHERE", hour_start=hour, source="csv:own")
    ledger_node_hours_compute(node_id=node.pk, hour_starts=hours)
    client.force_login(member(organization, "sustainability"))
    # when
    sustainability = client.get("/sustainability/?period=7d").content.decode()
    compare = client.get("/compare/?period=7d").content.decode()
    # then: no figure (the known carbon over every token would understate it), and why, on both pages
    for tile in ("tile-sci", "tile-sci-output"):
        shown = _tile_html(sustainability, tile)
        assert 'data-value=""' in shown and "—" in shown
        assert "not stated: intensity coverage incomplete:" in shown and "facility kWh have no grid intensity" in shown
    note = sustainability[sustainability.index('id="sci-chart-note"') :]
    assert note.startswith('id="sci-chart-note"') and "facility kWh have no grid intensity" in note.split("</p>")[0]
    row = compare[compare.index('<tr data-fleet="enterprise"') :]
    cell = row[row.index('<td class="g-out"') : row.index("</td>", row.index('<td class="g-out"'))]
    assert 'data-value=""' in cell and "—" in cell
    assert "not stated: intensity coverage incomplete:" in cell


def test_the_carbon_per_token_chart_has_no_note_when_every_kwh_has_an_intensity(client, organization, fleets):
    client.force_login(member(organization, "sustainability"))
    assert 'id="sci-chart-note"' not in client.get("/sustainability/?period=7d").content.decode()


def _tile_html(html, tile_id):
    start = html.index(f'id="{tile_id}"')
    end = html.find('<div class="tile"', start)
    return html[start : end if end >= 0 else None]


def test_comparison_shows_consumer_cheaper_and_enterprise_faster_and_leaner(client, organization, fleets):
    client.force_login(member(organization, "engineer"))
    enterprise, _ = fleets

    rows = client.get(f"/compare/?baseline={enterprise.pk}").context["rows"]

    by_fleet = {row["fleet_name"]: row for row in rows}
    assert by_fleet["consumer"]["cost_per_1m_tokens"] < by_fleet["enterprise"]["cost_per_1m_tokens"]
    assert by_fleet["enterprise"]["ttft_p99_ms"] < by_fleet["consumer"]["ttft_p99_ms"]
    assert by_fleet["enterprise"]["it_j_per_token"] < by_fleet["consumer"]["it_j_per_token"]
    assert by_fleet["enterprise"]["cost_per_1m_tokens_vs_baseline"] == 1.0


def test_the_comparison_options_are_parsed_and_hand_edited_junk_shows_the_defaults(client, organization, fleets):
    client.force_login(member(organization, "engineer"))
    enterprise, consumer = fleets

    chosen = client.get(f"/compare/?baseline={consumer.pk}&by=gpu_model")
    assert chosen.context["baseline"] == consumer and chosen.context["by_model"] is True

    for junk in ("baseline=%C2%B2", "baseline=99999999999999999999", "baseline=-1", "by=%00", "currency=%3Cb%3E"):
        response = client.get(f"/compare/?{junk}")
        assert response.status_code == 200, junk
        assert response.context["baseline"] == min((enterprise, consumer), key=lambda f: f.name)
        assert response.context["by_model"] is False
    assert client.get("/finance/?currency=usd%00").status_code == 200


def test_the_period_picker_changes_the_figures(client, organization, fleets):
    client.force_login(member(organization, "finance"))

    week = client.get("/finance/?period=7d").context["total"]
    last_month = client.get("/finance/?period=last-month").context.get("total")

    assert week["cost"] > 0
    assert last_month is None or last_month["cost"] != week["cost"]


def test_a_bad_period_is_explained_and_the_default_shown(client, organization, fleets):
    client.force_login(member(organization, "finance"))

    response = client.get("/finance/?start=2026-13-01&end=2026-11-30")

    assert response.status_code == 200
    assert "start and end must be dates like 2026-11-01" in response.content.decode()


def test_users_see_only_their_organizations_data(client, organization, fleets):
    stranger = member(OrganizationFactory(name="Other Co", slug="other-co"), "admin")
    client.force_login(stranger)

    for path in PAGES:
        html = client.get(path).content.decode()
        assert "enterprise" not in html and "Acme AI" not in html
    node_id = fleets[0].nodes.get().pk
    assert client.get(f"/nodes/{node_id}/").status_code == 404


def test_nodes_page_shows_a_dash_for_a_node_without_ledger_lines_in_the_period(client, organization, fleets):
    # given: a newly enrolled node, no line yet, beside nodes with lines
    NodeFactory(fleet=fleets[0], site=fleets[0].nodes.first().site, hostname="gpu-new")
    client.force_login(member(organization, "engineer"))

    response = client.get("/nodes/")

    assert response.status_code == 200
    row = re.search(r"<tr>\s*<td><a [^>]*>gpu-new</a>.*?</tr>", response.content.decode(), re.S)
    assert row is not None and "—" in row.group(0)


@pytest.mark.parametrize(("value", "shown"), [(None, "—"), ("", "—"), ("n/a", "—"), (1234.56, "1,234.6"), ("7", "7.0")])
def test_number_filter_shows_a_dash_for_what_is_not_a_number(value, shown):
    assert number(value) == shown


def test_node_page_shows_gpus_serving_and_the_hourly_ledger(client, organization, fleets):
    client.force_login(member(organization, "engineer"))
    node = fleets[0].nodes.get()

    response = client.get(f"/nodes/{node.pk}/")

    html = response.content.decode()
    assert response.status_code == 200
    assert html.count("GPU-enterprise-") == 8
    for chart in (
        "chart-power",
        "chart-energy",
        "chart-util",
        "chart-memory",
        "chart-temp",
        "chart-tokens",
        "chart-ttft",
    ):
        assert f'id="{chart}"' in html
    assert len(response.context["ledger"]) == 3


def test_organization_switcher_only_accepts_the_users_organizations(client, organization, fleets):
    user = member(organization, "viewer")
    other = OrganizationFactory(name="Beta", slug="beta")
    MembershipFactory(user=user, organization=other, role="viewer")
    foreign = OrganizationFactory(name="Foreign", slug="foreign")
    client.force_login(user)

    assert client.post("/organization/", {"organization": foreign.pk, "next": "/finance/"}).status_code == 400
    switched = client.post("/organization/", {"organization": other.pk, "next": "/finance/"})
    assert switched.status_code == 302
    assert "No data for this period yet" in client.get("/finance/").content.decode()


def test_charts_are_built_in_python_without_http():
    figure = series_lines("Power", "W", {"GPU 0": [(1, 100.0), (2, 200.0)]})

    assert [trace.y for trace in figure.data] == [(100.0, 200.0)]
    assert 'id="chart-x"' in figure_html(figure, div_id="chart-x")


def _tile(html: str, tile_id: str) -> Decimal:
    match = re.search(rf'id="{tile_id}">.*?data-value="([^"]*)"', html, re.S)
    assert match, f"tile {tile_id} not on the page"
    return Decimal(match.group(1))


def test_finance_change_is_against_the_previous_periods_cost_in_the_report_api(client, organization, fleets):
    # given: one line moved to the day before the day of the latest line
    latest, moved = NodeHourLedger.objects.order_by("-hour_start", "pk")[:2]
    day = latest.hour_start.date()
    NodeHourLedger.objects.filter(pk=moved.pk).update(hour_start=latest.hour_start - timedelta(days=1))
    site_hours_rebuild()  # lines written by hand: their site-hours summed again
    client.force_login(member(organization, "finance"))

    response = client.get("/finance/", {"start": day.isoformat(), "end": day.isoformat()})

    def api_cost(first):
        query = {"start": first.isoformat(), "end": (first + timedelta(days=1)).isoformat(), "granularity": "total"}
        return Decimal(str(client.get("/api/v1/reports/usage/", query).json()["results"][0]["cost"]))

    now, before = api_cost(day), api_cost(day - timedelta(days=1))
    assert response.context["previous_cost"] == before
    assert response.context["change"] == pytest.approx(float((now - before) / before))


@pytest.mark.parametrize(
    ("value", "currency", "shown"),
    [
        ("3.000000", "USD", "3.00 USD"),  # the minor unit, not the column's six decimals
        ("8000.000000", "EUR", "8,000.00 EUR"),
        ("0.004213", "USD", "0.004213 USD"),  # sub-cent: every digit, never 0.00
        ("2.125000", "USD", "2.125 USD"),  # finer than a cent: as charged, not rounded
        ("1500", "JPY", "1,500 JPY"),  # a currency without a minor unit
        (None, "USD", "—"),
    ],
)
def test_a_price_shows_the_currencys_minor_unit_or_every_finer_digit(value, currency, shown):
    assert price(value, currency) == shown


def test_seconds_are_shown_in_milliseconds_like_every_latency():
    assert (ms_from_s("0.0973"), ms_from_s(1.25, 1), ms_from_s(None)) == ("97", "1,250.0", "—")


@pytest.mark.parametrize("path", PAGES)
def test_every_page_says_how_far_its_complete_hours_reach(client, organization, fleets, path):
    """Each figure page names the end of the organization's last complete hour, the API's ``complete_through``."""
    from django.utils import timezone

    from reports.selectors.complete import complete_through

    client.force_login(member(organization, "viewer"))

    html = client.get(path).content.decode()

    through = complete_through(organization_ids=[organization.pk], now=timezone.now())
    assert f"complete through {through:%Y-%m-%d %H:%M} UTC" in html


def test_nodes_page_shows_each_node_s_energy_cost_and_tokens_as_the_usage_report_by_node(client, organization, fleets):
    client.force_login(member(organization, "finance"))
    page = client.get("/nodes/?period=7d")
    period = page.context["period"]

    asked = {
        "start": period.start.isoformat(),
        "end": period.end.isoformat(),
        "group_by": "node",
        "granularity": "total",
    }
    report = client.get("/api/v1/reports/usage/", asked).json()

    assert len(report["results"]) == 2
    for row in report["results"]:
        cells = re.search(rf"<tr>\s*<td><a [^>]*>{row['group_label']}</a>.*?</tr>", page.content.decode(), re.S)
        shown = dict(re.findall(r'<td class="([a-z-]+)">([^<]*)</td>', cells.group(0)))
        assert shown["cost"].strip() == f"{row['cost']} {row['currency']}"
        assert shown["tokens"].strip() == f"{row['tokens']:,}"
        assert shown["facility-kwh"].strip() == f"{Decimal(row['facility_kwh']):,.1f}"
