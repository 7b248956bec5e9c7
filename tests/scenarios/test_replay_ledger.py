"""The replay prices a node-hour by the ledger's own rules: replayed unchanged, or under changes that restate
what the ledger priced it with, each line comes back to the last digit (no database).

Lines built by ``build_node_hour_line``: a rented node (per GPU-hour, power not included) on a
time-of-use tariff at its peak and at its off-peak hour, an owned one-card node with capex and opex
on the same tariff, and a rented node whose rent includes power. Each line is its own fleet, so
each replayed fleet is one node-hour.
"""

from __future__ import annotations

from datetime import UTC, datetime, time
from decimal import Decimal

import pytest

from accounting.ledger import (
    GpuHourInput,
    IntensityFactor,
    NodeHourInput,
    NodeHourLine,
    OwnedPricing,
    Pricing,
    RatePer,
    RentedPricing,
    build_node_hour_line,
)
from accounting.ledger.line import line_columns
from accounting.ledger.units import H_PER_YEAR, ZERO
from accounting.tariff import TimeOfUseTariff, TouWindow, price_at
from scenarios.changes import Change, MoveChange, TenureChange
from scenarios.replay import LEDGER_COLUMNS, Replay, ReplayInputs

D = Decimal
PEAK_HOUR = datetime(2026, 1, 6, 12, tzinfo=UTC)  # a Tuesday, 12:00 in London: peak
OFF_PEAK_HOUR = datetime(2026, 1, 6, 2, tzinfo=UTC)
DAY_NIGHT = TimeOfUseTariff(
    "Europe/London",
    (TouWindow(time(7), time(23), D("0.3137"), "peak"), TouWindow(time(23), time(7), D("0.1219"), "off-peak")),
)
RENTED = RentedPricing(D("2.4713"), RatePer.GPU, includes_power=False)
RENTED_WITH_POWER = RentedPricing(D("3.1"), RatePer.GPU, includes_power=True)
OWN_LIFE_YEARS = D(3)
OWNED = OwnedPricing(capex=D("26999.99"), lifetime_h=OWN_LIFE_YEARS * H_PER_YEAR, opex_per_h=D("0.173"))
PUE = D("1.37")


def node_hour(hour: datetime, pricing: Pricing, *, gpus: int, tariff: bool = True) -> NodeHourInput:
    cards = tuple(
        GpuHourInput(f"gpu-{i}", D("1234567.89") + i, 1000, D("71.3"), None, installed_h=D("0.75") if i else None)
        for i in range(gpus)
    )
    return NodeHourInput(
        node_id="n", hour_start=hour, currency="GBP", gpus=cards, node_energy_j=None, observed_s=D(3600),
        held_h=D(1), prompt_tokens=3000, generation_tokens=1000, pue=PUE,
        tariff=price_at(DAY_NIGHT, hour) if tariff else None, pricing=pricing,
        location=IntensityFactor(D("211.7"), "electricitymaps:live"), market=None,
    )  # fmt: skip


LINES = {
    1: build_node_hour_line(node_hour(PEAK_HOUR, RENTED, gpus=4)),
    2: build_node_hour_line(node_hour(OFF_PEAK_HOUR, RENTED, gpus=4)),
    3: build_node_hour_line(node_hour(PEAK_HOUR, OWNED, gpus=1)),
    4: build_node_hour_line(node_hour(OFF_PEAK_HOUR, RENTED_WITH_POWER, gpus=2, tariff=False)),
}


def ledger_row(fleet: int, line: NodeHourLine) -> tuple:
    """The line as the stored ledger's ``LEDGER_COLUMNS`` give it to the replay."""
    columns = line_columns(line) | {"fleet_id": fleet, "site_id": fleet, "gpu_model": "h100-sxm", "pue": PUE}
    return tuple(columns[name] for name in LEDGER_COLUMNS[:-1])


def replayed(changes: tuple[Change, ...] = ()) -> dict[int, tuple[Decimal, Decimal, Decimal]]:
    """Per fleet (one node-hour each): the scenario's cost, electricity cost and facility kWh."""
    replay = Replay()
    for fleet, line in LINES.items():
        replay.add(ledger_row(fleet, line))
    scenario = replay.run(ReplayInputs(changes)).scenario
    return {fleet: (s.cost, s.electricity_cost, s.facility_kwh) for fleet, s in scenario.items()}


def as_priced(line: NodeHourLine) -> tuple[Decimal, Decimal, Decimal]:
    return line.cost, line.electricity_cost or ZERO, line.facility_kwh


def test_the_lines_cover_a_rented_an_owned_and_a_power_included_node_on_two_time_of_use_prices():
    assert {line.tariff_price_id for line in LINES.values()} == {"tou:peak", "tou:off-peak", None}
    assert LINES[3].hardware_cost == OWNED.capex / OWNED.lifetime_h + OWNED.opex_per_h  # one card, a whole hour
    assert LINES[4].electricity_status == "included"


def test_replaying_with_no_change_gives_each_node_hours_cost_electricity_and_facility_kwh_exactly():
    assert replayed() == {fleet: as_priced(line) for fleet, line in LINES.items()}


@pytest.mark.parametrize(
    ("fleet", "changes"),
    [
        (1, (MoveChange(1, pue=PUE), MoveChange(1, price_per_kwh=D("0.3137")))),
        (2, (MoveChange(2, pue=PUE, price_per_kwh=D("0.1219")), TenureChange(2, "rent", rate_per_gpu_h=D("2.4713")))),
        (3, (TenureChange(3, "own", capex_per_gpu=OWNED.capex, lifetime_years=OWN_LIFE_YEARS,
                          opex_per_gpu_h=OWNED.opex_per_h), MoveChange(3, price_per_kwh=D("0.3137")))),
        (4, (TenureChange(4, "rent", rate_per_gpu_h=D("3.1"), includes_power=True), MoveChange(4, pue=PUE))),
    ],
    ids=["rented-peak", "rented-off-peak", "owned-with-capex", "rented-power-included"],
)  # fmt: skip
def test_changes_that_restate_the_ledgers_own_terms_reprice_the_node_hour_to_the_last_digit(fleet, changes):
    # given the very PUE, tariff price, rent or capex the ledger priced the node-hour with
    # when the replay recomputes facility kWh, electricity, hardware and cost from them
    # then it gives the ledger's figures exactly: the same rules, not a copy of them
    assert replayed(changes)[fleet] == as_priced(LINES[fleet])
    assert replayed(changes)[fleet] != (ZERO, ZERO, ZERO)
