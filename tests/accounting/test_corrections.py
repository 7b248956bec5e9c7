"""The arithmetic of corrections to locked lines, by hand: no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

from accounting.ledger.corrections import (
    CORRECTED_FIELDS,
    Cause,
    booked,
    booking_hour,
    correction_cause,
    correction_deltas,
    is_locked,
    reversed_deltas,
)

HOUR = datetime(2026, 1, 10, 14, tzinfo=UTC)
JANUARY = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC))
FEBRUARY = (datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC))
# The locked line of the probe: 5.00 rent + 1.8 kWh x 0.30, 1.8 kWh x 342 g/kWh.
LOCKED = {
    "hardware_cost": "5.000000000000", "electricity_cost": "0.540000000000", "cost": "5.540000000000",
    "it_kwh": "1.5", "facility_kwh": "1.8", "location_co2e_g": "615.6", "market_co2e_g": None,
    "embodied_co2e_g_low": "1", "embodied_co2e_g_central": "2", "embodied_co2e_g_high": "3",
    "prompt_tokens": 1_000_000, "generation_tokens": 500_000, "observed_s": "3600", "location_source": "annual",
    "location_gco2e_per_kwh": "342.000",
}  # fmt: skip


def test_late_usage_books_its_difference_and_the_cause():
    # 3 kWh more IT energy: 3.6 kWh facility x 0.30 = 1.08 more; the same hour's tokens doubled
    would_be = LOCKED | {
        "electricity_cost": D("1.62"), "cost": D("6.62"), "it_kwh": D("4.5"), "facility_kwh": D("5.4"),
        "location_co2e_g": D("1846.8"), "prompt_tokens": 2_000_000, "observed_s": D(3600), "energy_counter_j": 1.0,
    }  # fmt: skip

    deltas = correction_deltas(booked=booked(LOCKED, []), would_be=would_be)

    assert deltas is not None
    assert (deltas["cost"], deltas["electricity_cost"], deltas["hardware_cost"]) == (D("1.08"), D("1.08"), 0)
    assert (deltas["facility_kwh"], deltas["location_co2e_g"], deltas["prompt_tokens"]) == (
        D("3.6"),
        D("1231.2"),
        1_000_000,
    )
    assert correction_cause(previous=LOCKED, would_be=would_be) is Cause.LATE_TELEMETRY


def test_a_revised_intensity_is_its_own_cause():
    would_be = LOCKED | {"location_co2e_g": D("480"), "location_gco2e_per_kwh": D("266.667"), "location_source": "em"}

    deltas = correction_deltas(booked=booked(LOCKED, []), would_be=would_be)

    assert deltas is not None and deltas["location_co2e_g"] == D("-135.6")
    assert deltas["cost"] == 0
    assert correction_cause(previous=LOCKED, would_be=would_be) is Cause.REVISED_INTENSITY


def test_a_price_change_is_an_input_or_formula_change():
    would_be = LOCKED | {"hardware_cost": D("6"), "cost": D("6.54")}
    assert correction_cause(previous=LOCKED, would_be=would_be) is Cause.INPUTS_OR_FORMULA


def test_recomputing_again_books_only_the_further_difference():
    first = LOCKED | {"cost": D("6.54"), "hardware_cost": D("6")}
    booked_first = correction_deltas(booked=booked(LOCKED, []), would_be=first)
    assert booked_first is not None

    # the same line again: nothing more
    assert correction_deltas(booked=booked(LOCKED, [booked_first]), would_be=first) is None
    # a further change: only its own part
    second = first | {"cost": D("7.04"), "hardware_cost": D("6.50")}
    further = correction_deltas(booked=booked(LOCKED, [booked_first]), would_be=second)
    assert further is not None and (further["cost"], further["hardware_cost"]) == (D("0.50"), D("0.50"))


def test_the_stored_columns_rounding_is_no_correction():
    would_be = LOCKED | {"cost": D("5.5400000000004"), "facility_kwh": D("1.80000000000000001")}
    assert correction_deltas(booked=booked(LOCKED, []), would_be=would_be) is None


def test_an_unknown_figure_counts_as_zero():
    # no market factor when locked, one now: the whole figure is the correction; no line at all: all of it
    deltas = correction_deltas(booked=booked(LOCKED, []), would_be=LOCKED | {"market_co2e_g": D(90)})
    assert deltas is not None and deltas["market_co2e_g"] == D(90)
    whole = correction_deltas(booked=booked(None, []), would_be=LOCKED)
    assert whole is not None and whole["cost"] == D("5.54") and whole["generation_tokens"] == 500_000


def test_a_reversal_undoes_its_correction_exactly():
    deltas = correction_deltas(booked=booked(LOCKED, []), would_be=LOCKED | {"cost": D(6), "prompt_tokens": 7})
    assert deltas is not None
    undone = booked(None, [deltas, reversed_deltas(deltas)])
    assert all(undone[name] == 0 for name in CORRECTED_FIELDS)


def test_a_correction_is_booked_in_the_first_open_period():
    now = datetime(2026, 1, 20, 9, tzinfo=UTC)
    assert booking_hour(now_hour=now, locks=[]) == now
    assert booking_hour(now_hour=now, locks=[JANUARY]) == FEBRUARY[0]
    # adjoining locks: past both
    assert booking_hour(now_hour=now, locks=[FEBRUARY, JANUARY]) == FEBRUARY[1]
    # a lock ending within an hour: the next whole hour
    assert booking_hour(now_hour=now, locks=[(now, now + timedelta(minutes=30))]) == now + timedelta(hours=1)
    # locks that are all in the past: the current hour
    assert booking_hour(now_hour=datetime(2026, 4, 1, tzinfo=UTC), locks=[JANUARY, FEBRUARY]).month == 4


def test_a_lock_holds_its_hours_end_excluded():
    assert is_locked(HOUR, [JANUARY]) and not is_locked(JANUARY[1], [JANUARY])


def test_an_hour_that_had_no_line_is_late_telemetry_only_if_it_was_measured():
    silent = {"observed_s": "0", "prompt_tokens": 0, "location_source": "annual", "hardware_cost": "5"}
    assert correction_cause(previous={}, would_be=silent) is Cause.INPUTS_OR_FORMULA
    assert correction_cause(previous={}, would_be=silent | {"observed_s": "10"}) is Cause.LATE_TELEMETRY
