"""A locked period is closed for real: late telemetry and a revised grid value for one of its hours leave its
line and its report as closed, and are booked, audited, as corrections in the first open period.

Through the real path: the collector's batches posted to the ingest API, the rollup, the ledger's queue. One
GPU whose counter rises 300 J/s, rented at 2.50 per GPU-hour, power at 0.30 per kWh; hour H is locked.
"""

from __future__ import annotations

import csv
import importlib
import io
import os
import subprocess
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.apps import apps
from django.utils import timezone
from rest_framework.test import APIClient

from accounting.accruals import ledger_mark_held_hours
from accounting.models import LedgerCorrection, LedgerPending, NodeHourLedger, SiteTax
from accounting.node_hour_lines import (
    ledger_mark,
    ledger_mark_intensity_since,
    ledger_pending_run,
)
from fleets.models import Node, Role
from fleets.services import credential_issue
from governance.models import AuditEntry
from grid.hours import floor_hour
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import make_batch
from tests.helpers.factories import (
    GridIntensityFactory,
    MembershipFactory,
    NodeFactory,
    NodePriceFactory,
    SiteTariffFactory,
    UserFactory,
)
from tests.helpers.ingest import post

pytestmark = pytest.mark.django_db

HOUR_S = 3600
H = (int(time.time()) // HOUR_S - 3) * HOUR_S


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


def usage_arrives(client, token: str, start_s: float) -> None:
    post(client, make_batch(gpus=1, seconds=10, start_s=start_s), token)
    rollup_pending_run(now=timezone.now())
    ledger_pending_run(now=timezone.now())


def line_values(node: Node) -> dict:
    return NodeHourLedger.objects.filter(node=node, hour_start=at(H)).values().get()


@pytest.fixture
def node(client) -> Node:
    node = NodeFactory(commissioned_at=at(H - 86400))
    NodePriceFactory(node=node, valid_from=at(H - 86400))
    SiteTariffFactory(site=node.site, flat_price_per_kwh=Decimal("0.30"), valid_from=at(H - 86400))
    node.token = credential_issue(node=node)  # type: ignore[attr-defined]
    usage_arrives(client, node.token, H + 100.0)  # type: ignore[attr-defined]
    return node


@pytest.fixture
def admin(node: Node) -> APIClient:
    user = UserFactory()
    MembershipFactory(user=user, organization=node.fleet.organization, role=Role.ADMIN)
    api = APIClient()
    api.force_authenticate(user)
    return api


def lock(admin: APIClient) -> dict:
    body = {"start": at(H).isoformat(), "end": at(H + HOUR_S).isoformat(), "reason": "hour H closed"}
    response = admin.post("/api/v1/locked-periods/", body, format="json")
    assert response.status_code == 201
    return response.json()


def test_late_telemetry_and_a_revised_intensity_are_booked_as_corrections_not_rewritten(client, node, admin):
    closed_line = line_values(node)
    lock(admin)

    # late telemetry for the locked hour, through ingest and rollup
    usage_arrives(client, node.token, H + 2000.0)
    # a provider revises the hour's grid value
    GridIntensityFactory(
        zone=node.site.grid_zone, hour_start=at(H), gco2e_per_kwh=Decimal(500), fetched_at=timezone.now()
    )
    ledger_mark_intensity_since(since=timezone.now() - timedelta(minutes=1), now=timezone.now())
    ledger_pending_run(now=timezone.now())

    assert line_values(node) == closed_line  # never rewritten, computed_at included
    late, revised = LedgerCorrection.objects.order_by("id")
    assert (late.cause, revised.cause) == ("late_telemetry", "revised_intensity")
    assert late.restated_hour == revised.restated_hour == at(H)
    # booked in the first open period: the lock is over, so the current hour
    assert late.booked_hour == floor_hour(timezone.now())
    assert late.electricity_cost > 0 and late.facility_kwh > 0 and late.cost == late.electricity_cost
    assert late.hardware_cost == 0  # the rent of the hour does not depend on its telemetry
    assert revised.cost == 0 and revised.facility_kwh == 0 and revised.location_co2e_g != 0
    # the restated figures: the stored line plus its corrections = the line as it would be now
    facility = closed_line["facility_kwh"] + late.facility_kwh
    restated_g = closed_line["location_co2e_g"] + late.location_co2e_g + revised.location_co2e_g
    assert abs(restated_g - facility * 500) < Decimal("1e-9")  # each stored to 12 places
    # audited, for the restated hour's period and the booking period
    entries = AuditEntry.objects.filter(subject="ledger_correction").order_by("id")
    assert [entry.object_id for entry in entries] == [late.pk, revised.pk]
    assert entries[0].after["cause"] == "late_telemetry" and entries[0].username == ""


def test_recomputing_a_locked_hour_again_books_nothing_more(client, node, admin):
    lock(admin)
    usage_arrives(client, node.token, H + 2000.0)
    assert LedgerCorrection.objects.count() == 1

    ledger_mark(node_ids=[node.pk], start=at(H), end=at(H + HOUR_S), now=timezone.now())
    ledger_pending_run(now=timezone.now())

    assert LedgerCorrection.objects.count() == 1


def test_a_recompute_of_an_unchanged_locked_hour_books_nothing(node, admin):
    lock(admin)
    ledger_mark(node_ids=[node.pk], start=at(H), end=at(H + HOUR_S), now=timezone.now())
    ledger_pending_run(now=timezone.now())
    assert not LedgerCorrection.objects.exists()


def test_unlocking_rewrites_the_hour_and_reverses_its_corrections(client, node, admin):
    locked = lock(admin)
    usage_arrives(client, node.token, H + 2000.0)
    correction = LedgerCorrection.objects.get()
    closed_cost = line_values(node)["cost"]

    assert admin.delete(f"/api/v1/locked-periods/{locked['id']}/").status_code == 204
    ledger_pending_run(now=timezone.now())

    correction.refresh_from_db()
    reversal = LedgerCorrection.objects.get(cause="reversal")
    assert reversal.reverses == correction and correction.reversed_at is not None
    assert (reversal.cost, reversal.restated_hour) == (-correction.cost, at(H))
    assert line_values(node)["cost"] == closed_cost + correction.cost  # the rewritten line holds it now
    # counted once: line + correction + reversal
    assert sum(c.cost for c in LedgerCorrection.objects.all()) == 0
    # nothing left to mark: a second run books nothing more
    ledger_pending_run(now=timezone.now())
    assert LedgerCorrection.objects.count() == 2


def test_a_correction_made_while_a_later_period_is_locked_is_booked_after_it(client, node, admin):
    lock(admin)
    now_hour = floor_hour(timezone.now())
    later = {"start": (now_hour - timedelta(hours=1)).isoformat(), "end": (now_hour + timedelta(hours=5)).isoformat()}
    assert admin.post("/api/v1/locked-periods/", later, format="json").status_code == 201

    usage_arrives(client, node.token, H + 2000.0)

    assert LedgerCorrection.objects.get().booked_hour == now_hour + timedelta(hours=5)


def _csv(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def usage_report(api: APIClient, start: datetime, end: datetime) -> dict:
    query = {"start": start.isoformat(), "end": end.isoformat(), "granularity": "total"}
    response = api.get("/api/v1/reports/usage/", query)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_closed_periods_report_is_unchanged_and_the_correction_is_in_the_first_open_period(client, node, admin):
    lock(admin)
    closed_period = (at(H), at(H + HOUR_S))
    before = usage_report(admin, *closed_period)
    assert (before["closed"], before["restated"]) == ("all", {"count": 0, "by_currency": []})

    usage_arrives(client, node.token, H + 2000.0)
    GridIntensityFactory(
        zone=node.site.grid_zone, hour_start=at(H), gco2e_per_kwh=Decimal(500), fetched_at=timezone.now()
    )
    ledger_mark_intensity_since(since=timezone.now() - timedelta(minutes=1), now=timezone.now())
    ledger_pending_run(now=timezone.now())

    after = usage_report(admin, *closed_period)
    assert after["results"] == before["results"]  # the closed figures
    late, revised = LedgerCorrection.objects.order_by("id")
    currency = node.site.currency
    assert after["restated"]["count"] == 2
    (restated,) = after["restated"]["by_currency"]
    assert (restated["currency"], restated["count"], restated["reversals"]) == (currency, 2, 0)
    assert Decimal(restated["cost"]) == (late.cost + revised.cost).quantize(Decimal("0.01"))
    # the booking period's report: the corrections as figures of their own, not in its rows
    booked_hour = floor_hour(timezone.now())
    booking = usage_report(admin, booked_hour, booked_hour + timedelta(hours=1))
    assert (booking["closed"], booking["corrections"]["count"]) == ("no", 2)
    assert booking["corrections"]["by_currency"][0]["cost"] == restated["cost"]
    # the list, JSON and CSV
    query = {"start": booked_hour.isoformat(), "end": (booked_hour + timedelta(hours=1)).isoformat()}
    listed = admin.get("/api/v1/reports/corrections/", query).json()
    assert [(row["cause"], row["restated_hour"]) for row in listed["results"]] == [
        ("late_telemetry", at(H).isoformat().replace("+00:00", "Z")),
        ("revised_intensity", at(H).isoformat().replace("+00:00", "Z")),
    ]
    rows = _csv(admin.get("/api/v1/reports/corrections/", query | {"format": "csv"}))
    assert [row["cause"] for row in rows] == ["late_telemetry", "revised_intensity"]
    assert rows[0]["node"] == node.hostname and Decimal(rows[0]["cost"]) == late.cost.quantize(Decimal("0.01"))
    by_restated = admin.get(
        "/api/v1/reports/corrections/",
        {"start": at(H).isoformat(), "end": at(H + HOUR_S).isoformat(), "by": "restated"},
    )
    assert by_restated.json()["count"] == 2
    # the audit trail, for the closed period
    audit = admin.get("/api/v1/audit/", {"period_start": at(H).isoformat(), "period_end": at(H + HOUR_S).isoformat()})
    assert [entry["subject"] for entry in audit.json()] == ["ledger_correction", "ledger_correction", "locked_period"]


def test_the_comparison_and_the_sustainability_report_say_whether_their_period_is_closed(client, node, admin):
    lock(admin)
    usage_arrives(client, node.token, H + 2000.0)
    query = {"start": at(H).isoformat(), "end": at(H + 2 * HOUR_S).isoformat()}

    comparison = admin.get("/api/v1/reports/comparison/", query).json()
    sustainability = admin.get("/api/v1/reports/sustainability/", query).json()
    lines = _csv(admin.get("/api/v1/reports/sustainability/", query | {"format": "csv"}))

    assert (comparison["closed"], comparison["restated"]["count"]) == ("partly", 1)
    assert (sustainability["closed"], sustainability["restated"]["count"]) == ("partly", 1)
    metrics = {line["metric"]: line["value"] for line in lines}
    assert (metrics["closed"], metrics["restated:count"]) == ("partly", "1")
    assert f"restated:{node.site.currency}:cost" in metrics


def test_a_silent_held_hour_of_a_locked_period_is_booked_once_as_a_correction(node, admin):
    # the hour after H had no telemetry and no line yet when it was locked
    body = {"start": at(H + HOUR_S).isoformat(), "end": at(H + 2 * HOUR_S).isoformat()}
    assert admin.post("/api/v1/locked-periods/", body, format="json").status_code == 201

    for _ in range(2):
        ledger_mark_held_hours(now=timezone.now())
        ledger_pending_run(now=timezone.now())

    assert not NodeHourLedger.objects.filter(node=node, hour_start=at(H + HOUR_S)).exists()
    accrued = LedgerCorrection.objects.get(restated_hour=at(H + HOUR_S))
    assert (accrued.cause, accrued.hardware_cost) == ("inputs_or_formula", Decimal("2.50"))  # 1 GPU x 2.50
    assert not LedgerPending.objects.filter(node=node, hour_start=at(H + HOUR_S)).exists()


# --- the corrections in the FOCUS export and the journal -------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
VALIDATOR = ROOT.parent / "shared" / "bin" / "focus-validate"
FOCUS_CHECK = ROOT / "bin" / "focus-check"  # the validator, less its one condition-less InvoiceId rule


def revise_intensity(node: Node) -> None:
    """A provider revises hour H's grid value, and the ledger's queue takes it."""
    GridIntensityFactory(
        zone=node.site.grid_zone, hour_start=at(H), gco2e_per_kwh=Decimal(500), fetched_at=timezone.now()
    )
    ledger_mark_intensity_since(since=timezone.now() - timedelta(minutes=1), now=timezone.now())
    ledger_pending_run(now=timezone.now())


def focus_text(api: APIClient, start: datetime, end: datetime) -> str:
    response = api.get("/api/v1/reports/focus/", {"start": start.isoformat(), "end": end.isoformat()})
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content).decode()


def focus(api: APIClient, start: datetime, end: datetime) -> list[dict]:
    return list(csv.DictReader(io.StringIO(focus_text(api, start, end))))


def iso_z(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def test_corrections_are_focus_rows_of_the_first_open_period_with_charge_class_correction(client, node, admin):
    lock(admin)
    closed_rows = focus(admin, at(H), at(H + HOUR_S))

    usage_arrives(client, node.token, H + 2000.0)
    revise_intensity(node)

    # the closed period's export is as closed
    assert focus(admin, at(H), at(H + HOUR_S)) == closed_rows
    # the first open period's export: the two corrections, charged to hour H, billed in the booking month
    booked_hour = floor_hour(timezone.now())
    late, revised = LedgerCorrection.objects.order_by("id")
    rows = [row for row in focus(admin, booked_hour, booked_hour + timedelta(hours=1)) if row["ChargeClass"]]
    assert [(row["ChargeClass"], row["x_ChargeKind"]) for row in rows] == [
        ("Correction", "electricity"),  # late telemetry: more energy bought, the rent unchanged
        ("Correction", "rent"),  # the revised grid value: no money, its carbon on the line's first kind
    ]
    electricity, carbon = rows
    assert {(row["ChargePeriodStart"], row["ChargePeriodEnd"]) for row in rows} == {
        (iso_z(at(H)), iso_z(at(H + HOUR_S)))
    }
    assert {row["BillingPeriodStart"] for row in rows} == {iso_z(booked_hour.replace(day=1, hour=0))}
    assert Decimal(electricity["BilledCost"]) == Decimal(electricity["EffectiveCost"]) == late.electricity_cost
    assert Decimal(electricity["ConsumedQuantity"]) == Decimal(electricity["x_FacilityKwh"]) == late.facility_kwh
    assert Decimal(electricity["x_LocationCo2eG"]) == late.location_co2e_g
    assert "correction: late_telemetry" in electricity["ChargeDescription"]
    assert (Decimal(carbon["BilledCost"]), Decimal(carbon["x_LocationCo2eG"])) == (0, revised.location_co2e_g)
    assert carbon["PricingQuantity"] == carbon["ConsumedQuantity"] == ""  # an amount restated, not a quantity


def test_a_held_hour_accrued_after_the_lock_is_a_rent_correction_in_the_api_the_csv_and_focus(node, admin):
    # the hour after H had no telemetry and no line yet when it was locked
    body = {"start": at(H + HOUR_S).isoformat(), "end": at(H + 2 * HOUR_S).isoformat()}
    assert admin.post("/api/v1/locked-periods/", body, format="json").status_code == 201

    ledger_mark_held_hours(now=timezone.now())
    ledger_pending_run(now=timezone.now())

    booked_hour = floor_hour(timezone.now())
    query = {"start": booked_hour.isoformat(), "end": (booked_hour + timedelta(hours=1)).isoformat()}
    (listed,) = [r for r in admin.get("/api/v1/reports/corrections/", query).json()["results"]]
    split = (listed["hardware_cost"], listed["rent_cost"], listed["depreciation_cost"], listed["opex_cost"])
    assert split == ("2.50", "2.50", "0.00", "0.00")  # 1 GPU x 2.50, all of it rent
    (row,) = _csv(admin.get("/api/v1/reports/corrections/", query | {"format": "csv"}))
    assert (row["rent_cost"], row["restated_hour"]) == ("2.50", iso_z(at(H + HOUR_S)))
    (rent,) = [r for r in focus(admin, booked_hour, booked_hour + timedelta(hours=1)) if r["ChargeClass"]]
    assert (rent["x_ChargeKind"], rent["BilledCost"], rent["ChargePeriodStart"]) == (
        "rent", "2.5", iso_z(at(H + HOUR_S))
    )  # fmt: skip


def _expenses(rows: list[dict], charge_class: str) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = {}
    for row in rows:
        if row["account"].startswith("6") and row["charge_class"] == charge_class:
            totals[row["currency"]] = totals.get(row["currency"], Decimal(0)) + Decimal(row["amount"])
    return totals


def test_the_journal_books_the_corrections_apart_and_foots_to_the_usage_report(client, node, admin):
    lock(admin)
    usage_arrives(client, node.token, H + 2000.0)
    revise_intensity(node)
    month = f"{floor_hour(timezone.now()):%Y-%m}"

    journal = _csv(admin.get("/api/v1/reports/journal/", {"period": month}))
    usage = admin.get("/api/v1/reports/usage/", {"period": month, "granularity": "total", "group_by": "currency"})

    report = usage.json()
    (corrections,) = report["corrections"]["by_currency"]
    assert _expenses(journal, "Correction") == {corrections["currency"]: Decimal(corrections["cost"])}
    assert _expenses(journal, "") == {row["currency"]: Decimal(row["cost"]) for row in report["results"]}
    corrected = [row for row in journal if row["charge_class"] == "Correction"]
    assert {(row["account"], row["charge_kind"]) for row in corrected} >= {("6400", "electricity")}
    assert all("ChargeClass=Correction" in row["reference"] for row in corrected)
    assert sum(Decimal(row["debit"]) for row in journal) == sum(Decimal(row["credit"]) for row in journal)


@pytest.mark.slow
@pytest.mark.skipif(not VALIDATOR.exists(), reason=f"the FinOps Foundation's validator is not at {VALIDATOR}")
def test_an_export_with_correction_rows_passes_the_focus_validator(client, node, admin, tmp_path):
    lock(admin)
    usage_arrives(client, node.token, H + 2000.0)
    revise_intensity(node)
    text = focus_text(admin, at(H), floor_hour(timezone.now()) + timedelta(hours=1))
    assert {row["ChargeClass"] for row in csv.DictReader(io.StringIO(text))} == {"", "Correction"}
    path = tmp_path / "focus.csv"
    path.write_text(text, encoding="utf-8")

    result = subprocess.run(
        [str(FOCUS_CHECK), str(path)], capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "FOCUS_VALIDATE": str(VALIDATOR)},
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr


def test_corrections_stored_before_the_split_get_it_from_their_price(node, admin):
    migration = importlib.import_module("accounting.migrations.0020_correction_split_cost")
    # given: a locked silent hour accrued as a correction, then unlocked and reversed
    body = {"start": at(H + HOUR_S).isoformat(), "end": at(H + 2 * HOUR_S).isoformat()}
    locked = admin.post("/api/v1/locked-periods/", body, format="json").json()
    ledger_mark_held_hours(now=timezone.now())
    ledger_pending_run(now=timezone.now())
    assert admin.delete(f"/api/v1/locked-periods/{locked['id']}/").status_code == 204
    ledger_pending_run(now=timezone.now())
    split = ("rent_cost", "depreciation_cost", "opex_cost")
    computed = list(LedgerCorrection.objects.order_by("id").values_list("cause", *split))
    LedgerCorrection.objects.update(rent_cost=0, depreciation_cost=0, opex_cost=0)
    # when
    migration.split_correction_hardware_cost(apps, None)
    # then: as the ledger books them now, the reversal the negated split of its correction
    assert list(LedgerCorrection.objects.order_by("id").values_list("cause", *split)) == computed
    assert computed == [("inputs_or_formula", Decimal("2.50"), 0, 0), ("reversal", Decimal("-2.50"), 0, 0)]


# A locked hour's taxes are restated like its other figures: the node's site gets taxes (25 % VAT, not
# recoverable; 0.10 per kWh energy tax) after hour H was computed; the late telemetry's recompute restates the
# hour with them, as a correction with its energy tax and VAT, FOCUS Tax rows of class Correction, journalled apart.
STORED = Decimal("1e-9")  # each figure is stored to 12 places


def test_a_locked_hours_taxes_are_a_correction_in_focus_and_the_journal(client, node, admin):
    SiteTax.objects.create(
        site=node.site, vat_rate=Decimal("0.25"), vat_recoverable=False, energy_tax_per_kwh=Decimal("0.10"),
        valid_from=at(H - 86400),
    )  # fmt: skip
    closed = line_values(node)
    assert closed["energy_tax_cost"] == 0  # computed before the taxes were entered
    lock(admin)

    usage_arrives(client, node.token, H + 2000.0)  # type: ignore[attr-defined]

    assert line_values(node) == closed  # the closed line is never rewritten
    (late,) = LedgerCorrection.objects.all()
    facility = closed["facility_kwh"] + late.facility_kwh
    electricity = closed["electricity_cost"] + late.electricity_cost
    assert abs(late.energy_tax_cost - facility * Decimal("0.10")) < STORED  # each stored to 12 places
    assert late.vat_amount == late.vat_cost
    assert abs(late.vat_cost - (closed["rent_cost"] + electricity) * Decimal("0.25")) < STORED
    assert abs(late.cost - (late.electricity_cost + late.energy_tax_cost + late.vat_cost)) < STORED

    now = floor_hour(timezone.now())
    rows = focus(admin, at(H), now + timedelta(hours=1))
    taxes = {row["x_ChargeKind"]: row for row in rows if row["ChargeCategory"] == "Tax"}
    assert set(taxes) == {"energy_tax", "vat"}
    assert {row["ChargeClass"] for row in taxes.values()} == {"Correction"}
    assert Decimal(taxes["vat"]["EffectiveCost"]) == late.vat_cost  # not recoverable: a cost
    month = f"{now:%Y-%m}"
    journal = _csv(admin.get("/api/v1/reports/journal/", {"period": month}))
    usage = admin.get("/api/v1/reports/usage/", {"period": month, "granularity": "total"}).json()
    (corrections,) = usage["corrections"]["by_currency"]
    assert corrections["energy_tax_cost"] is not None
    assert _expenses(journal, "Correction") == {corrections["currency"]: Decimal(corrections["cost"])}
    corrected = {row["account"] for row in journal if row["charge_class"] == "Correction"}
    assert {"6450", "6460"} <= corrected
