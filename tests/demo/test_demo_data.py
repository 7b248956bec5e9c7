"""The demo's data without a server: prices and tariffs that validate, and a plausible simulated grid."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from accounting.models import SiteTariff
from accounting.prices import tariff_from_model
from demo import spec
from demo.intensity import shaped_hours
from demo.progress import Progress
from fleets.models import Site
from grid import annual_intensity
from tests.helpers.demo import FakeStream

DAY_START = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday, away from clock changes


def day_of(zone: str, time_zone: str, days: int = 1) -> list[Decimal]:
    end = DAY_START + timedelta(days=days)
    values = shaped_hours(zone=zone, time_zone=time_zone, start=DAY_START, end=end, now=end, source="simulated:test")
    assert len(values) == 24 * days and not any(v.is_forecast for v in values)
    return [v.gco2e_per_kwh for v in values]


@pytest.mark.parametrize("site", spec.SITES, ids=lambda s: s.name)
def test_each_site_has_a_known_zone_and_a_tariff_that_covers_every_hour_once(site: spec.SiteSpec) -> None:
    assert annual_intensity(site.grid_zone, 2026) is not None
    if site.windows:
        row = SiteTariff(
            site=Site(name=site.name, time_zone=site.time_zone), windows=[w.as_json() for w in site.windows]
        )
        tariff_from_model(row)  # raises on a gap or an overlap in any hour of a week


def test_simulated_intensity_keeps_the_annual_average_over_a_day() -> None:
    for site in spec.SITES:
        annual = annual_intensity(site.grid_zone, DAY_START.year)
        assert annual is not None
        values = day_of(site.grid_zone, site.time_zone)
        # The day-to-day weather swing moves a single day's mean by at most its amplitude.
        assert abs(sum(values) / 24 / annual.gco2e_per_kwh - 1) < Decimal("0.21"), site.grid_zone


def test_california_is_cleanest_at_midday_and_dirtiest_in_the_evening() -> None:
    values = day_of("US-CAL-CISO", "America/Los_Angeles")
    local_noon_utc, local_evening_utc = 20, 3  # 12:00 and 19:00 in Los Angeles (UTC-8)
    assert values[local_noon_utc] == min(values)
    assert values[local_evening_utc] > Decimal("1.15") * (sum(values) / 24)


def test_hours_not_over_yet_are_forecasts() -> None:
    now = DAY_START + timedelta(hours=5, minutes=30)
    values = shaped_hours(
        zone="DE", time_zone="Europe/Berlin", start=DAY_START, end=DAY_START + timedelta(hours=8), now=now, source="s"
    )
    assert [v.is_forecast for v in values] == [False] * 5 + [True] * 3
    assert all(v.is_estimated and v.source == "s" for v in values)


def test_every_consumer_node_is_a_4090_box_and_every_enterprise_node_8_h100() -> None:
    nodes = {fleet.name: [n for n in fleet.nodes] for fleet in spec.FLEETS}
    assert [n.simulate for n in nodes["enterprise"]] == ["h100-pcie:8"] * 2
    assert [n.simulate for n in nodes["consumer"]] == ["rtx-4090:4"] * 6
    assert sorted(n.tenure for n in nodes["consumer"]) == ["owned"] * 4 + ["rented"] * 2
    assert all(len(n.assets) in (0, n.gpu_count) for _, n in spec.all_nodes())
    # both LLMs on both fleets; the consumer fleet has idle hours, the enterprise fleet none
    assert all(sorted({n.llm for n in fleet_nodes}) == ["14b", "8b"] for fleet_nodes in nodes.values())
    patterns = {fleet.name: fleet.load_pattern for fleet in spec.FLEETS}
    assert patterns == {"enterprise": "office", "consumer": "spare"}


def test_progress_redraws_in_place_on_a_terminal_and_prints_few_lines_otherwise() -> None:
    terminal, plain = FakeStream(tty=True), FakeStream(tty=False)
    for stream in (terminal, plain):
        progress = Progress(stream, "backfill", 100, "node-days")
        for done in range(0, 101, 5):
            progress.update(done)
        progress.finish()

    assert terminal.text.count("\r") == 22 and terminal.text.count("\n") == 1
    lines = plain.text.splitlines()
    assert "\r" not in plain.text and 2 <= len(lines) <= 12 and "100.0%" in lines[-1]
