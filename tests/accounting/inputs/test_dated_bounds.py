"""A dated input starts and ends on a whole UTC hour between 1970 and 3000: year 0001, 9999 or 10:30 is a 400 naming it.

Prices, tariffs, PUE periods, market factors, instruments and locked periods alike; nothing is saved.
"""

from __future__ import annotations

from typing import Any

import pytest

from accounting.models import NodePrice, SiteMarketFactor, SitePue, SiteTariff
from fleets.models import Role
from governance.models import LockedPeriod
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
