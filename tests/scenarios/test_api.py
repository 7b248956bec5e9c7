"""The scenarios API: create, list, read, run (a Celery task) and result, scoped to the user's organizations."""

from __future__ import annotations

import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from accounting.models import GpuAsset, NodeHourLedger
from accounting.site_hours import site_hours_rebuild
from advice.models import WorkloadClass
from fleets.models import Role
from fleets.services import credential_issue
from grid.models import GridIntensity
from scenarios.models import Scenario
from scenarios.tasks import scenario_run_task
from tests.helpers.factories import GpuFactory, NodeFactory
from tests.helpers.scenarios_data import HOURS, acme_ledger

pytestmark = pytest.mark.django_db

PERIOD = {"start": "2026-01-05T00:00:00Z", "end": "2026-01-05T02:00:00Z"}


@pytest.fixture
def acme():
    return acme_ledger()


def created(client, acme, changes, name="what if"):
    body = {"organization": acme["organization"].slug, "name": name, **PERIOD, "changes": changes}
    response = client.post("/api/v1/scenarios/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def run_eagerly(client, scenario_id, django_capture_on_commit_callbacks):
    """POST .../run/, then the task the commit enqueued, run in this process (eagerly)."""
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(f"/api/v1/scenarios/{scenario_id}/run/")
    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    assert len(callbacks) == 1  # the task is sent once the claim is committed
    assert scenario_run_task.apply(args=[scenario_id]).get() == "done"
    return client.get(f"/api/v1/scenarios/{scenario_id}/result/")


def test_a_lifetime_extension_from_4_to_8_years_halves_embodied_per_token(
    client_as, acme, django_capture_on_commit_callbacks
):
    client = client_as(Role.VIEWER, acme["organization"])
    scenario = created(client, acme, [{"kind": "lifetime", "fleet": acme["enterprise"].pk, "extra_years": 4}])
    ledger_before = list(NodeHourLedger.objects.order_by("pk").values())

    response = run_eagerly(client, scenario["id"], django_capture_on_commit_callbacks)

    assert response.status_code == 200
    fleets = {f["fleet"]: f for f in response.json()["result"]["fleets"]}
    enterprise = fleets["enterprise"]
    assert enterprise["actual"]["embodied_gco2e_per_1m_output_tokens"] == "200.0"
    assert enterprise["scenario"]["embodied_gco2e_per_1m_output_tokens"] == "100.0"
    assert enterprise["scenario"]["location_gco2e_per_1m_output_tokens"] == "2400"  # operational unchanged
    assert fleets["consumer"]["scenario"] == fleets["consumer"]["actual"]
    assert list(NodeHourLedger.objects.order_by("pk").values()) == ledger_before  # the ledger is only read
    detail = client.get(f"/api/v1/scenarios/{scenario['id']}/").json()
    assert detail["progress"] == {"percent": 100.0, "node_hours_replayed": 6, "node_hours_total": 6}


def test_a_lifetime_extension_starts_from_a_cards_own_expected_life(
    client_as, acme, django_capture_on_commit_callbacks
):
    # One enterprise node's card is expected to serve 2 of its 4 catalog years: the ledger amortised it at
    # 1/2 a year; +4 years: 1/6 a year, a third. The other node's (no asset): 4 / 8, a half.
    node = acme["enterprise"].nodes.order_by("pk").first()
    GpuAsset.objects.create(gpu=GpuFactory(node=node), expected_own_years=Decimal(2))
    client = client_as(Role.VIEWER, acme["organization"])
    scenario = created(client, acme, [{"kind": "lifetime", "fleet": acme["enterprise"].pk, "extra_years": 4}])

    response = run_eagerly(client, scenario["id"], django_capture_on_commit_callbacks)

    enterprise = {f["fleet"]: f for f in response.json()["result"]["fleets"]}["enterprise"]
    # 200 g per 1M output tokens on each node: (200 / 3 + 200 / 2) / 2 = 83.33
    assert enterprise["scenario"]["embodied_gco2e_per_1m_output_tokens"] == "83.33"


def test_a_zone_move_uses_the_zones_stored_hours_and_scales_location_carbon_by_the_intensity_ratio(
    client_as, acme, django_capture_on_commit_callbacks
):
    GridIntensity.objects.bulk_create(
        GridIntensity(
            zone="FR",
            hour_start=hour,
            kind="average",
            source="csv:test",
            gco2e_per_kwh=Decimal(100),
            fetched_at=timezone.now(),
        )
        for hour in HOURS
    )
    client = client_as(Role.ADMIN, acme["organization"])
    scenario = created(client, acme, [{"kind": "move", "fleet": acme["enterprise"].pk, "zone": "FR"}])

    result = run_eagerly(client, scenario["id"], django_capture_on_commit_callbacks).json()["result"]

    enterprise = next(f for f in result["fleets"] if f["fleet"] == "enterprise")
    assert enterprise["actual"]["location_gco2e_per_1m_output_tokens"] == "2400"  # 400 g/kWh
    assert enterprise["scenario"]["location_gco2e_per_1m_output_tokens"] == "600.0"  # x 100 / 400
    assert "zone FR: 2 of 2 hours from stored hourly values" in result["notes"][0]


def test_routing_all_llama_traffic_to_the_consumer_fleet_shows_its_p99_ttft(
    client_as, acme, django_capture_on_commit_callbacks
):
    client = client_as(Role.VIEWER, acme["organization"])
    change = {"kind": "routing", "llm_model": "llama-8b", "from_fleet": acme["enterprise"].pk,
              "to_fleet": acme["consumer"].pk, "share": "1"}  # fmt: skip
    scenario = created(client, acme, [change])

    result = run_eagerly(client, scenario["id"], django_capture_on_commit_callbacks).json()["result"]

    model = result["llm_models"][0]
    assert model["llm_model"] == "llama-8b"
    assert model["actual_p99_ttft_s"] == 0.973  # [4000, 2000, 0]: rank 5940 at 97 % of (0.1, 1]
    assert model["scenario_p99_ttft_s"] == 0.991  # the consumer fleet's shape
    assert result["total"]["scenario"]["cost_per_1m_output_tokens"] == "17.50"


def test_a_run_that_the_data_cannot_answer_fails_with_the_reason(client_as, acme, django_capture_on_commit_callbacks):
    client = client_as(Role.VIEWER, acme["organization"])
    change = {"kind": "nodes", "fleet": acme["consumer"].pk, "gpu_model": "h100-sxm", "nodes": 1}
    scenario = created(client, acme, [change])

    with django_capture_on_commit_callbacks(execute=False):
        client.post(f"/api/v1/scenarios/{scenario['id']}/run/")
    assert scenario_run_task.apply(args=[scenario["id"]]).get() == "failed"

    detail = client.get(f"/api/v1/scenarios/{scenario['id']}/").json()
    assert detail["status"] == "failed"
    assert "no measured node-hours of GPU model 'h100-sxm'" in detail["error"]
    assert client.get(f"/api/v1/scenarios/{scenario['id']}/result/").status_code == 409


def test_a_scenario_runs_once_at_a_time_and_has_no_result_before(client_as, acme, django_capture_on_commit_callbacks):
    client = client_as(Role.VIEWER, acme["organization"])
    scenario = created(client, acme, [{"kind": "move", "fleet": acme["enterprise"].pk, "pue": "1.2"}])
    assert client.get(f"/api/v1/scenarios/{scenario['id']}/result/").status_code == 409

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert client.post(f"/api/v1/scenarios/{scenario['id']}/run/").status_code == 202
        again = client.post(f"/api/v1/scenarios/{scenario['id']}/run/")

    assert again.status_code == 409
    assert "already queued" in again.json()["detail"]
    assert len(callbacks) == 1


def test_another_organizations_scenarios_answer_404_and_are_not_listed(client_as, acme, org_b):
    mine = client_as(Role.ADMIN, acme["organization"])
    scenario = created(mine, acme, [{"kind": "move", "fleet": acme["enterprise"].pk, "pue": "1.2"}])
    other = client_as(Role.ADMIN, org_b)

    for method, path in [("get", ""), ("post", "run/"), ("get", "result/")]:
        response = getattr(other, method)(f"/api/v1/scenarios/{scenario['id']}/{path}")
        assert response.status_code == 404, path
    assert other.get("/api/v1/scenarios/").json() == []
    assert [s["name"] for s in mine.get("/api/v1/scenarios/").json()] == ["what if"]
    body = {"organization": acme["organization"].slug, "name": "x", **PERIOD, "changes": [{"kind": "move"}]}
    assert other.post("/api/v1/scenarios/", body, format="json").status_code == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"changes": [{"kind": "teleport"}]}, "changes[0].kind: one of nodes, lifetime, move, tenure, routing"),
        ({"start": "2026-01-05T00:30:00Z"}, "start: must be on a whole hour"),
        ({"end": "2026-01-04T00:00:00Z"}, "end: must be after start"),
        ({"start": "2024-01-01T00:00:00Z"}, "end: a period of at most 366 days"),
        ({"changes": [{"kind": "move", "fleet": "FLEET", "zone": "NOWHERE"}]}, "changes[0].zone: no intensity known"),
        ({"changes": [{"kind": "move", "fleet": 999999, "pue": 2}]}, "changes[0]: no fleet 999999 in organization"),
    ],
)
def test_invalid_scenarios_answer_400_naming_the_field(client_as, acme, body, message):
    client = client_as(Role.VIEWER, acme["organization"])
    fleet = acme["enterprise"].pk
    data = {"organization": acme["organization"].slug, "name": "bad", **PERIOD,
            "changes": [{"kind": "move", "fleet": fleet, "pue": 2}], **body}  # fmt: skip
    for change in data["changes"]:
        if change.get("fleet") == "FLEET":
            change["fleet"] = fleet

    response = client.post("/api/v1/scenarios/", data, format="json")

    assert response.status_code == 400
    assert message in str(response.json())
    assert Scenario.objects.count() == 0


