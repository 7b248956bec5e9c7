"""Tenancy probe: every route of the project, walked from Django's URL resolver, is tried by a member of Org B on
Org A's data, and must neither show it, change it, nor fail.

Org A holds one row of every kind the API serves (prices, tariffs, dated PUE, market factors, GPU assets, a
locked period, an instrument with evidence, a workload class, residual mixes, node and personal tokens, a
scenario with a result, a few ledger hours with an LLM model served) and every name it chose starts with
``zz-a``. Bob, an admin of Org B (the strongest role, so a
refusal is never a role's), calls every route with a browser session and with a personal token:

- a route naming one of A's rows answers 404 to every method the route serves (405 to the others), shows
  nothing of A, and leaves A's rows and the audit trail as they were;
- a route without parameters lists none of A's ids, answers ``?organization=<A's id>`` with 400 or 404,
  exports CSV without A's names, and refuses (400/404) a create that names A's fleet, node, site or token;
- A's node token reads no report or list, and cannot report a GPU of B's node;
- Carol, a viewer of A who administers B, writes nothing into A, not even with a row of B naming one of A's.

Org A's own calls with the same bodies succeed (positive controls), and A's own lists and reports hold the
rows and names looked for: a 404 or an absence above is the scoping's, not a malformed request's.

``PROBES`` says how each route is probed and ``EXCLUDED`` why a route is not; a route in neither fails
``test_every_route_is_probed_or_excluded``, so a new route cannot skip the probe.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, TestCase
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from accounting.models import LedgerPending, NodePrice
from accounting.node_hour_lines import ledger_node_hours_compute
from fleets.admin import ORGANIZATION_PATHS
from fleets.models import Gpu, NodeCredential, Organization, PersonalToken, Role, TokenScope
from fleets.personal_tokens import personal_token_create
from fleets.services import credential_issue
from governance.models import AuditEntry
from grid.models import GridIntensity
from reports.selectors import GroupBy
from scenarios.models import Scenario
from scope2.models import InstrumentHour
from telemetry.models import EndpointHourUsage, GpuEpoch, GpuHourUsage, GpuSample, PrometheusSource, ServingEndpoint
from telemetry.partitions import partitions_ensure
from tests.helpers.batches import gpu_ref, make_batch
from tests.helpers.factories import FleetFactory, GpuFactory, MembershipFactory, NodeFactory, SiteFactory, UserFactory
from tests.helpers.uploads import post_and_run, tasks_eager

pytestmark = pytest.mark.django_db

MARK = "zz-a"  # every name Org A chose starts so: it must never reach Org B
HOURS = [datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=n) for n in range(3)]
UNTIL = datetime(2026, 2, 1, tzinfo=UTC)  # A's prices and factors end here; the probes' bodies start later
PERIOD = {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T03:00:00Z"}
METHODS = ("get", "post", "put", "patch", "delete")
WRITES = METHODS[1:]


@dataclass
class World:
    org_a: Organization
    org_b: Organization
    ids: dict[str, int]  # Org A's rows, by kind
    a: APIClient  # Alice, admin of Org A, by personal token
    b_session: Client
    b_token: APIClient
    a_node_token: str
    b_gpu_uuid: str


# --- how each route is probed ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Detail:
    """A route naming one of A's rows: ``args`` fills its path; ``serves`` are the methods its owner may call."""

    args: Callable[[World], dict[str, int]]
    serves: tuple[str, ...]
    body: Callable[[World], dict[str, Any]] = lambda w: {}
    page: bool = False
    any_member_writes: bool = False  # by design any member of the row's organization may call it, viewers too


@dataclass(frozen=True)
class Collection:
    """A route without path parameters: answers the caller's own rows, or creates one."""

    a_ids: Callable[[World], set[int]] | None = None  # A's rows the JSON list would hold (their "id")
    organization: bool = False  # takes ?organization=
    csv: bool = False  # exports CSV (?format=csv)
    creates: Callable[[World], list[dict[str, Any]]] | None = None  # bodies naming A's rows, each refused
    filters: tuple[str, ...] = ()  # query parameters that name a fleet, site or node: A's answer 400/404
    variants: tuple[dict[str, str], ...] = ()  # other shapes of the caller's own report (JSON and CSV)
    writes: str = "post"  # the method of ``creates``
    page: bool = False
    reads: bool = True  # answers GET


@dataclass(frozen=True)
class Special:
    """A route with a probe of its own: the named test of this module."""

    test: str


def _ids(kind: str) -> Callable[[World], set[int]]:
    return lambda w: {w.ids[kind]}


def _price_body(w: World) -> list[dict[str, Any]]:
    return [{"fleet": w.ids["fleet"], "node": w.ids["node"], "kind": "rented", "rate_per_h": "9", "rate_per": "gpu",
             "valid_from": "2026-03-01T00:00:00Z"}]  # fmt: skip


def _csv(name: str, text: str, w: World) -> list[dict[str, Any]]:
    upload = SimpleUploadedFile(name, text.encode())
    return [{"file": upload, "organization": str(w.org_a.pk)}]


def _instrument(w: World) -> dict[str, Any]:
    return {
        "organization": str(w.org_a.pk), "site": w.ids["site"], "kind": "go", "name": "zz-a-go", "volume_mwh": "1",
        "delivery_start": "2025-01-01T00:00:00Z", "delivery_end": "2025-02-01T00:00:00Z", "vintage_year": 2025,
        "generation_zone": "NO", "technology": "hydro",
    }  # fmt: skip


def _scope1(w: World) -> dict[str, Any]:
    return {
        "organization": str(w.org_a.pk), "site": w.ids["site"], "activity": "generator", "co2e_kg": "1",
        "start": "2025-01-01T00:00:00Z", "end": "2025-02-01T00:00:00Z", "description": "zz-a-genset",
    }  # fmt: skip


def _scenario(w: World) -> dict[str, Any]:
    return {
        "organization": str(w.org_a.pk), "name": "zz-a-scenario", **PERIOD,
        "changes": [{"kind": "move", "fleet": w.ids["fleet"], "pue": "1.1"}],
    }  # fmt: skip


def _scenario_form(w: World) -> dict[str, Any]:
    return {"name": "zz-b", "start": "2026-01-01", "end": "2026-01-02", "kind": "move", "fleet": w.ids["fleet"],
            "pue": "1.1"}  # fmt: skip


