"""The /scenarios/ pages: list and create form, a scenario's run button, progress and result table."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from advice.models import WorkloadClass
from fleets.models import Role
from scenarios.models import Scenario
from scenarios.tasks import scenario_run_task
from tests.helpers.factories import MembershipFactory
from tests.helpers.scenarios_data import acme_ledger

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme():
    return acme_ledger()


@pytest.fixture
def signed_in(client, acme):
    client.force_login(MembershipFactory(organization=acme["organization"], role=Role.VIEWER).user)
    return client


def form(acme, **fields):
    return {"name": "eight years", "start": "2026-01-05", "end": "2026-01-06", "kind": "lifetime",
            "fleet": acme["enterprise"].pk, "mode": "rent", **fields}  # fmt: skip


def test_the_form_creates_a_scenario_and_the_run_button_shows_the_result_side_by_side(
    signed_in, acme, django_capture_on_commit_callbacks
):
    page = signed_in.get("/scenarios/")
    assert page.status_code == 200
    assert b'href="/scenarios/" aria-current="page">Scenarios</a>' in page.content

    created = signed_in.post("/scenarios/", form(acme, extra_years="4"))

    scenario = Scenario.objects.get()
    assert created.status_code == 302 and created["Location"] == f"/scenarios/{scenario.pk}/"
    assert scenario.changes == [{"kind": "lifetime", "fleet": acme["enterprise"].pk, "extra_years": "4"}]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        signed_in.post(f"/scenarios/{scenario.pk}/run/")
    assert len(callbacks) == 1
    queued = signed_in.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert 'http-equiv="refresh"' in queued and "Queued" in queued
    scenario_run_task.apply(args=[scenario.pk])
    html = signed_in.get(f"/scenarios/{scenario.pk}/").content.decode()
    assert 'http-equiv="refresh"' not in html
    row = html.split('data-figure="embodied_gco2e_per_1m_output_tokens"')[1].split("</tr>")[0]
    # the organization: (4 x 200 + 2 x 100) g over 5M output tokens = 200; enterprise's 800 g over 8 years: 120
    assert '<td class="actual">200.0</td><td class="scenario">120.0</td><td class="change">-40.0 %</td>' in row
    assert "Run again" in html


def test_a_form_with_an_invalid_change_answers_400_with_the_reason(signed_in, acme):
    response = signed_in.post("/scenarios/", form(acme, kind="routing", llm_model="llama-8b", share="0.5"))

    assert response.status_code == 400
    assert "changes[0].to_fleet" in response.content.decode()
    assert Scenario.objects.count() == 0


def test_a_running_scenario_shows_its_progress(signed_in, acme):
    scenario = Scenario.objects.create(organization=acme["organization"], name="big", period_start="2026-01-05T00:00Z",
                                       period_end="2026-01-06T00:00Z", changes=[], status="running",
                                       progress_pct=42.0, node_hours_replayed=420, node_hours_total=1000)  # fmt: skip

    html = signed_in.get(f"/scenarios/{scenario.pk}/").content.decode()

    assert "42 %, 420 of 1000 node-hours replayed" in html
    assert 'id="run-form"' not in html


def test_another_organizations_scenario_page_is_404(client, acme, org_b):
    scenario = Scenario.objects.create(
        organization=acme["organization"], name="theirs", period_start="2026-01-05T00:00Z",
        period_end="2026-01-06T00:00Z", changes=[],
    )  # fmt: skip
    client.force_login(MembershipFactory(organization=org_b, role=Role.ADMIN).user)

    assert client.get(f"/scenarios/{scenario.pk}/").status_code == 404
    assert client.post(f"/scenarios/{scenario.pk}/run/").status_code == 404
    assert "theirs" not in client.get("/scenarios/").content.decode()


def test_the_form_routes_a_workload_class(signed_in, acme):
    WorkloadClass.objects.create(
        organization=acme["organization"], name="chat", llm_model="llama-8b", ttft_target_ms=500,
        expected_output_tokens_per_day=10**9,
    )  # fmt: skip
    assert '<option value="chat">chat</option>' in signed_in.get("/scenarios/").content.decode()

    fields = form(acme, name="chat on consumer", kind="routing", workload_class="chat", to_fleet=acme["consumer"].pk,
                  share="0.5")  # fmt: skip
    assert signed_in.post("/scenarios/", fields).status_code == 302

    (change,) = Scenario.objects.get().changes
    assert change == {"kind": "routing", "llm_model": "llama-8b", "from_fleet": acme["enterprise"].pk,
                      "to_fleet": acme["consumer"].pk, "share": "0.5", "workload_class": "chat"}  # fmt: skip


def test_the_form_moves_a_fleet_to_a_sites_taxes_and_the_page_names_the_site(signed_in, acme):
    site = acme["site"]
    assert f'<option value="{site.pk}">fra-1</option>' in signed_in.get("/scenarios/").content.decode()

    created = signed_in.post("/scenarios/", form(acme, name="taxes of fra-1", kind="move", site=site.pk))

    assert created.status_code == 302
    assert Scenario.objects.get().changes == [{"kind": "move", "fleet": acme["enterprise"].pk, "site": site.pk}]
    assert "fleet = enterprise; site = fra-1" in signed_in.get(created["Location"]).content.decode()


def test_the_result_shows_money_in_its_currency_counts_with_separators_and_latency_in_ms(signed_in, acme):
    created = signed_in.post("/scenarios/", form(acme, extra_years="4"))
    scenario = Scenario.objects.get()
    signed_in.post(f"/scenarios/{scenario.pk}/run/")
    scenario_run_task.apply(args=[scenario.pk])
    scenario.refresh_from_db()

    html = signed_in.get(created["Location"]).content.decode()

    def cell(figure: str, side: str = "actual") -> str:
        return html.split(f'data-figure="{figure}"')[1].split(f'class="{side}">')[1].split("</td>")[0]

    currency = scenario.result["currency"]
    assert cell("output_tokens") == "5,000,000"  # the organization's output tokens of the period
    assert cell("cost").endswith(f" {currency}") and cell("yearly_cost").endswith(f" {currency}")
    assert "," in cell("yearly_output_tokens")
    assert cell("cost_per_1m_output_tokens").endswith(f" {currency}")
    assert "P99 TTFT ms, what happened" in html and "TTFT s" not in html


def test_the_list_page_shows_a_run_whose_lease_lapsed_failed(signed_in, acme):
    lapsed = timezone.now() - timedelta(seconds=1)
    scenario = Scenario.objects.create(
        organization=acme["organization"], name="dead", period_start=lapsed, period_end=lapsed, changes=[],
        status="running", started_at=lapsed, lease_until=lapsed,
    )  # fmt: skip

    html = signed_in.get("/scenarios/").content.decode()

    row = html.split(f'href="/scenarios/{scenario.pk}/"')[1].split("</tr>")[0]
    assert '<td class="status">Failed</td>' in row
    assert Scenario.objects.get().error.startswith("the worker stopped: no progress since ")
