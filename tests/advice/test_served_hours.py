"""The ledger's served site-hours (``accounting.served_hours``): written with the lines, changed with what
they are keyed by, checked and rebuilt; the load curves read from them equal those read from the lines."""

from __future__ import annotations

import importlib
from decimal import Decimal

import pytest
from django.core.management import call_command

from accounting.models import LedgerServedHour, NodeHourLedger
from accounting.node_hour_lines import ledger_node_hours_compute
from accounting.site_hours import served_hours_fill, site_hours_check, site_hours_rebuild
from fleets.models import Gpu
from reports.curves import load_curves
from telemetry.models import EndpointHourUsage, ServingEndpoint
from tests.helpers.curves import curves_from_lines, curves_same
from tests.helpers.dashboard_data import period, recent_hours, second_model_serve, two_fleets

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleets(org_a):
    return two_fleets(org_a)


def curves(org, monkeypatch=None):
    """The organization's curves over the fixture's period; with ``monkeypatch``, read from the lines."""
    start, end = period()
    asked = {"organization_ids": [org.pk], "start": start, "end": end}
    return load_curves(**asked) if monkeypatch is None else curves_from_lines(monkeypatch, **asked)


def test_the_ledger_stores_each_served_hour_with_its_lines(org_a, fleets):
    enterprise, _ = fleets
    rows = LedgerServedHour.objects.filter(fleet=enterprise)
    assert sorted(rows.values_list("hour_start", "lines")) == [(hour, 1) for hour in recent_hours()]
    row = rows.get(hour_start=recent_hours()[0])
    line = NodeHourLedger.objects.get(fleet=enterprise, hour_start=row.hour_start)
    served = EndpointHourUsage.objects.get(node_id=line.node_id, hour_start=row.hour_start)
    assert (row.gpu_h, row.cost, row.facility_kwh, row.location_co2e_g) == (
        line.gpu_h, line.cost, line.facility_kwh, line.location_co2e_g,
    )  # fmt: skip
    assert (row.requests, row.generation_tokens, row.ttft_bucket_counts) == (
        served.requests, served.generation_tokens, served.ttft_bucket_counts,
    )  # fmt: skip
    assert (row.llm_model, row.endpoint_kind) == (served.endpoint.model_name, served.endpoint.kind)
    assert site_hours_check(organization_ids=[org_a.pk]) == []


def test_a_node_hour_two_models_share_is_left_to_the_lines(monkeypatch, org_a, fleets):
    enterprise, _ = fleets
    second_model_serve(enterprise)  # the ledger recomputes the node's lines: two served endpoint-hours an hour
    assert not LedgerServedHour.objects.filter(fleet=enterprise).exists()
    assert curves_same(curves(org_a), curves(org_a, monkeypatch))
    assert {curve.key.llm_model for curve in curves(org_a) if curve.fleet_name == "enterprise"} == {
        "llama-8b", "qwen-14b",
    }  # fmt: skip


def test_a_server_kind_changed_at_ingest_is_summed_again(monkeypatch, org_a, fleets):
    enterprise, _ = fleets
    endpoint = ServingEndpoint.objects.get(node__fleet=enterprise)
    assert {row.ttft_basis for row in _enterprise(curves(org_a))} == {"measured"}
    endpoint.kind = "tgi"  # as telemetry.ingest saves it: the kind alone
    endpoint.save(update_fields=["kind"])
    assert set(LedgerServedHour.objects.filter(fleet=enterprise).values_list("endpoint_kind", flat=True)) == {"tgi"}
    # TGI's histogram is a lower bound of TTFT: the curve says so, as read from the lines
    assert {row.ttft_basis for row in _enterprise(curves(org_a))} == {"lower_bound"}
    assert curves_same(curves(org_a), curves(org_a, monkeypatch))


def test_a_deleted_endpoint_takes_its_hours_out(monkeypatch, org_a, fleets):
    enterprise, _ = fleets
    ServingEndpoint.objects.filter(node__fleet=enterprise).get().delete()
    assert not LedgerServedHour.objects.filter(fleet=enterprise).exists()
    assert [curve.fleet_name for curve in curves(org_a)] == ["consumer"]
    assert curves_same(curves(org_a), curves(org_a, monkeypatch))