_DATED = {"pue": "1.9", "gco2e_per_kwh": "1", "valid_from": "2026-05-01T00:00:00Z", "source": "zz-b"}
_CHANGED = {"pue": "1.9", "gco2e_per_kwh": "1"}
_CLASS = {"name": "zz-b-class", "llm_model": "m", "ttft_target_ms": 100, "ttft_percentile": 99,
          "expected_output_tokens_per_day": 1000}  # fmt: skip
_REPORT = Collection(organization=True, csv=True)
_FILTERED = {"fleet": "fleet", "baseline": "fleet", "site": "site", "node": "node"}  # parameter -> A's row

# fmt: off
PROBES: dict[str, Detail | Collection | Special] = {
    # pages
    "home": Collection(page=True),
    "finance": Collection(page=True),
    "sustainability": Collection(page=True),
    "compare": Collection(page=True, filters=("baseline",)),
    "nodes": Collection(page=True),
    "node": Detail(lambda w: {"node_id": w.ids["node"]}, serves=("get",), page=True),
    "advice": Collection(page=True),
    "node-prices-page": Collection(
        page=True,
        creates=lambda w: [{"node": w.ids["node"], "rate_per_h": "9", "rate_per": "gpu", "valid_from": "2026-03-01"}],
    ),
    "node-tokens-page": Collection(
        page=True,
        creates=lambda w: [
            {"action": "revoke", "token": w.ids["node_token"]},
            {"action": "rotate", "node": w.ids["node"], "revoke_others": "on"},
            {"action": "enroll", "fleet": w.ids["fleet"], "site": w.ids["site"], "hostname": "zz-b-page"},
        ],
    ),
    "organization-switch": Special("test_switching_to_another_organization_is_refused"),
    # telemetry
    "ingest": Special("test_a_node_token_reports_only_its_own_gpus_and_reads_nothing"),
    "node-status-list": Collection(a_ids=_ids("node")),
    "node-status-detail": Detail(lambda w: {"node_id": w.ids["node"]}, serves=("get",)),
    # reports
    "reports-usage": Collection(
        organization=True, csv=True, filters=("fleet", "site", "node"),
        variants=tuple({"group_by": by, "granularity": "hour"} for by in GroupBy),
    ),
    "reports-comparison": Collection(
        organization=True, csv=True, filters=("fleet", "baseline"),
        variants=({"by": "gpu_model"}, {"by": "llm_model"}, {"by": "llm_model", "by_load": "true"}),
    ),
    "reports-focus": Collection(organization=True, csv=True, filters=("fleet",), variants=({"granularity": "day"},)),
    "reports-journal": Special("test_the_journal_of_another_organization_is_refused_and_holds_none_of_it"),
    "metrics": Special("test_the_metrics_of_another_organization_hold_none_of_it"),
    "reports-corrections": Collection(organization=True, csv=True, variants=({"by": "restated"},)),
    "reports-sustainability": _REPORT,
    "reports-scope2": _REPORT,
    "reports-scope2-ghg-table": _REPORT,
    "reports-scope2-esrs": Collection(organization=True),  # JSON only
    "reports-load-curves": Collection(organization=True, csv=True, filters=("fleet",)),
    "audit": _REPORT,
    "personal-tokens": Collection(a_ids=_ids("personal_token")),
    "personal-token-revoke": Detail(lambda w: {"token_id": w.ids["personal_token"]}, serves=("delete",)),
    # grid
    "grid-intensity-csv": Special("test_grid_intensities_of_one_organization_stay_its_own"),
    # inputs
    "node-prices": Collection(a_ids=lambda w: {w.ids["node_price"], w.ids["owned_price"]}, creates=_price_body),
    "node-prices-upload": Collection(
        reads=False,
        creates=lambda w: _csv("p.csv", "fleet,kind,rate_per_h,valid_from\nzz-a-fleet,rented,9,2026-03-01\n", w),
    ),
    "upload": Detail(lambda w: {"upload_id": w.ids["upload"]}, serves=("get",)),
    "node-price": Detail(lambda w: {"price_id": w.ids["node_price"]}, ("get", "patch"), lambda w: {"rate_per_h": "9"}),
    "node-price-book-value": Detail(lambda w: {"price_id": w.ids["owned_price"]}, ("get",)),
    "node-price-life-changes": Detail(
        lambda w: {"price_id": w.ids["owned_price"]}, ("post",),
        lambda w: {"effective_from": "2030-01-01T00:00:00Z", "lifetime_years": "5"},
    ),
    "exchange-rates": Collection(
        a_ids=_ids("exchange_rate"),
        creates=lambda w: [{"organization": str(w.org_a.pk), "currency": "USD", "quote_currency": "EUR",
                            "month": "2026-05-01", "rate": "9"}],
    ),
    "exchange-rates-upload": Collection(
        reads=False, creates=lambda w: _csv("r.csv", "currency,quote_currency,month,rate\nUSD,EUR,2026-06-01,9\n", w)
    ),
    "exchange-rate": Detail(lambda w: {"rate_id": w.ids["exchange_rate"]}, ("get", "patch", "delete"),
                            lambda w: {"rate": "9"}),
    "journal-accounts": Collection(
        a_ids=_ids("journal_account"),
        creates=lambda w: [{"organization": str(w.org_a.pk), "charge_kind": "opex", "debit_account_code": "9",
                            "credit_account_code": "9"}],
    ),
    "journal-account": Detail(lambda w: {"row_id": w.ids["journal_account"]}, ("get", "patch", "delete"),
                              lambda w: {"debit_account_code": "9"}),
    "ledger-settings": Collection(
        organization=True, writes="patch",
        creates=lambda w: [{"organization": str(w.org_a.pk), "reporting_currency": "EUR"}],
    ),
    "site-tariffs": Collection(
        a_ids=_ids("site_tariff"),
        creates=lambda w: [{"site": w.ids["site"], "flat_price_per_kwh": "9", "valid_from": "2026-03-01T00:00:00Z"}],
    ),
    "site-tariff": Detail(
        lambda w: {"tariff_id": w.ids["site_tariff"]}, ("get", "patch"), lambda w: {"flat_price_per_kwh": "9"}
    ),
    "site-pue": Detail(lambda w: {"site_id": w.ids["site"]}, ("get", "put"), lambda w: {"pue": "1.90"}),
    "site-pue-periods": Collection(a_ids=_ids("pue_period"), creates=lambda w: [{"site": w.ids["site"], **_DATED}]),
    "site-pue-period": Detail(
        lambda w: {"row_id": w.ids["pue_period"]}, ("get", "patch", "delete"), lambda w: _CHANGED
    ),
    "site-market-factors": Collection(
        a_ids=_ids("market_factor"), creates=lambda w: [{"site": w.ids["site"], **_DATED}]
    ),
    "site-market-factor": Detail(
        lambda w: {"row_id": w.ids["market_factor"]}, ("get", "patch", "delete"), lambda w: _CHANGED
    ),
    "site-taxes": Collection(a_ids=_ids("site_tax"), creates=lambda w: [{"site": w.ids["site"], **_DATED}]),
    "site-tax": Detail(lambda w: {"row_id": w.ids["site_tax"]}, ("get", "patch", "delete"), lambda w: _CHANGED),
    "gpu-assets": Collection(a_ids=_ids("gpu_asset"), creates=lambda w: [{"gpu": w.ids["gpu_free"]}]),
    "gpu-asset": Detail(
        lambda w: {"asset_id": w.ids["gpu_asset"]}, ("get", "patch"), lambda w: {"condition": "second_hand"}
    ),
    "locked-periods": Collection(
        a_ids=_ids("lock"),
        creates=lambda w: [{"organization": str(w.org_a.pk), "start": "2023-01-01T00:00Z", "end": "2023-02-01T00:00Z"}],
    ),
    "locked-period": Detail(lambda w: {"lock_id": w.ids["lock"]}, serves=("delete",)),
    "instruments": Collection(a_ids=_ids("instrument"), creates=lambda w: [_instrument(w)]),
    "instruments-upload": Collection(
        reads=False,
        creates=lambda w: _csv(
            "i.csv",
            "site,kind,name,volume_mwh,delivery_start,delivery_end,vintage_year,generation_zone,technology\n"
            "zz-a-site,go,zz-b,1,2025-01-01T00:00:00Z,2025-02-01T00:00:00Z,2025,NO,hydro\n",
            w,
        ),
    ),
    "instrument": Detail(lambda w: {"instrument_id": w.ids["instrument"]}, ("get", "patch"), lambda w: {"name": "x"}),
    "instrument-evidence": Detail(
        lambda w: {"instrument_id": w.ids["instrument"]},
        ("get", "put"),
        lambda w: {"file": SimpleUploadedFile("e.pdf", b"forged")},
    ),
    "residual-mixes": Collection(a_ids=_ids("residual_mix")),
    "inventory-boundary": Collection(
        organization=True, writes="put",
        creates=lambda w: [{"organization": str(w.org_a.pk), "consolidation_approach": "financial_control"}],
    ),
    "scope2-disclosure": Collection(
        organization=True, writes="put",
        creates=lambda w: [{"organization": str(w.org_a.pk), "market_matching": "hourly"}],
    ),
    "node-scopes": Collection(),
    "node-scope": Detail(lambda w: {"node_id": w.ids["node"]}, ("put",), lambda w: {"electricity": "category_8"}),
    "scope1-emissions": Collection(a_ids=_ids("scope1"), creates=lambda w: [_scope1(w)]),
    "scope1-emission": Detail(lambda w: {"entry_id": w.ids["scope1"]}, ("get", "patch"), lambda w: {"co2e_kg": "2"}),
    "residual-mixes-upload": Collection(
        reads=False,
        creates=lambda w: _csv("m.csv", "zone,year,gco2e_per_kwh,source\nDE,2022,1,zz-b\n", w),
    ),
    "node-enrollments": Collection(
        reads=False,
        creates=lambda w: [{"fleet": w.ids["fleet"], "site": w.ids["site"], "hostname": "zz-b-new"}],
    ),
    "node-tokens": Collection(
        a_ids=_ids("node_token"), creates=lambda w: [{"node": w.ids["node"], "revoke_others": False}]
    ),
    "node-token": Detail(lambda w: {"token_id": w.ids["node_token"]}, serves=("delete",)),
    # placement advice
    "workload-classes": Collection(
        a_ids=_ids("workload_class"), creates=lambda w: [_CLASS | {"organization": str(w.org_a.pk)}]
    ),
    "workload-class": Detail(
        lambda w: {"class_id": w.ids["workload_class"]}, ("get", "patch", "delete"), lambda w: {"ttft_target_ms": 1}
    ),
    "advice-settings": Collection(
        organization=True, writes="put", creates=lambda w: [{"organization": str(w.org_a.pk), "curve_days": 3}]
    ),
    # what-if scenarios: any member creates and runs them (a run reads the ledger, writes only the scenario)
    "scenarios": Collection(a_ids=_ids("scenario"), organization=True, creates=lambda w: [_scenario(w)]),
    "scenario": Detail(lambda w: {"scenario_id": w.ids["scenario"]}, serves=("get",)),
    "scenario-run": Detail(lambda w: {"scenario_id": w.ids["scenario"]}, serves=("post",), any_member_writes=True),
    "scenario-result": Detail(lambda w: {"scenario_id": w.ids["scenario"]}, serves=("get",)),
    "scenarios-page": Collection(page=True, creates=lambda w: [_scenario_form(w)]),
    "scenario-page": Detail(lambda w: {"scenario_id": w.ids["scenario"]}, serves=("get",), page=True),
    "scenario-run-page": Detail(
        lambda w: {"scenario_id": w.ids["scenario"]}, serves=("post",), page=True, any_member_writes=True
    ),
}
# fmt: on

