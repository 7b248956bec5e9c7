"""The replay prices a node-hour by the ledger's own rules: replayed unchanged, or under changes that restate
what the ledger priced it with, each line comes back to the last digit (no database).

Lines built by ``build_node_hour_line``: a rented node (per GPU-hour, power not included) on a
time-of-use tariff at its peak and at its off-peak hour, an owned one-card node with capex and opex
on the same tariff, and a rented node whose rent includes power; each once without tax and once at
a site taxing 0.05 per facility kWh with 25 % VAT it cannot recover. Each line is its own fleet and
site, so each replayed fleet is one node-hour.
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
from accounting.ledger.tax import SiteTaxRates
from accounting.ledger.units import H_PER_YEAR, ZERO
from accounting.tariff import TimeOfUseTariff, TouWindow, Validity, price_at
from scenarios.changes import Change, MoveChange, TenureChange
from scenarios.replay import LEDGER_COLUMNS, Replay, ReplayInputs, Sums

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
TAX = SiteTaxRates(vat_rate=D("0.25"), vat_recoverable=False, energy_tax_per_kwh=D("0.05"), tax_id="tax-1")
ALWAYS = datetime(2020, 1, 1, tzinfo=UTC)


def node_hour(
    hour: datetime, pricing: Pricing, *, gpus: int, tariff: bool = True, tax: SiteTaxRates | None = None
) -> NodeHourInput:
    cards = tuple(
        GpuHourInput(f"gpu-{i}", D("1234567.89") + i, 1000, D("71.3"), None, installed_h=D("0.75") if i else None)
        for i in range(gpus)
    )
    return NodeHourInput(
        node_id="n", hour_start=hour, currency="GBP", gpus=cards, node_energy_j=None, observed_s=D(3600),
        held_h=D(1), prompt_tokens=3000, generation_tokens=1000, pue=PUE,
        tariff=price_at(DAY_NIGHT, hour) if tariff else None, pricing=pricing,
        location=IntensityFactor(D("211.7"), "electricitymaps:live"), market=None, tax=tax,
    )  # fmt: skip


def built_lines(tax: SiteTaxRates | None = None) -> dict[int, NodeHourLine]:
    return {
        1: build_node_hour_line(node_hour(PEAK_HOUR, RENTED, gpus=4, tax=tax)),
        2: build_node_hour_line(node_hour(OFF_PEAK_HOUR, RENTED, gpus=4, tax=tax)),
        3: build_node_hour_line(node_hour(PEAK_HOUR, OWNED, gpus=1, tax=tax)),
        4: build_node_hour_line(node_hour(OFF_PEAK_HOUR, RENTED_WITH_POWER, gpus=2, tariff=False, tax=tax)),
    }


LINES, TAXED_LINES = built_lines(), built_lines(TAX)
# Each fleet's site (its own number) taxed as the taxed lines were, from long before their hours.
SITE_TAXES = {site: [Validity(ALWAYS, None, TAX)] for site in TAXED_LINES}


def ledger_row(fleet: int, line: NodeHourLine) -> tuple:
    """The line as the stored ledger's ``LEDGER_COLUMNS`` give it to the replay."""
    columns = line_columns(line) | {"fleet_id": fleet, "site_id": fleet, "gpu_model": "h100-sxm", "pue": PUE}
    return tuple(columns[name] for name in LEDGER_COLUMNS[:-1])


def replayed_sums(
    changes: tuple[Change, ...] = (), lines: dict[int, NodeHourLine] = LINES, site_taxes=None
) -> tuple[dict[int, Sums], dict[int, Sums]]:
    """Per fleet (one node-hour each): the actual and the scenario sums."""
    replay = Replay()
    for fleet, line in lines.items():
        replay.add(ledger_row(fleet, line))
    outcome = replay.run(ReplayInputs(changes, site_taxes=site_taxes or {}))
    return outcome.actual, outcome.scenario


def replayed(
    changes: tuple[Change, ...] = (), lines: dict[int, NodeHourLine] = LINES, site_taxes=None
) -> dict[int, tuple[Decimal, Decimal, Decimal]]:
    """Per fleet (one node-hour each): the scenario's cost, electricity cost and facility kWh."""
    _, scenario = replayed_sums(changes, lines, site_taxes)
    return {fleet: (s.cost, s.electricity_cost, s.facility_kwh) for fleet, s in scenario.items()}


def as_priced(line: NodeHourLine) -> tuple[Decimal, Decimal, Decimal]:
    return line.cost, line.electricity_cost or ZERO, line.facility_kwh


def test_the_lines_cover_a_rented_an_owned_and_a_power_included_node_on_two_time_of_use_prices():
    assert {line.tariff_price_id for line in LINES.values()} == {"tou:peak", "tou:off-peak", None}
    assert LINES[3].hardware_cost == OWNED.capex / OWNED.lifetime_h + OWNED.opex_per_h  # one card, a whole hour
    assert LINES[4].electricity_status == "included"


def test_replaying_with_no_change_gives_each_node_hours_cost_electricity_and_facility_kwh_exactly():
    assert replayed() == {fleet: as_priced(line) for fleet, line in LINES.items()}