@pytest.mark.celery_worker
def test_a_run_on_a_real_worker_stores_its_result(celery_worker_process, transactional_db, client_as):
    acme = acme_ledger("Acme Worker")
    client = client_as(Role.VIEWER, acme["organization"])
    change = {"kind": "nodes", "fleet": acme["enterprise"].pk, "gpu_model": "h100-sxm", "nodes": 2}
    scenario = created(client, acme, [change])

    assert client.post(f"/api/v1/scenarios/{scenario['id']}/run/").status_code == 202
    deadline = time.monotonic() + 60
    while client.get(f"/api/v1/scenarios/{scenario['id']}/").json()["status"] != "done":
        assert time.monotonic() < deadline, "the worker did not finish the run"
        time.sleep(0.2)

    enterprise = next(f for f in client.get(f"/api/v1/scenarios/{scenario['id']}/result/").json()["result"]["fleets"]
                      if f["fleet"] == "enterprise")  # fmt: skip
    assert (enterprise["actual"]["cost"], enterprise["scenario"]["cost"]) == ("86.00", "172.00")


@pytest.mark.parametrize("path", ["", "1/", "1/run/", "1/result/"])
def test_the_scenarios_api_needs_a_personal_token(path):
    client = APIClient()
    assert client.get(f"/api/v1/scenarios/{path}").status_code == 401
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {credential_issue(node=NodeFactory())}")
    assert client.get(f"/api/v1/scenarios/{path}").status_code == 403