def test_the_check_names_a_row_that_differs_and_the_command_sums_it_again(org_a, fleets, capsys):
    enterprise, _ = fleets
    row = LedgerServedHour.objects.filter(fleet=enterprise).earliest("hour_start")
    row.cost += Decimal("0.01")
    row.save()
    (problem,) = site_hours_check(organization_ids=[org_a.pk])
    assert problem.startswith(f"served cost {row.cost} != lines' {row.cost - Decimal('0.01')} in ")
    call_command("ledger_site_hours", "--organization", str(org_a.pk))
    assert site_hours_check(organization_ids=[org_a.pk]) == []
    assert LedgerServedHour.objects.get(fleet=enterprise, hour_start=row.hour_start).cost == row.cost - Decimal("0.01")


def test_the_migration_fill_sums_what_the_ledger_stored(org_a, fleets):
    stored = sorted(LedgerServedHour.objects.values_list("site_id", "hour_start", "cost", "requests"))
    LedgerServedHour.objects.all().delete()
    assert served_hours_fill(NodeHourLedger, EndpointHourUsage, LedgerServedHour) == len(stored)
    assert sorted(LedgerServedHour.objects.values_list("site_id", "hour_start", "cost", "requests")) == stored
    site_hours_rebuild(organization_ids=[org_a.pk])
    assert sorted(LedgerServedHour.objects.values_list("site_id", "hour_start", "cost", "requests")) == stored


def _enterprise(curves_read):
    (curve,) = [curve for curve in curves_read if curve.fleet_name == "enterprise"]
    return curve.bands


def _no_embodied_figure(fleet):
    """One of the fleet's GPUs of a model without an embodied figure: its lines computed again."""
    gpu = Gpu.objects.filter(node__fleet=fleet).order_by("index").first()
    gpu.name = "NVIDIA Mystery 9000"
    gpu.save()
    ledger_node_hours_compute(node_id=gpu.node_id, hour_starts=recent_hours())


def test_gpu_hours_without_an_embodied_figure_are_served_and_withhold_the_band_carbon(monkeypatch, org_a, fleets):
    enterprise, _ = fleets
    _no_embodied_figure(enterprise)

    row = LedgerServedHour.objects.filter(fleet=enterprise).earliest("hour_start")
    line = NodeHourLedger.objects.get(fleet=enterprise, hour_start=row.hour_start)
    assert row.embodied_unknown_gpu_h == line.embodied_unknown_gpu_h == 1
    assert site_hours_check(organization_ids=[org_a.pk]) == []
    assert curves_same(curves(org_a), curves(org_a, monkeypatch))
    (band,) = _enterprise(curves(org_a))
    assert band.embodied_unknown_gpu_h == 3
    assert band.gco2e_per_1m_output_tokens is band.embodied_gco2e_per_1m_output_tokens is None
    assert band.operational_gco2e_per_1m_output_tokens is not None  # its kWh all have an intensity
    assert band.carbon_per_token_gaps == (
        "embodied coverage incomplete: 3 GPU-hours are of models without an embodied figure",
    )


def test_the_migration_sums_again_the_served_hours_of_sites_with_gpu_hours_without_an_embodied_figure(org_a, fleets):
    from django.apps import apps

    enterprise, _ = fleets
    _no_embodied_figure(enterprise)
    stored = sorted(LedgerServedHour.objects.values_list("site_id", "hour_start", "embodied_unknown_gpu_h", "cost"))
    LedgerServedHour.objects.update(embodied_unknown_gpu_h=0)  # as 0038 leaves them

    importlib.import_module("accounting.migrations.0039_served_hour_embodied_unknown_filled").refill(apps, None)

    refilled = LedgerServedHour.objects.values_list("site_id", "hour_start", "embodied_unknown_gpu_h", "cost")
    assert sorted(refilled) == stored
    assert site_hours_check(organization_ids=[org_a.pk]) == []