EXCLUDED: dict[str, str] = {
    "admin:*": "the admin site is walked model by model in tests/fleets/test_admin_scoping.py",
    "healthz": "the service's health: no organization's data",
    "/favicon.ico": "a redirect to a static file",
    "schema": "the OpenAPI document: the same for everyone, no rows",
    "api-docs": "Swagger UI over the schema: no rows",
    "login": "Django's sign-in: no organization's data",
    "logout": "Django's sign-out",
    "password_change": "the user's own password",
    "api-tokens-page": "the user's own API tokens, no organization's rows: another person's are neither shown nor "
    "revoked (tests/dashboards/test_api_tokens_page.py)",
    "password_change_done": "a confirmation page",
    "password_reset": "sends a reset link to an address; reveals no row",
    "password_reset_done": "a confirmation page",
    "password_reset_confirm": "its parameters are a signed user id and token, no organization's row",
    "password_reset_complete": "a confirmation page",
}


def project_routes() -> dict[str, str]:
    """Every route of the project: its key (namespace:name, name, or its path when unnamed) -> its path."""
    found: dict[str, str] = {}

    def walk(patterns: list[Any], prefix: str, namespace: str | None) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route, pattern.namespace or namespace)
            elif isinstance(pattern, URLPattern):
                key = f"{namespace}:*" if namespace else (pattern.name or route)
                found.setdefault(key, route)

    walk(get_resolver().url_patterns, "/", None)
    return found