def test_an_organization_parameter_with_a_nul_is_refused_with_400(client_as, acme):
    client = client_as(Role.VIEWER, acme["organization"])

    assert client.get("/api/v1/scenarios/?organization=a%00b").status_code == 400


def test_a_routing_named_by_an_unknown_workload_class_answers_400(client_as, acme):
    client = client_as(Role.VIEWER, acme["organization"])
    change = {"kind": "routing", "workload_class": "nightly", "from_fleet": acme["enterprise"].pk,
              "to_fleet": acme["consumer"].pk, "share": 1}  # fmt: skip
    body = {"name": "x", **PERIOD, "changes": [change]}

    response = client.post("/api/v1/scenarios/", body, format="json")

    assert response.status_code == 400
    assert response.json() == {"detail": "changes[0].workload_class: no class 'nightly' in yours"}


def test_runs_are_rate_limited_per_user(client_as, acme, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setitem(ScopedRateThrottle.THROTTLE_RATES, "scenario_runs", "1/hour")
    client = client_as(Role.VIEWER, acme["organization"])
    scenario = created(client, acme, [{"kind": "move", "fleet": acme["enterprise"].pk, "pue": "1.2"}])

    with django_capture_on_commit_callbacks(execute=False):
        assert client.post(f"/api/v1/scenarios/{scenario['id']}/run/").status_code == 202
        refused = client.post(f"/api/v1/scenarios/{scenario['id']}/run/")

    assert refused.status_code == 429
    assert "Retry-After" in refused


def test_a_routing_named_by_workload_class_moves_its_model_and_the_result_reports_each_class(
    client_as, acme, django_capture_on_commit_callbacks
):
    WorkloadClass.objects.create(
        organization=acme["organization"], name="chat", llm_model="llama-8b", ttft_target_ms=980,
        ttft_percentile=99, expected_output_tokens_per_day=10**9,
    )  # fmt: skip
    client = client_as(Role.VIEWER, acme["organization"])
    change = {"kind": "routing", "workload_class": "chat", "from_fleet": acme["enterprise"].pk,
              "to_fleet": acme["consumer"].pk, "share": 1}  # fmt: skip
    scenario = created(client, acme, [change])
    assert scenario["changes"][0]["llm_model"] == "llama-8b"

    result = run_eagerly(client, scenario["id"], django_capture_on_commit_callbacks).json()["result"]

    (chat,) = result["workload_classes"]
    # P99 as measured 973 ms (within 980); all on the consumer fleet, 991 ms: the target no longer holds
    assert (chat["workload_class"], chat["percentile"], chat["ttft_target_ms"]) == ("chat", "P99", 980)
    assert (chat["actual_ttft_ms"], chat["scenario_ttft_ms"]) == (973.0, 991.0)
    assert (chat["actual_meets_target"], chat["scenario_meets_target"]) == (True, False)


def test_node_hours_without_a_hardware_price_are_said_missing_not_zero(
    client_as, acme, django_capture_on_commit_callbacks
):
    # the consumer node's 2 hours had no hardware price in force: the ledger holds no hardware cost for them
    NodeHourLedger.objects.filter(fleet=acme["consumer"]).update(
        pricing_price_id="unpriced", hardware_cost=0, cost=Decimal("0.75")
    )
    site_hours_rebuild()  # lines written by hand: their site-hours summed again
    client = client_as(Role.VIEWER, acme["organization"])
    rent = {"kind": "tenure", "fleet": acme["consumer"].pk, "mode": "rent", "rate_per_gpu_h": "1.00"}
    scenario = created(client, acme, [rent])
    result = run_eagerly(client, scenario["id"], django_capture_on_commit_callbacks).json()["result"]
    # the scenario's rent (16 GPU-hours x 1.00) is not a cost increase over a measured zero: the actual
    # side's hardware is missing for those 2 node-hours, and the result says so
    assert result["hardware_unpriced_node_hours"] == "2"
    assert any("2 node-hours had no hardware price in force" in note for note in result["notes"])


def test_a_run_whose_worker_died_is_failed_once_its_lease_lapses_and_runs_again_at_once(
    client_as, acme, django_capture_on_commit_callbacks
):
    client = client_as(Role.VIEWER, acme["organization"])
    scenario = created(client, acme, [{"kind": "move", "fleet": acme["enterprise"].pk, "pue": "1.2"}])
    lapsed = timezone.now() - timedelta(seconds=1)
    # a worker took it, wrote progress, and died: its lease ran out a second ago
    Scenario.objects.filter(pk=scenario["id"]).update(status="running", started_at=lapsed, lease_until=lapsed)

    detail = client.get(f"/api/v1/scenarios/{scenario['id']}/").json()
    assert detail["status"] == "failed"
    assert detail["error"].startswith("the worker stopped: no progress since ")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert client.post(f"/api/v1/scenarios/{scenario['id']}/run/").status_code == 202
    assert len(callbacks) == 1


def test_a_run_that_renews_its_lease_is_not_taken_again(client_as, acme):
    client = client_as(Role.VIEWER, acme["organization"])
    scenario = created(client, acme, [{"kind": "move", "fleet": acme["enterprise"].pk, "pue": "1.2"}])
    started = timezone.now() - timedelta(hours=1)  # long ago, but its progress renewed the lease
    Scenario.objects.filter(pk=scenario["id"]).update(
        status="running", started_at=started, lease_until=timezone.now() + timedelta(minutes=1)
    )
    assert client.post(f"/api/v1/scenarios/{scenario['id']}/run/").status_code == 409
    assert client.get(f"/api/v1/scenarios/{scenario['id']}/").json()["status"] == "running"


def test_the_list_shows_a_run_whose_lease_lapsed_failed_with_the_reason(client_as, acme):
    client = client_as(Role.VIEWER, acme["organization"])
    dead = created(client, acme, [{"kind": "move", "fleet": acme["enterprise"].pk, "pue": "1.2"}], name="dead")
    live = created(client, acme, [{"kind": "move", "fleet": acme["enterprise"].pk, "pue": "1.3"}], name="live")
    lapsed, now = timezone.now() - timedelta(seconds=1), timezone.now()
    Scenario.objects.filter(pk=dead["id"]).update(status="running", started_at=lapsed, lease_until=lapsed)
    Scenario.objects.filter(pk=live["id"]).update(
        status="running", started_at=now, lease_until=now + timedelta(minutes=1)
    )

    listed = {row["name"]: row for row in client.get("/api/v1/scenarios/").json()}

    assert (listed["dead"]["status"], listed["live"]["status"]) == ("failed", "running")
    assert listed["dead"]["error"].startswith("the worker stopped: no progress since ")
    assert Scenario.objects.get(pk=dead["id"]).status == "failed"
