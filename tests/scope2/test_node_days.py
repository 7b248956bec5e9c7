"""The Scope 2 boundary reads whole UTC days of lines from the ledger's node-days, and gives what the lines give.

Site fra-1 (DE) holds three nodes, each drawing 1 kWh of facility energy an hour at 200 gCO2e/kWh:

- ``own-1``, owned: every hour of 2026-04-01 00:00 to 04-04 12:00 (84 hours);
- ``rent-in``, rented with power in the rent: 04-01 00:00 to 04-02 03:00 (27 hours), Scope 3 Category 1;
- ``rent-out``, rented, its power billed to the organization: 04-02 20:00 to 04-04 12:00 (40 hours), Scope 2.

Over ``[04-02 05:00, 04-04 06:00)`` the year-to-date Scope 2 hours start on 1 January: 04-01 is a whole day read
from the node-days, before the period (``rent-in``'s lines only there and in 04-02's first hours, none in the
period: Category 1 holds nothing); 04-03 is a whole day inside it. Scope 2 in the period: ``own-1``'s 49 hours
and ``rent-out``'s 34, 83 kWh, 16.6 kg.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounting.models import LedgerNodeDay, NodeHourLedger
from accounting.node_days import node_days_check, node_days_recompute
from accounting.site_hours import site_hours_check, site_hours_rebuild
from common.periods import whole_days
from fleets.models import Node, Site
from tests.helpers.factories import NodeFactory
from tests.helpers.instruments import ledger_hours

pytestmark = pytest.mark.django_db

APRIL_1 = datetime(2026, 4, 1, tzinfo=UTC)


def _hours(first: datetime, last: datetime) -> list[datetime]:
    return [first + timedelta(hours=i) for i in range(int((last - first) / timedelta(hours=1)))]


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 4, day, hour, tzinfo=UTC)


@pytest.fixture
def nodes(site_a: Site) -> dict[str, Node]:
    made = {}
    for name, tenure, first, last in (
        ("own-1", "owned", at(1), at(4, 12)),
        ("rent-in", "rented", at(1), at(2, 3)),
        ("rent-out", "rented", at(2, 20), at(4, 12)),
    ):
        node = NodeFactory(fleet__organization=site_a.organization, site=site_a, hostname=name, tenure=tenure)
        ledger_hours(node, _hours(first, last), facility_kwh=Decimal(1), location_g_per_kwh=Decimal(200))
        made[name] = node
    NodeHourLedger.objects.filter(node=made["rent-in"]).update(electricity_status="included")
    site_hours_rebuild()  # lines written by hand: their site-hours and node-days summed again
    return made


PERIODS = [
    {"start": "2026-04-02T05:00:00Z", "end": "2026-04-04T06:00:00Z"},  # part days either side of whole ones
    {"start": "2026-04-01T02:00:00Z", "end": "2026-04-02T02:00:00Z"},  # rent-in's lines inside
    {"start": "2026-04-02T00:00:00Z", "end": "2026-04-03T00:00:00Z"},  # one whole day, nothing partial
    {"start": "2026-04-03T10:00:00Z", "end": "2026-04-03T11:00:00Z"},  # one hour inside a day
    {"period": "2026"},
]
URLS = ("/api/v1/reports/scope2/", "/api/v1/reports/sustainability/", "/api/v1/reports/scope2/esrs/")


def test_the_node_days_count_each_nodes_lines_per_day_and_status(nodes: dict[str, Node]) -> None:
    rows = {
        (row.node.hostname, row.day_start, row.electricity_status): row.lines
        for row in LedgerNodeDay.objects.select_related("node")
    }
    assert rows == {
        ("own-1", at(1), "priced"): 24, ("own-1", at(2), "priced"): 24, ("own-1", at(3), "priced"): 24,
        ("own-1", at(4), "priced"): 12, ("rent-in", at(1), "included"): 24, ("rent-in", at(2), "included"): 3,
        ("rent-out", at(2), "priced"): 4, ("rent-out", at(3), "priced"): 24, ("rent-out", at(4), "priced"): 12,
    }  # fmt: skip
    assert site_hours_check() == []


def test_the_scope2_reports_from_node_days_are_the_reports_from_lines(
    nodes: dict[str, Node], sustainability_a: Any, monkeypatch: Any
) -> None:
    def answers() -> tuple[list[Any], bool]:
        found = []
        with CaptureQueriesContext(connection) as queries:
            for query in PERIODS:
                for url in URLS:
                    response = sustainability_a.get(url, query)
                    assert response.status_code == 200, response.content
                    found.append(response.json())
        return found, any("accounting_ledgernodeday" in query["sql"] for query in queries.captured_queries)

    from_node_days, read = answers()
    assert read
    monkeypatch.setattr("scope2.inventory.node_days_in_use", lambda *_: False)
    assert answers() == (from_node_days, False)


def test_a_period_cut_inside_days_takes_the_scope_of_its_own_lines(
    nodes: dict[str, Node], sustainability_a: Any
) -> None:
    middle = sustainability_a.get(URLS[1], PERIODS[0]).json()["inventory"]
    assert (middle["scope2"]["facility_kwh"], middle["scope2"]["location_kgco2e"]) == (83, 16.6)
    assert (middle["scope3"]["category_1"]["facility_kwh"], middle["scope3"]["category_1"]["nodes"]) == (0, 0)
    early = sustainability_a.get(URLS[1], PERIODS[1]).json()["inventory"]
    assert early["scope2"]["facility_kwh"] == 24  # own-1's 24 hours
    assert (early["scope3"]["category_1"]["facility_kwh"], early["scope3"]["category_1"]["nodes"]) == (24, 1)


def test_a_line_stored_again_with_another_status_moves_its_node_day(nodes: dict[str, Node]) -> None:
    NodeHourLedger.objects.filter(node=nodes["rent-in"], hour_start__gte=at(2)).update(electricity_status="priced")
    node_days_recompute([(nodes["rent-in"].pk, at(2, 1))])
    on_april_2 = LedgerNodeDay.objects.filter(node=nodes["rent-in"], day_start=at(2))
    assert list(on_april_2.values_list("electricity_status", "lines")) == [("priced", 3)]
    assert node_days_check() == []


def test_the_check_finds_a_status_changed_by_hand(nodes: dict[str, Node]) -> None:
    NodeHourLedger.objects.filter(node=nodes["own-1"], hour_start=at(3, 7)).update(electricity_status="included")
    problems = site_hours_check()
    assert any("node-day node" in problem and "2026-04-03" in problem for problem in problems), problems
    site_hours_rebuild()
    assert site_hours_check() == []


@pytest.mark.parametrize(
    ("start", "end", "days"),
    [
        (at(2, 5), at(4, 6), (at(3), at(4))),
        (at(2), at(4), (at(2), at(4))),
        (at(2, 5), at(2, 9), (at(3), at(3))),  # none whole: first == last
        (at(2, 5), at(3, 4), (at(3), at(3))),
    ],
)
def test_the_whole_days_of_a_range(start: datetime, end: datetime, days: tuple[datetime, datetime]) -> None:
    assert whole_days(start, end) == days