def has_parameters(route: str) -> bool:
    return "<" in route or "(?P" in route


def route_path(name: str, kwargs: dict[str, int] | None = None) -> str:
    from django.urls import reverse

    return reverse(name, kwargs=kwargs)


# --- the world: Org A's rows and Org B's member ----------------------------------------------------------------


def _created(response: Any) -> dict[str, Any]:
    assert response.status_code == 201, response.content
    return response.json()


def _org_a_rows(world: World, site: Any, fleet: Any, node: Any, gpu: Any) -> None:
    a, ids = world.a, world.ids
    price = _created(
        a.post(
            "/api/v1/node-prices/", _price_body(world)[0] | {"valid_from": HOURS[0], "valid_to": UNTIL}, format="json"
        )
    )
    ids["node_price"] = price["id"]
    owned = _price_body(world)[0] | {"kind": "owned", "capex": "9000", "lifetime_years": "3", "valid_from": UNTIL,
             "valid_to": "2026-03-01T00:00:00Z"}  # fmt: skip
    ids["owned_price"] = _created(a.post("/api/v1/node-prices/", owned | {"rate_per_h": None}, format="json"))["id"]
    tariff = {"site": site.pk, "flat_price_per_kwh": "0.30", "valid_from": HOURS[0], "valid_to": UNTIL}
    ids["site_tariff"] = _created(a.post("/api/v1/site-tariffs/", tariff, format="json"))["id"]
    dated = {"site": site.pk, "valid_from": HOURS[1], "valid_to": UNTIL, "source": "zz-a-source"}
    ids["pue_period"] = _created(a.post("/api/v1/site-pue-periods/", dated | {"pue": "1.3"}, format="json"))["id"]
    factor = dated | {"gco2e_per_kwh": "300"}
    ids["market_factor"] = _created(a.post("/api/v1/site-market-factors/", factor, format="json"))["id"]
    ids["site_tax"] = _created(a.post("/api/v1/site-taxes/", dated | {"vat_rate": "0.25"}, format="json"))["id"]
    ids["gpu_asset"] = _created(a.post("/api/v1/gpu-assets/", {"gpu": gpu.pk}, format="json"))["id"]
    rate = {"currency": "USD", "quote_currency": "EUR", "month": "2026-01-01", "rate": "0.92", "source": "zz-a-rate"}
    ids["exchange_rate"] = _created(a.post("/api/v1/exchange-rates/", rate, format="json"))["id"]
    account = {"charge_kind": "rent", "debit_account_code": "5410", "debit_account_name": "zz-a-account",
               "credit_account_code": "2000"}  # fmt: skip
    ids["journal_account"] = _created(a.post("/api/v1/journal-accounts/", account, format="json"))["id"]
    ids["instrument"] = _created(a.post("/api/v1/instruments/", _instrument(world), format="json"))["id"]
    ids["scope1"] = _created(a.post("/api/v1/scope1-emissions/", _scope1(world), format="json"))["id"]
    evidence = {"file": SimpleUploadedFile("zz-a-contract.pdf", b"zz-a evidence")}
    assert a.put(f"/api/v1/instruments/{ids['instrument']}/evidence/", evidence).status_code == 200
    ids["workload_class"] = _created(a.post("/api/v1/workload-classes/", _CLASS | {"name": "zz-a-class"}))["id"]
    mixes = SimpleUploadedFile("m.csv", b"zone,year,gco2e_per_kwh,source\nDE,2025,400,zz-a-mix\n")
    uploaded = post_and_run(a, "/api/v1/residual-mixes/upload/", {"file": mixes})
    assert uploaded.status_code == 202
    ids["upload"] = uploaded.json()["id"]
    assert a.get(uploaded["Location"]).json()["result_status"] == 201
    ids["residual_mix"] = a.get("/api/v1/residual-mixes/").json()[0]["id"]
    scenario = _created(a.post("/api/v1/scenarios/", _scenario(world), format="json"))
    ids["scenario"] = scenario["id"]
    # A run's result as the worker stores it (the run itself is another test's): A's own figures, named
    Scenario.objects.filter(pk=ids["scenario"]).update(status=Scenario.Status.DONE, result={"note": "zz-a result"})
    lock = {"start": "2024-01-01T00:00:00Z", "end": "2024-02-01T00:00:00Z", "reason": "zz-a-closed"}
    ids["lock"] = _created(a.post("/api/v1/locked-periods/", lock, format="json"))["id"]


@pytest.fixture
def world(org_a: Organization, org_b: Organization, user_a: Any, user_b: Any) -> World:
    org_a.name = "zz-a organization"
    org_a.save()
    site: Any = SiteFactory(organization=org_a, name="zz-a-site", grid_zone="DE")
    fleet: Any = FleetFactory(organization=org_a, name="zz-a-fleet")
    node: Any = NodeFactory(fleet=fleet, site=site, hostname="zz-a-host", commissioned_at=HOURS[0] - timedelta(days=1))
    gpu: Any = GpuFactory(node=node, index=0)
    gpu_free: Any = GpuFactory(node=node, index=1)
    a_node_token = credential_issue(node=node)
    personal, a_secret = personal_token_create(user=user_a, name="zz-a-token")
    b_node: Any = NodeFactory(fleet__organization=org_b, hostname="b-host")
    b_gpu: Any = GpuFactory(node=b_node, index=0)
    b_session = Client()
    b_session.force_login(user_b)
    _, b_secret = personal_token_create(user=user_b, name="b-token")
    a, b_token = APIClient(), APIClient()
    a.credentials(HTTP_AUTHORIZATION=f"Bearer {a_secret}")
    b_token.credentials(HTTP_AUTHORIZATION=f"Bearer {b_secret}")
    ids = {"site": site.pk, "fleet": fleet.pk, "node": node.pk, "gpu_free": gpu_free.pk, "personal_token": personal.pk}
    ids["node_token"] = NodeCredential.objects.get(node=node).pk
    built = World(org_a, org_b, ids, a, b_session, b_token, a_node_token, b_gpu.uuid)
    _org_a_rows(built, site, fleet, node, gpu)
    _served(node, gpu)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=HOURS)
    return built


