"""Charts that tell the truth: gaps break lines and are shaded, partial buckets say so, months read as months,
and a fleet (or GPU model) keeps its colour on every page. Read from the pages' own Plotly JSON."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from common.charts import FLEET_PALETTE, Buckets, gpu_model_colour, series_lines, stacked_bars
from dashboards.nodes import RECENT_SLOT_S, recent_missing_spans
from fleets.models import Fleet, Role
from tests.helpers.dashboard_data import two_fleets
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def figure_json(html: str, div_id: str) -> tuple[list[dict], dict]:
    """The data and layout of the chart ``div_id`` as the page hands them to ``Plotly.newPlot``."""
    found = re.search(rf'Plotly\.newPlot\(\s*"{div_id}",\s*', html)
    assert found, f"no chart {div_id} on the page"
    decoder = json.JSONDecoder()
    data, after = decoder.raw_decode(html, found.end())
    layout, _ = decoder.raw_decode(html, html.index("{", after))
    return data, layout


def test_a_power_line_breaks_at_a_5_5_minute_gap_and_a_70_s_restart_and_both_are_shaded():
    # 10-s slots of a 1 Hz collector: 12:00:00-12:01:50, nothing 12:02-12:07:29 (5.5 min), 12:07:30-12:08:00,
    # nothing for 70 s, then 12:09:10-12:09:50.
    slots = [T0 + timedelta(seconds=s) for s in [*range(0, 120, 10), *range(450, 490, 10), *range(550, 600, 10)]]
    series = {"GPU 0": [(t, 300.0) for t in slots]}
    gap = timedelta(seconds=RECENT_SLOT_S + 1)

    spans = recent_missing_spans(series, start=T0, end=T0 + timedelta(minutes=10), gap=gap)
    figure = series_lines("Power", "W", series, gap=gap, missing_spans=spans)

    assert spans == [
        (T0 + timedelta(seconds=120), T0 + timedelta(seconds=450)),  # 5.5 min without a slot
        (T0 + timedelta(seconds=490), T0 + timedelta(seconds=550)),  # the restart: 70 s from the last sample
    ]
    line = figure.data[0]
    assert [i for i, value in enumerate(line.y) if value is None] == [12, 17], "one break per gap, none elsewhere"
    assert len(figure.layout.shapes) == 2
    assert line.connectgaps in (None, False)


def test_no_break_and_no_shading_for_a_collector_that_samples_every_25_s():
    slots = [T0 + timedelta(seconds=s) for s in range(0, 600, 25)]
    series = {"GPU 0": [(t.replace(second=t.second - t.second % 10), 300.0) for t in slots]}
    gap = timedelta(seconds=RECENT_SLOT_S + 25)

    figure = series_lines("Power", "W", series, gap=gap)

    assert None not in figure.data[0].y
    assert recent_missing_spans(series, start=T0, end=T0 + timedelta(seconds=600), gap=gap) == []


def test_partial_days_at_both_ends_of_a_period_are_marked_and_said_in_the_hover():
    # Last 7 days at 17:20: 2026-11-22 18:00 to 2026-11-29 18:00, the last hour still running.
    now = datetime(2026, 11, 29, 17, 20, tzinfo=UTC)
    buckets = Buckets("day", datetime(2026, 11, 22, 18, tzinfo=UTC), datetime(2026, 11, 29, 18, tzinfo=UTC), now=now)
    days = [datetime(2026, 11, d, tzinfo=UTC) for d in range(22, 30)]

    figure = stacked_bars("Cost", "USD", {"enterprise": [(d, 100.0) for d in days]}, buckets=buckets)

    bar = figure.data[0]
    assert bar.customdata[0] == "partial: 6 of 24 h"
    assert bar.customdata[-1] == "partial: 17.3 of 24 h"
    assert set(bar.customdata[1:-1]) == {""}
    assert list(bar.marker.opacity) == [0.45, *[1.0] * 6, 0.45]
    assert "%{customdata}" in bar.hovertemplate
    assert "partial bucket" in figure.layout.annotations[0].text


def test_month_buckets_are_labelled_as_months():
    buckets = Buckets("month", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
    few = stacked_bars("Cost", "USD", {"a": [(datetime(2026, 10, 1, tzinfo=UTC), 1.0)]}, buckets=buckets)
    many = series_lines(
        "SCI", "g", {"a": [(datetime(2026, m, 1, tzinfo=UTC), 1.0) for m in range(1, 12)]}, buckets=buckets
    )

    assert list(few.data[0].x) == ["Oct 2026"]
    assert (many.layout.xaxis.tickformat, many.layout.xaxis.dtick) == ("%b %Y", "M1")
    assert Buckets("month", T0, T0).hours(datetime(2026, 2, 10, tzinfo=UTC))[1] == 28 * 24


@pytest.fixture
def finance_user(db, time_machine):
    time_machine.move_to(datetime(2026, 11, 29, 17, 20, tzinfo=UTC))  # lines for 14:00-17:00, today
    organization = OrganizationFactory(name="Acme AI", slug="acme-ai")
    two_fleets(organization)
    # A third fleet created later, with no lines: the first two keep their colours.
    Fleet.objects.create(organization=organization, name="lab")
    user = UserFactory(username="fiona")
    MembershipFactory(user=user, organization=organization, role=Role.FINANCE)
    return user


def _colours(traces: list[dict]) -> dict[str, object]:
    return {trace["name"]: (trace.get("marker") or {}).get("color") for trace in traces}


def test_one_colour_per_fleet_and_per_gpu_model_on_every_page(client, finance_user):
    client.force_login(finance_user)
    enterprise, consumer = FLEET_PALETTE[0], FLEET_PALETTE[1]  # the organization's fleets in order of creation

    finance = client.get("/finance/").content.decode()
    compare = client.get("/compare/").content.decode()
    sustainability = client.get("/sustainability/").content.decode()

    cost, _ = figure_json(finance, "chart-cost-by-fleet")
    per_token, _ = figure_json(finance, "chart-cost-per-token")
    scatter, _ = figure_json(compare, "chart-cost-vs-ttft")
    j_per_token, _ = figure_json(compare, "chart-j-per-token")
    by_model, _ = figure_json(sustainability, "chart-j-per-token")
    assert _colours(cost) == {"enterprise": enterprise, "consumer": consumer}
    assert _colours(scatter) == {"enterprise · h100-sxm": enterprise, "consumer · rtx-4090": consumer}
    assert dict(zip(j_per_token[0]["x"], j_per_token[0]["marker"]["color"], strict=True)) == {
        "enterprise · h100-sxm": enterprise,
        "consumer · rtx-4090": consumer,
    }
    # Per GPU model (the finance chart's series, the sustainability chart's bars): the model's own colour.
    assert _colours(per_token) == {"h100-sxm": gpu_model_colour("h100-sxm"), "rtx-4090": gpu_model_colour("rtx-4090")}
    assert dict(zip(by_model[0]["x"], by_model[0]["marker"]["color"], strict=True)) == {
        "h100-sxm": gpu_model_colour("h100-sxm"),
        "rtx-4090": gpu_model_colour("rtx-4090"),
    }
    assert len({enterprise, consumer, gpu_model_colour("h100-sxm"), gpu_model_colour("rtx-4090")}) == 4


def test_the_finance_chart_marks_todays_bucket_partial(client, finance_user):
    client.force_login(finance_user)

    cost, layout = figure_json(
        client.get("/finance/?period=7d&granularity=day").content.decode(), "chart-cost-by-fleet"
    )

    # One bucket, today's: labelled as a day on a category axis, and partial: the period ends where the ledger is
    # complete, 17:00 (the hour in progress, 17:00-17:20, is not shown), so 17 of its 24 h.
    assert cost[0]["x"] == ["Sun 29 Nov"]
    assert cost[0]["customdata"] == ["partial: 17 of 24 h"]
    assert layout["xaxis"]["type"] == "category"


def test_ten_minutes_without_a_sample_are_shaded_whole():
    end = T0 + timedelta(minutes=10)

    assert recent_missing_spans({}, start=T0, end=end, gap=timedelta(seconds=11)) == [(T0, end)]


def test_a_lone_daily_point_is_drawn_on_the_whole_period_one_tick_a_day():
    buckets = Buckets("day", datetime(2026, 11, 22, 18, tzinfo=UTC), datetime(2026, 11, 29, 18, tzinfo=UTC))

    figure = series_lines("Power", "W", {"GPU 0": [(datetime(2026, 11, 29, tzinfo=UTC), 300.0)]}, buckets=buckets)

    assert list(figure.layout.xaxis.range) == [
        datetime(2026, 11, 22, tzinfo=UTC),
        datetime(2026, 11, 29, 18, tzinfo=UTC),
    ]
    assert figure.layout.xaxis.dtick == 86_400_000
