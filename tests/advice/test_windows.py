"""Choosing a window for deferrable work against a constructed forecast and time-of-use tariff."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from decimal import Decimal

import pytest

from accounting.tariff import TimeOfUseTariff, TouWindow, Validity
from advice.deferral import ForecastHour, window_choose

NOW = datetime(2026, 12, 1, 0, 20, tzinfo=UTC)
MIDNIGHT = datetime(2026, 12, 1, tzinfo=UTC)


def forecast(values, kind="average", source="electricitymaps"):
    return [ForecastHour(MIDNIGHT + timedelta(hours=n), Decimal(v), kind, source) for n, v in enumerate(values)]


# UTC: 04:00-06:00 off-peak at 0.05, otherwise 0.30 per kWh
TARIFF = [Validity(datetime(2026, 1, 1, tzinfo=UTC), None, TimeOfUseTariff("UTC", (
    TouWindow(time(4), time(6), Decimal("0.05"), "off-peak"),
    TouWindow(time(6), time(4), Decimal("0.30"), "peak"),
)))]  # fmt: skip


def test_the_cleanest_two_hours_before_the_deadline_by_carbon():
    # given: 400, 300, 100, 120, 500, 500 gCO2e/kWh from 00:00; 2 h of work drawing 10 kWh an hour
    advice = window_choose(forecast=forecast([400, 300, 100, 120, 500, 500]), now=NOW, deadline_h=6, run_h=2,
                           facility_kwh_per_h=10.0, carbon_weight=1.0)  # fmt: skip
    # then: 02:00-04:00 (220 x 10 g) against now, 00:00-02:00 (700 x 10 g)
    assert (advice.best.start, advice.best.end) == (MIDNIGHT + timedelta(hours=2), MIDNIGHT + timedelta(hours=4))
    assert advice.now.start == MIDNIGHT
    assert advice.saving_co2e_g == pytest.approx(4800.0)
    assert advice.signal == "average"
    assert advice.explanation.startswith("Run 2026-12-01 02:00 to 04:00 UTC: 110 against 350 gCO2e/kWh now")


def test_by_cost_alone_the_off_peak_window_wins():
    advice = window_choose(
        forecast=forecast([400, 300, 100, 120, 500, 500]), now=NOW, deadline_h=6, run_h=2,
        facility_kwh_per_h=10.0, carbon_weight=0.0, tariff_periods=TARIFF, currency="EUR",
    )  # fmt: skip
    # 04:00-06:00 at 0.05: 1.00; now at 0.30: 6.00
    assert advice.best.start == MIDNIGHT + timedelta(hours=4)
    assert advice.best.electricity_cost == Decimal("1.00")
    assert advice.saving_cost == Decimal("5.00")
    assert advice.saving_co2e_g == pytest.approx(-3000.0)  # dirtier: the trade-off shows


def test_the_deadline_bounds_the_windows():
    advice = window_choose(forecast=forecast([400, 300, 100, 120, 500, 500]), now=NOW, deadline_h=3, run_h=2,
                           facility_kwh_per_h=10.0, carbon_weight=1.0)  # fmt: skip
    assert advice.best.start == MIDNIGHT + timedelta(hours=1)  # 02:00-04:00 would end after 03:00


def test_a_marginal_forecast_is_labelled_marginal():
    advice = window_choose(forecast=forecast([900, 500, 900], kind="marginal", source="watttime"), now=NOW,
                           deadline_h=24, run_h=1, facility_kwh_per_h=1.0, carbon_weight=1.0)  # fmt: skip
    assert advice.signal == "marginal"
    assert "marginal (emissions caused at the margin) forecast of watttime" in advice.explanation


def test_without_a_forecast_it_says_so():
    advice = window_choose(forecast=[], now=NOW, deadline_h=24, run_h=1, facility_kwh_per_h=1.0, carbon_weight=1.0)
    assert advice.status == "no_forecast"
    assert advice.best is None


def test_a_forecast_starting_after_the_current_hour_is_not_called_now():
    # given: at 00:20 a forecast whose first hour is 01:00 (none for the current hour)
    later = forecast([400, 300, 100, 120, 500, 500])[1:]
    advice = window_choose(forecast=later, now=NOW, deadline_h=6, run_h=2, facility_kwh_per_h=10.0, carbon_weight=1.0)
    # then: the saving is against the earliest window the forecast holds, 01:00-03:00 (400 x 10 g), named so
    assert advice.now.start == MIDNIGHT + timedelta(hours=1)
    assert advice.saving_co2e_g == pytest.approx(4000.0 - 2200.0)
    assert "now" not in advice.explanation
    assert "against 200 gCO2e/kWh at the forecast's first hours (01:00 to 03:00 UTC)" in advice.explanation
    # and when that earliest window is the best, it is not "run now" either
    flat = window_choose(forecast=forecast([400, 100, 100, 500])[1:], now=NOW, deadline_h=4, run_h=2,
                         facility_kwh_per_h=10.0, carbon_weight=1.0)  # fmt: skip
    assert flat.explanation.startswith("Run 2026-12-01 01:00 to 03:00 UTC, the earliest hours the forecast holds")