def _served(node: Any, gpu: Any) -> None:
    """An hour of A's GPU serving "zz-a-model": the per-LLM-model reports name it."""
    GpuHourUsage.objects.create(
        gpu=gpu, hour_start=HOURS[0], energy_j=1_800_000.0, energy_counter_j=1_800_000.0, energy_integrated_j=0.0,
        energy_method="counter", observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0, mean_util_pct=80.0,
        reset_count=0, computed_at=HOURS[0],
    )  # fmt: skip
    served = ServingEndpoint.objects.create(node=node, url="http://127.0.0.1:8000/metrics", model_name="zz-a-model")
    served.gpus.set([gpu])
    EndpointHourUsage.objects.create(
        endpoint=served, hour_start=HOURS[0], observed_s=3600.0, reset_count=0, computed_at=HOURS[0],
        prompt_tokens=1000, generation_tokens=3000, requests=10,
    )  # fmt: skip


# Rows of Org A that the admin does not list, but a write on A's behalf would leave.
EXTRA_PATHS = [
    (LedgerPending, "node__fleet__organization"),
    (InstrumentHour, "instrument__organization"),
    (GridIntensity, "organization"),
    (NodePrice, "node__fleet__organization"),  # a price naming A's node, whatever fleet it claims
]


def snapshot(world: World) -> dict[str, Any]:
    """Every row of Org A (each organization-scoped model, A's personal tokens) and the audit trail's length."""
    rows: dict[str, Any] = {}
    for model, path in ORGANIZATION_PATHS.items():
        scoped = model._default_manager.filter(**{path: world.org_a.pk}).order_by("pk")
        rows[model._meta.label] = [_plain(row) for row in scoped.values()]
    for model, path in EXTRA_PATHS:
        rows[f"{model._meta.label} by {path}"] = list(
            model._default_manager.filter(**{path: world.org_a.pk}).order_by("pk").values()
        )
    rows["personal tokens"] = list(PersonalToken.objects.filter(user__username="alice").order_by("pk").values())
    rows["audit entries"] = AuditEntry.objects.count()
    return rows


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """A row's values, but when a token was last used (A's node token is used by its own node below)."""
    return {key: bytes(value) if isinstance(value, memoryview) else value for key, value in row.items()
            if key != "last_used_at"}  # fmt: skip


def clients(world: World, page: bool) -> Iterator[tuple[str, Client]]:
    yield "session", world.b_session
    if not page:
        yield "token", world.b_token


def call(client: Client, method: str, path: str, body: dict[str, Any] | None = None, **extra: Any) -> Any:
    body = body or {}
    if any(isinstance(value, SimpleUploadedFile) for value in body.values()):
        for value in body.values():
            if isinstance(value, SimpleUploadedFile):
                value.seek(0)
        if method == "post":
            return client.post(path, body, **extra)
        from django.test.client import encode_multipart

        data = encode_multipart("BoUnDaRy", body)
        return getattr(client, method)(path, data, content_type="multipart/form-data; boundary=BoUnDaRy", **extra)
    if method == "get":
        return client.get(path, body, **extra)
    if isinstance(client, APIClient):
        return getattr(client, method)(path, body, format="json", **extra)
    if method == "post":
        return client.post(path, body, **extra)
    return getattr(client, method)(path, json.dumps(body), content_type="application/json", **extra)


def body_of(response: Any) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def shows_nothing_of_a(response: Any, what: str) -> Iterator[str]:
    content = body_of(response)
    if MARK.encode() in content.lower():
        yield f"{what} shows Org A's data: {content[:300]!r}"
    if response.status_code >= 500:
        yield f"{what} failed: {response.status_code}"


def unchanged(world: World, before: dict[str, Any], name: str) -> Iterator[str]:
    after = snapshot(world)
    for key in before.keys() & after.keys():
        if after[key] != before[key]:
            yield f"{name}: Org B's calls changed {key}: {before[key]!r} -> {after[key]!r}"


# --- the probes ------------------------------------------------------------------------------------------------


def test_every_route_is_probed_or_excluded() -> None:
    routes = project_routes()
    unknown = sorted(set(routes) - set(PROBES) - set(EXCLUDED))
    assert not unknown, f"routes the tenancy probe does not know how to fill: add them to PROBES or EXCLUDED: {unknown}"
    assert not sorted((set(PROBES) | set(EXCLUDED)) - set(routes)), "PROBES or EXCLUDED name a route that is gone"
    for key, probe in PROBES.items():
        detail = isinstance(probe, Detail)
        assert has_parameters(routes[key]) == detail, f"{key}: a Detail is for routes with parameters, only they"
        if isinstance(probe, Special):
            assert callable(globals().get(probe.test)), f"{key}: no test {probe.test}"


DETAILS = sorted(key for key, probe in PROBES.items() if isinstance(probe, Detail))
COLLECTIONS = sorted(key for key, probe in PROBES.items() if isinstance(probe, Collection))


def test_another_organizations_rows_answer_404_to_every_method_and_stay(world: World) -> None:
    problems = [problem for name in DETAILS for problem in _detail_problems(world, name)]
    assert not problems, "\n".join(problems)


def _detail_problems(world: World, name: str) -> Iterator[str]:
    probe = PROBES[name]
    assert isinstance(probe, Detail)
    path = route_path(name, probe.args(world))
    # Org A's own admin reaches the row: the probe names a row that exists.
    if not probe.page and "get" in probe.serves and world.a.get(path).status_code != 200:
        yield f"{path}: Org A cannot read its own row, the probe proves nothing"
    before = snapshot(world)
    for label, client in clients(world, probe.page):
        for method in METHODS:
            what = f"{label} {method.upper()} {path}"
            response = call(client, method, path, probe.body(world) if method in WRITES else None)
            expected = {404} if method in probe.serves else {404, 405}
            if response.status_code not in expected:
                yield f"{what}: {response.status_code}, not {sorted(expected)}: {body_of(response)[:200]!r}"
            yield from shows_nothing_of_a(response, what)
    yield from unchanged(world, before, name)
    # An id past any database integer is no row of anyone's: 404, never a 500 from the database.
    beyond = route_path(name, dict.fromkeys(probe.args(world), 2**64))
    for method in METHODS:
        response = call(world.b_session, method, beyond, probe.body(world) if method in WRITES else None)
        if response.status_code not in {404, 405}:
            yield f"session {method.upper()} {beyond}: {response.status_code}"