RESTATED = pytest.mark.parametrize(
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


@RESTATED
def test_changes_that_restate_the_ledgers_own_terms_reprice_the_node_hour_to_the_last_digit(fleet, changes):
    # given the very PUE, tariff price, rent or capex the ledger priced the node-hour with
    # when the replay recomputes facility kWh, electricity, hardware and cost from them
    # then it gives the ledger's figures exactly: the same rules, not a copy of them
    assert replayed(changes)[fleet] == as_priced(LINES[fleet])
    assert replayed(changes)[fleet] != (ZERO, ZERO, ZERO)


def taxes(sums: Sums | NodeHourLine) -> tuple[Decimal, Decimal, Decimal]:
    return sums.energy_tax_cost, sums.vat_amount, sums.vat_cost


def test_the_actual_side_costs_a_taxed_node_hour_as_the_ledger_does_energy_tax_and_vat_included():
    actual, scenario = replayed_sums(lines=TAXED_LINES, site_taxes=SITE_TAXES)

    for fleet, line in TAXED_LINES.items():
        assert (actual[fleet].cost, taxes(actual[fleet])) == (line.cost, taxes(line))
        assert scenario[fleet].cost == line.cost  # no change: the ledger's taxes stand
    assert TAXED_LINES[1].cost == LINES[1].cost + TAXED_LINES[1].energy_tax_cost + TAXED_LINES[1].vat_cost
    assert TAXED_LINES[1].energy_tax_cost > 0 and TAXED_LINES[1].vat_cost > 0
    assert TAXED_LINES[4].energy_tax_cost == 0  # the rent paid the power: no energy tax


@RESTATED
def test_changes_that_restate_the_ledgers_own_terms_reprice_a_taxed_node_hour_to_the_last_digit(fleet, changes):
    # the taxes computed again at the site's tax in force (energy tax on the kWh the rent does not
    # include; VAT on rent, running cost and electricity, not on depreciation) are the ledger's
    _, scenario = replayed_sums(changes, TAXED_LINES, SITE_TAXES)

    assert (scenario[fleet].cost, taxes(scenario[fleet])) == (TAXED_LINES[fleet].cost, taxes(TAXED_LINES[fleet]))


def test_a_pue_change_scales_the_energy_tax_with_the_facility_kwh_and_the_vat_with_the_electricity():
    line = TAXED_LINES[1]
    _, scenario = replayed_sums((MoveChange(1, pue=PUE * 2),), TAXED_LINES, SITE_TAXES)

    moved = scenario[1]
    assert round(moved.energy_tax_cost, 12) == round(line.energy_tax_cost * 2, 12)  # twice the facility kWh
    vat = (line.rent_cost + line.electricity_cost * 2) * TAX.vat_rate
    assert (round(moved.vat_amount, 12), round(moved.vat_cost, 12)) == (round(vat, 12), round(vat, 12))
    expected = line.hardware_cost + (line.electricity_cost + line.energy_tax_cost) * 2 + vat
    assert round(moved.cost, 12) == round(expected, 12)


def test_a_move_to_a_site_without_tax_drops_the_energy_tax_and_the_vat():
    actual, scenario = replayed_sums((MoveChange(1, site=99),), TAXED_LINES, SITE_TAXES)  # site 99: no tax

    line = TAXED_LINES[1]
    assert taxes(scenario[1]) == (ZERO, ZERO, ZERO)
    assert scenario[1].cost == line.hardware_cost + line.electricity_cost == LINES[1].cost
    assert actual[1].cost == line.cost
    assert scenario[2].cost == TAXED_LINES[2].cost  # the fleet not moved keeps its taxes


def test_a_move_takes_the_new_sites_tax_in_force_at_each_hour_and_recoverable_vat_is_no_cost():
    # site 99 taxes from the peak hour on: 0.10 per facility kWh, 20 % VAT it recovers
    later = SiteTaxRates(D("0.20"), vat_recoverable=True, energy_tax_per_kwh=D("0.10"), tax_id="tax-9")
    site_taxes = {**SITE_TAXES, 99: [Validity(PEAK_HOUR, None, later)]}
    changes = (MoveChange(1, site=99), MoveChange(2, site=99))
    _, scenario = replayed_sums(changes, TAXED_LINES, site_taxes)

    peak, off_peak = TAXED_LINES[1], TAXED_LINES[2]
    assert scenario[2].cost == LINES[2].cost  # its hour (02:00) is before the tax: none in force
    assert scenario[1].energy_tax_cost == peak.facility_kwh * D("0.10")
    assert scenario[1].vat_amount == (peak.rent_cost + peak.electricity_cost) * D("0.20")
    assert scenario[1].vat_cost == 0  # recovered: a receivable, not a cost
    assert scenario[1].cost == LINES[1].cost + peak.facility_kwh * D("0.10")
    assert off_peak.vat_cost > 0


def test_renting_with_power_included_drops_the_energy_tax_and_takes_vat_on_the_rent_alone():
    # fleet 1's node-hour rented with power included: the ledger's line for that rent, taxes and all
    included = build_node_hour_line(node_hour(PEAK_HOUR, RENTED_WITH_POWER, gpus=4, tax=TAX))
    change = TenureChange(1, "rent", rate_per_gpu_h=RENTED_WITH_POWER.rate_per_h, includes_power=True)
    _, scenario = replayed_sums((change,), TAXED_LINES, SITE_TAXES)

    assert (scenario[1].cost, taxes(scenario[1])) == (included.cost, taxes(included))
    assert scenario[1].energy_tax_cost == 0 and scenario[1].vat_cost == included.rent_cost * TAX.vat_rate
