"""A dated input starts and ends on a whole UTC hour between 1970 and 3000: year 0001, 9999 or 10:30 is a 400 naming it.

Prices, tariffs, PUE periods, market factors, instruments and locked periods alike; nothing is saved. An asset's
in-service date (a node's commissioning and decommissioning, an owned price's in-service date, a card's acquisition)
lies in the same range, at any minute.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from accounting.models import GpuAsset, NodePrice, SiteMarketFactor, SitePue, SiteTariff
from fleets.models import Node, NodeCredential, Role
from governance.models import AuditEntry, LockedPeriod
from scope2.models import ContractualInstrument
from tests.helpers.inputs import rent_body

BAD = [
    ("0001-01-01T00:00:00Z", "must lie between 1970-01-01 and 3000-01-01"),
    ("9999-12-31T23:00:00Z", "must lie between 1970-01-01 and 3000-01-01"),
    ("2026-01-02T10:30:00Z", "must be on a whole UTC hour (the ledger is hourly), not 10:30:00"),
]


def _bodies(node: Any, site: Any, instant: str) -> list[tuple[str, dict[str, Any], str, Any]]:
    """(path, body, field named, model) of each dated input, with ``instant`` where it starts."""
    return [
        ("/api/v1/node-prices/", rent_body(node, valid_from=instant), "valid_from", NodePrice),
        ("/api/v1/site-tariffs/", {"site": site.pk, "flat_price_per_kwh": "0.2", "valid_from": instant},
         "valid_from", SiteTariff),
        ("/api/v1/site-pue-periods/", {"site": site.pk, "pue": "1.4", "valid_from": instant}, "valid_from", SitePue),
        ("/api/v1/site-market-factors/", {"site": site.pk, "gco2e_per_kwh": "250", "source": "supplier:B",
                                          "valid_from": instant}, "valid_from", SiteMarketFactor),
        ("/api/v1/instruments/", {"site": site.pk, "kind": "ppa", "name": "Wind PPA", "volume_mwh": "10",
                                  "delivery_start": instant, "delivery_end": "2027-01-01T00:00:00Z",
                                  "vintage_year": 2026, "generation_zone": "DE", "technology": "wind"},
         "delivery_start", ContractualInstrument),
        ("/api/v1/locked-periods/", {"start": instant, "end": "2027-01-01T00:00:00Z"}, "start", LockedPeriod),
    ]  # fmt: skip


@pytest.mark.parametrize(("instant", "problem"), BAD)
def test_a_dated_input_outside_the_range_or_off_the_hour_is_refused_naming_the_field(
    client_as, node_a, site_a, instant, problem
):
    admin = client_as(Role.ADMIN)
    for path, body, field, model in _bodies(node_a, site_a, instant):
        before = model.objects.count()
        answer = admin.post(path, body, format="json")

        assert answer.status_code == 400, (path, answer.content)
        assert field in answer.content.decode() and problem in answer.content.decode(), (path, answer.json())
        assert model.objects.count() == before, path


def test_a_dated_input_on_a_whole_hour_is_saved(client_as, node_a, site_a):
    admin = client_as(Role.ADMIN)
    for path, body, _, _model in _bodies(node_a, site_a, "2026-01-02T10:00:00Z"):
        answer = admin.post(path, body, format="json")
        assert answer.status_code == 201, (path, answer.content)


# An asset's in-service date: the ledger adds the asset's life to it (depreciation, embodied carbon), so it lies
# between 1970 and 3000 too. Not on the hour: a node is commissioned when it is, and a card bought on a day.
OUT_OF_RANGE = [BAD[0][0], BAD[1][0], "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"]


@pytest.mark.parametrize("instant", OUT_OF_RANGE)
def test_a_node_commissioned_outside_the_range_is_refused_naming_commissioned_at(client_as, fleet_a, site_a, instant):
    body = {"fleet": fleet_a.pk, "site": site_a.pk, "hostname": "gpu-far", "commissioned_at": instant}
    answer = client_as(Role.ENGINEER).post("/api/v1/node-enrollments/", body, format="json")

    assert answer.status_code == 400, answer.content
    assert "commissioned_at" in answer.content.decode(), answer.json()
    assert not Node.objects.filter(hostname="gpu-far").exists()
    assert not NodeCredential.objects.filter(node__hostname="gpu-far").exists()


def test_a_node_commissioned_off_the_hour_inside_the_range_is_enrolled(client_as, fleet_a, site_a):
    body = {"fleet": fleet_a.pk, "site": site_a.pk, "hostname": "gpu-near", "commissioned_at": "2026-01-02T10:30:00Z"}
    answer = client_as(Role.ENGINEER).post("/api/v1/node-enrollments/", body, format="json")

    assert answer.status_code == 201, answer.content


@pytest.mark.parametrize(
    ("field", "day"),
    [("commissioned_at", "9999-12-31"), ("commissioned_at", "1969-12-31"), ("decommissioned_at", "9999-12-31")],
)
def test_a_node_dated_outside_the_range_in_the_admin_is_not_saved(staff, node_a, field, day):
    form = {
        "fleet": str(node_a.fleet_id), "site": str(node_a.site_id), "hostname": node_a.hostname,
        "tenure": node_a.tenure, "commissioned_at_0": "2025-12-01", "commissioned_at_1": "00:00:00",
        "decommissioned_at_0": "", "decommissioned_at_1": "", f"{field}_0": day, f"{field}_1": "23:00:00",
    }  # fmt: skip

    response = staff.post(reverse("admin:fleets_node_change", args=[node_a.pk]), form)

    assert any(f"Not saved: {field}: must lie between" in str(m) for m in get_messages(response.wsgi_request))
    stored = Node.objects.get(pk=node_a.pk)
    assert (stored.commissioned_at, stored.decommissioned_at) == (node_a.commissioned_at, None)
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize("instant", OUT_OF_RANGE)
def test_an_owned_price_in_service_outside_the_range_is_refused_naming_in_service_at(client_as, node_a, instant):
    body = rent_body(node_a, kind="owned", rate_per_h=None, capex="30000", lifetime_years="4", in_service_at=instant)
    answer = client_as(Role.ADMIN).post("/api/v1/node-prices/", body, format="json")

    assert answer.status_code == 400, answer.content
    assert "in_service_at" in answer.content.decode(), answer.json()
    assert not NodePrice.objects.exists()


@pytest.mark.parametrize("day", ["9999-12-31", "3000-01-02", "1969-12-31", "0001-01-01"])
def test_a_gpu_acquired_outside_the_range_is_refused_naming_acquired_on(client_as, gpu_a, day):
    answer = client_as(Role.ADMIN).post("/api/v1/gpu-assets/", {"gpu": gpu_a.pk, "acquired_on": day}, format="json")

    assert answer.status_code == 400, answer.content
    assert "acquired_on" in answer.content.decode() and "must lie between" in answer.content.decode()
    assert not GpuAsset.objects.exists()


def test_a_gpu_acquired_inside_the_range_is_saved(client_as, gpu_a):
    answer = client_as(Role.ADMIN).post(
        "/api/v1/gpu-assets/", {"gpu": gpu_a.pk, "acquired_on": "2025-11-03"}, format="json"
    )

    assert answer.status_code == 201, answer.content