def _listed_ids(response: Any) -> set[int]:
    body = response.json()
    rows = body if isinstance(body, list) else body.get("results", body.get("rows", []))
    return {row["id"] for row in rows if isinstance(row, dict) and "id" in row}


def test_collections_hold_none_of_another_organizations_rows_and_create_none(world: World) -> None:
    problems = [problem for name in COLLECTIONS for problem in _collection_problems(world, name)]
    assert not problems, "\n".join(problems)


def _collection_problems(world: World, name: str) -> Iterator[str]:
    probe = PROBES[name]
    assert isinstance(probe, Collection)
    path = route_path(name)
    # Org A's own list holds the rows, so their absence for Org B means something.
    if probe.a_ids is not None and not probe.a_ids(world) <= _listed_ids(world.a.get(path)):
        yield f"{path}: Org A's own list lacks its rows, the probe proves nothing"
    before = snapshot(world)
    for label, client in clients(world, probe.page):
        cache.clear()  # a fresh count for the reports' rate per user (120 a minute): Bob calls many routes here
        what = f"{label} {path}"
        if probe.reads:
            yield from _own_list_problems(world, probe, client, path, what)
        if probe.organization:
            queries: list[dict[str, Any]] = [{"organization": world.org_a.pk}, {"organization": world.org_a.slug}]
            queries += [queries[0] | {"format": "csv"}] if probe.csv else []
            for query in queries:
                asked = client.get(path, query | PERIOD)
                if asked.status_code not in {400, 404}:
                    yield f"{what}?{query}: {asked.status_code}, not 400/404"
                yield from shows_nothing_of_a(asked, f"{what}?{query}")
        for parameter in probe.filters:
            query = {parameter: world.ids[_FILTERED[parameter]]}
            filtered = client.get(path, query | PERIOD)
            # A page shows its default for a value not among the user's (its own rows, never A's); an API refuses it.
            if filtered.status_code not in ({200, 400, 404} if probe.page else {400, 404}):
                yield f"{what}?{query}: {filtered.status_code}, not 400/404"
            yield from shows_nothing_of_a(filtered, f"{what}?{query}")
        target = f"{path}?organization={world.org_a.pk}" if probe.organization else path
        for body in probe.creates(world) if probe.creates else []:
            refused = call(client, probe.writes, target, body)
            if refused.status_code not in {400, 404}:
                yield f"{what} {probe.writes.upper()} {body}: {refused.status_code}: {body_of(refused)[:200]!r}"
            yield from shows_nothing_of_a(refused, f"{what} {probe.writes.upper()}")
    yield from unchanged(world, before, name)


def _own_list_problems(world: World, probe: Collection, client: Client, path: str, what: str) -> Iterator[str]:
    own = client.get(path)
    if own.status_code not in ({200, 302} if probe.page else {200}):
        yield f"{what}: {own.status_code}"
    yield from shows_nothing_of_a(own, what)
    if probe.a_ids is not None and probe.a_ids(world) & _listed_ids(own):
        yield f"{what} lists Org A's rows {sorted(probe.a_ids(world) & _listed_ids(own))}"
    if not probe.organization and not probe.page:  # a list that takes no ?organization= ignores it: still B's only
        ignored = client.get(path, {"organization": world.org_a.pk})
        if ignored.status_code not in {200, 400, 404}:
            yield f"{what}?organization=A: {ignored.status_code}"
        yield from shows_nothing_of_a(ignored, f"{what}?organization=A")
        if ignored.status_code == 200 and probe.a_ids is not None and probe.a_ids(world) & _listed_ids(ignored):
            yield f"{what}?organization=A lists Org A's rows"
    if probe.csv:
        exported = client.get(path, {"format": "csv"} | PERIOD)
        if exported.status_code != 200:
            yield f"{what} CSV: {exported.status_code}"
        yield from shows_nothing_of_a(exported, f"{what} CSV")
    for variant in probe.variants:
        for shape in ({}, {"format": "csv"}):
            shown = client.get(path, variant | shape | PERIOD)
            if shown.status_code != 200:
                yield f"{what}?{variant | shape}: {shown.status_code}"
            yield from shows_nothing_of_a(shown, f"{what}?{variant | shape}")


@pytest.mark.parametrize(
    ("path", "query", "name"),
    [
        ("/api/v1/reports/usage/", {"group_by": "fleet"}, b"zz-a-fleet"),
        ("/api/v1/reports/usage/", {"group_by": "node"}, b"zz-a-host"),
        ("/api/v1/reports/usage/", {"group_by": "llm_model"}, b"zz-a-model"),
        ("/api/v1/reports/comparison/", {"by": "llm_model"}, b"zz-a-model"),
        ("/api/v1/reports/focus/", {}, b"zz-a-host"),
    ],
)
def test_reports_of_org_a_hold_its_names_so_their_absence_for_org_b_means_something(
    world: World, path: str, query: dict[str, str], name: bytes
) -> None:
    exported = world.a.get(path, {"format": "csv"} | query | PERIOD)
    assert exported.status_code == 200
    assert name in body_of(exported)


def test_the_journal_of_another_organization_is_refused_and_holds_none_of_it(world: World) -> None:
    # The journal takes a month, not the probes' PERIOD: its own probe, over the month of PERIOD's hours.
    path, month = route_path("reports-journal"), {"period": PERIOD["start"][:7]}
    own = world.a.get(path, month)
    assert own.status_code == 200 and b"zz-a-fleet" in body_of(own)  # Org A's journal names its fleet
    for label, client in clients(world, page=False):
        cache.clear()
        assert client.get(path, month).status_code == 200, label
        assert not list(shows_nothing_of_a(client.get(path, month), f"{label} {path}"))
        for query in (
            {"organization": world.org_a.pk},
            {"organization": world.org_a.slug},
            {"fleet": world.ids["fleet"]},
        ):
            asked = client.get(path, month | query)
            assert asked.status_code in {400, 404}, f"{label} {path}?{query}: {asked.status_code}"
            assert not list(shows_nothing_of_a(asked, f"{label} {path}?{query}"))


def test_the_metrics_of_another_organization_hold_none_of_it(world: World, user_a: Any, user_b: Any) -> None:
    # /metrics takes a token of scope metrics only: each user's own, then their series.
    def scrape(user: Any) -> Any:
        _, secret = personal_token_create(user=user, name="prometheus", scope=TokenScope.METRICS)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client.get(route_path("metrics"))

    own = scrape(user_a)
    assert own.status_code == 200 and b"zz-a-fleet" in body_of(own)  # Org A's series name its fleet
    theirs = scrape(user_b)
    assert theirs.status_code == 200
    assert not list(shows_nothing_of_a(theirs, "/metrics"))


def test_switching_to_another_organization_is_refused(world: World) -> None:
    refused = world.b_session.post("/organization/", {"organization": world.org_a.pk, "next": "/finance/"})
    assert refused.status_code == 400
    assert "organization_id" not in world.b_session.session
    assert not list(shows_nothing_of_a(world.b_session.get("/finance/"), "finance after a refused switch"))


def _ingest(node_client: APIClient, batch: dict[str, Any]) -> Any:
    return node_client.post("/api/v1/ingest/", json.dumps(batch), content_type="application/json")


def test_a_node_token_reports_only_its_own_gpus_and_reads_nothing(world: World) -> None:
    node_client = APIClient()
    node_client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.a_node_token}")
    b_gpu = Gpu.objects.values().get(uuid=world.b_gpu_uuid)
    b_samples = GpuSample.objects.filter(gpu__uuid=world.b_gpu_uuid).count()
    foreign_gpu = make_batch(gpus=1, seconds=2)
    foreign_gpu["gpus"] = [gpu_ref(0) | {"uuid": world.b_gpu_uuid}]
    foreign_endpoint = make_batch(gpus=1, seconds=10, endpoint=True)
    foreign_endpoint["endpoints"][0]["gpu_uuids"] = [world.b_gpu_uuid]
    before = snapshot(world)

    assert _ingest(node_client, foreign_gpu).status_code == 403
    assert _ingest(node_client, foreign_endpoint).status_code == 422

    assert Gpu.objects.values().get(uuid=world.b_gpu_uuid) == b_gpu
    assert GpuSample.objects.filter(gpu__uuid=world.b_gpu_uuid).count() == b_samples
    assert not ServingEndpoint.objects.filter(gpus__uuid=world.b_gpu_uuid).exists()
    assert snapshot(world) == before
    # The same batch naming the node's own GPU is stored: the refusals above are the foreign GPU's.
    assert _ingest(node_client, make_batch(gpus=1, seconds=10, endpoint=True)).status_code == 200
    failed = []
    for key, probe in PROBES.items():
        if isinstance(probe, Special):
            continue
        path = route_path(key, probe.args(world) if isinstance(probe, Detail) else None)
        for method in METHODS:
            response = call(node_client, method, path + f"?organization={world.org_a.pk}", {})
            allowed = {302} if probe.page else {401, 403, 405}  # pages send anyone not signed in to sign in
            if response.status_code not in allowed or list(shows_nothing_of_a(response, path)):
                failed.append(f"node token {method.upper()} {path}: {response.status_code}")
    assert not failed, "\n".join(failed)


def test_a_node_token_naming_another_organizations_gpu_learns_nothing_of_its_sources(world: World) -> None:
    # given: Org A reads a Prometheus (so its node's batches are checked against imports), and B's GPU has
    # samples in the batch's time from B's own Prometheus and from B's collector
    PrometheusSource.objects.create(organization=world.org_a, name="zz-a-prom", url="https://prometheus.example.com")
    PrometheusSource.objects.create(organization=world.org_b, name="b-secret-prom", url="https://b.example.com")
    b_gpu = Gpu.objects.get(uuid=world.b_gpu_uuid)
    start_s = float(int(time.time()) - 60)
    partitions_ensure(days={datetime.fromtimestamp(start_s, tz=UTC).date()})
    for n, name in enumerate(("prometheus:b-secret-prom/dcgm-host-b7", "b-secret-boot-id/550.54.15")):
        epoch = GpuEpoch.objects.create(gpu=b_gpu, epoch=name)
        GpuSample.objects.create(gpu=b_gpu, epoch=epoch, ts=datetime.fromtimestamp(start_s + n, tz=UTC), energy_j=1.0)
    node_client = APIClient()
    node_client.credentials(HTTP_AUTHORIZATION=f"Bearer {world.a_node_token}")
    batch = make_batch(gpus=1, seconds=10, start_s=start_s)
    batch["gpus"] = [gpu_ref(0) | {"uuid": world.b_gpu_uuid}]

    # when: A's node reports B's GPU at that time
    answer = _ingest(node_client, batch)

    # then: refused as another node's GPU, the answer naming none of B's sources, epochs or times
    assert answer.status_code == 403
    assert answer.json() == {
        "error": f"GPU {world.b_gpu_uuid} is registered to another node; this token may only report its own"
    }
    assert GpuSample.objects.filter(gpu=b_gpu).count() == 2
    # and: without B's samples in that time, the answer is the same (it says nothing of when B's GPU reported)
    GpuSample.objects.filter(gpu=b_gpu).delete()
    assert _ingest(node_client, batch).json() == answer.json()


def _intensity_upload(client: Client, organization: Organization, gco2e_per_kwh: int) -> Any:
    url = route_path("grid-intensity-csv") + f"?organization={organization.slug}&source_name=zz-up"
    body = f"zone,hour_start,gco2e_per_kwh\nDE,2026-01-01T00:00:00Z,{gco2e_per_kwh}\n".encode()
    return client.generic("POST", url, body, content_type="text/csv")


def test_grid_intensities_of_one_organization_stay_its_own(world: World) -> None:
    assert _intensity_upload(world.a, world.org_a, 111).status_code == 201
    before, public = snapshot(world), GridIntensity.objects.filter(organization=None).count()

    for label, client in clients(world, page=False):
        refused = _intensity_upload(client, world.org_a, 999)
        assert refused.status_code == 404, f"{label}: {refused.status_code}"
        assert _intensity_upload(client, world.org_b, 222).status_code == 201, label  # Org B's own hour

    del before["audit entries"]  # Org B's own uploads are audited, in its own trail (A's is in the snapshot)
    assert not list(unchanged(world, before, "grid-intensity-csv"))
    assert GridIntensity.objects.filter(organization=None).count() == public
    assert GridIntensity.objects.get(organization=world.org_b).gco2e_per_kwh == 222


def test_the_creates_refused_to_org_b_succeed_for_org_a(world: World, user_a: Any) -> None:
    """Org B's 400/404 above is the scoping's, not a malformed body's: Alice's own calls with the same bodies pass."""
    session = Client()
    session.force_login(user_a)
    failed = []
    for name in COLLECTIONS:
        probe = PROBES[name]
        assert isinstance(probe, Collection)
        path = route_path(name) + (f"?organization={world.org_a.pk}" if probe.organization else "")
        for body in probe.creates(world) if probe.creates else []:
            with tasks_eager(), TestCase.captureOnCommitCallbacks(execute=True):  # an upload's worker, at once
                answer = call(session if probe.page else world.a, probe.writes, path, body)
            if answer.status_code not in {200, 201, 202, 302}:
                failed.append(f"{name} {body}: {answer.status_code} {body_of(answer)[:300]!r}")
    assert not failed, "\n".join(failed)


def test_the_writes_refused_to_org_b_succeed_for_org_a(world: World, user_a: Any) -> None:
    """Org B's 404s on A's rows are the scoping's, not a malformed body's: Alice's own writes pass."""
    session = Client()
    session.force_login(user_a)
    failed = []
    for name in DETAILS:
        probe = PROBES[name]
        assert isinstance(probe, Detail)
        path = route_path(name, probe.args(world))
        for method in sorted(set(probe.serves) & set(WRITES), key=WRITES.index):  # changes first, deletion last
            answer = call(session, method, path, probe.body(world))
            if answer.status_code not in {200, 202, 204, 302}:
                failed.append(f"{method.upper()} {path}: {answer.status_code} {body_of(answer)[:300]!r}")
    assert not failed, "\n".join(failed)


def _mixed_bodies(world: World, b_fleet: Any, b_site: Any) -> dict[str, list[dict[str, Any]]]:
    """Creates for one of Org B's rows that name one of A's beside it: the row would reach into A."""
    price = _price_body(world)[0] | {"fleet": b_fleet.pk}
    return {
        "node-prices": [price],
        "node-enrollments": [{"fleet": b_fleet.pk, "site": world.ids["site"], "hostname": "zz-b-mixed"}],
        "instruments": [_instrument(world) | {"organization": str(world.org_b.pk)}],
        "site-tariffs": [{"site": world.ids["site"], "flat_price_per_kwh": "9", "valid_from": "2026-03-01T00:00Z"}],
        "node-tokens-page": [{"action": "enroll", "fleet": b_fleet.pk, "site": world.ids["site"], "hostname": "m"}],
        "scenarios": [
            _scenario(world) | {"organization": str(world.org_b.pk)},
            _scenario(world)
            | {
                "organization": str(world.org_b.pk),
                "changes": [
                    {
                        "kind": "routing",
                        "llm_model": "zz-a-model",
                        "from_fleet": b_fleet.pk,
                        "to_fleet": world.ids["fleet"],
                        "share": "0.5",
                    },
                ],
            },
        ],
    }


def test_a_viewer_of_org_a_who_administers_org_b_changes_nothing_of_a(world: World) -> None:
    """Carol reads A (a viewer) and administers B: her admin role in B never writes into A, directly or mixed."""
    carol: Any = UserFactory(username="carol")
    MembershipFactory(user=carol, organization=world.org_b, role=Role.ADMIN)
    MembershipFactory(user=carol, organization=world.org_a, role=Role.VIEWER)
    session = Client()
    session.force_login(carol)  # her pages show Org B, the first of her organizations by name
    mixed = _mixed_bodies(world, FleetFactory(organization=world.org_b), SiteFactory(organization=world.org_b))
    before, failed = snapshot(world), []
    for name in DETAILS:
        probe = PROBES[name]
        assert isinstance(probe, Detail)
        path = route_path(name, probe.args(world))
        if probe.any_member_writes:
            continue
        for method in set(WRITES) & set(probe.serves):  # she may read A: a read-only page answers any method
            answer = call(session, method, path, probe.body(world))
            if answer.status_code not in {403, 404}:
                failed.append(f"{method.upper()} {path}: {answer.status_code} {body_of(answer)[:200]!r}")
    for name in COLLECTIONS:
        probe = PROBES[name]
        assert isinstance(probe, Collection)
        path = route_path(name) + (f"?organization={world.org_a.pk}" if probe.organization else "")
        for body in (probe.creates(world) if probe.creates else []) + mixed.get(name, []):
            answer = call(session, probe.writes, path, body)
            if answer.status_code not in {400, 403, 404}:
                failed.append(f"{probe.writes.upper()} {path} {body}: {answer.status_code} {body_of(answer)[:200]!r}")
    failed += list(unchanged(world, before, "a member of both"))
    assert not failed, "\n".join(failed)


def test_a_scenario_does_not_reveal_which_zones_another_organization_uploaded(world: World) -> None:
    """A zone only Org A holds intensities for (its own upload) is as unknown to Org B as a zone nobody has."""
    url = route_path("grid-intensity-csv") + f"?organization={world.org_a.slug}&source_name=ppa"
    body = "zone,hour_start,gco2e_per_kwh\nPRIVATE-PPA-1,2026-01-01T00:00:00Z,12\n"
    assert world.a.generic("POST", url, body, content_type="text/csv").status_code == 201
    b_fleet: Any = FleetFactory(organization=world.org_b)

    def move_to(zone: str) -> Any:
        change = {"kind": "move", "fleet": b_fleet.pk, "zone": zone}
        body = {"organization": str(world.org_b.pk), "name": "where", **PERIOD, "changes": [change]}
        return world.b_token.post("/api/v1/scenarios/", body, format="json")

    held_by_a, held_by_nobody = move_to("PRIVATE-PPA-1"), move_to("PRIVATE-PPA-2")

    assert (held_by_a.status_code, held_by_nobody.status_code) == (400, 400)
    assert held_by_a.json()["detail"] == held_by_nobody.json()["detail"].replace("PPA-2", "PPA-1")
    # Org A's own scenario may move a fleet there: its upload is its own.
    change = {"kind": "move", "fleet": world.ids["fleet"], "zone": "PRIVATE-PPA-1"}
    own = world.a.post("/api/v1/scenarios/", _scenario(world) | {"changes": [change]}, format="json")
    assert own.status_code == 201, own.content
