"""Stored ledger lines from usage, prices, tariffs and intensity, worked by hand."""

from __future__ import annotations

import importlib
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from accounting.accruals import ledger_mark_held_hours
from accounting.inputs.reopen import EVERY_HOUR, ledger_lines_reopen
from accounting.models import LedgerPending, LedgerSettings, NodeHourLedger, NodePrice, SiteTariff
from accounting.node_hour_lines import (
    ledger_mark,
    ledger_mark_intensity_since,
    ledger_node_hours_compute,
    ledger_pending_run,
)
from accounting.site_hours import site_hours_rebuild
from common.citus import citus_coordinator
from fleets.models import GpuInstallation
from grid import annual_intensity
from telemetry.models import EndpointHourUsage, GpuHourUsage, ServingEndpoint, UsageChanged
from tests.helpers.factories import (
    GpuAssetFactory,
    GpuFactory,
    GridIntensityFactory,
    NodeFactory,
    NodePriceFactory,
    SiteMarketFactorFactory,
    SiteTariffFactory,
)

HOUR = datetime(2026, 11, 2, 14, tzinfo=UTC)
LONG_AGO = datetime(2026, 1, 1, tzinfo=UTC)
# H100 SXM catalog figures: 197 kg central (78.8 / 315.2), host 312.5 kg per GPU, 4 years.
LIFE_H = Decimal(4 * 8760)


@pytest.fixture
def node(db):
    node = NodeFactory(
        hostname="h100-a", site__pue=Decimal("1.20"), site__grid_zone="DE", site__currency="EUR",
        commissioned_at=LONG_AGO,
    )  # fmt: skip
    for index in range(2):
        GpuFactory(node=node, index=index, uuid=f"GPU-ledger-{index}", name="NVIDIA H100 80GB HBM3")
    NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=LONG_AGO)
    SiteTariffFactory(site=node.site, flat_price_per_kwh=Decimal("0.30"), valid_from=LONG_AGO)
    return node


def usage(node, hour=HOUR, *, energies_j=(1_800_000.0, 3_600_000.0), utils=(80.0, 2.0), tokens=(1_000_000, 500_000)):
    gpus = list(node.gpus.order_by("index"))
    for gpu, energy, util in zip(gpus, energies_j, utils, strict=True):
        GpuHourUsage.objects.update_or_create(
            node=node, gpu=gpu, hour_start=hour,
            defaults=dict(
                energy_j=energy, energy_counter_j=energy, energy_integrated_j=0.0, energy_method="counter",
                observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0, mean_util_pct=util, reset_count=0,
                computed_at=hour,
            ),
        )  # fmt: skip
    endpoint, _ = ServingEndpoint.objects.get_or_create(node=node, url="http://127.0.0.1:8000/metrics", kind="vllm")
    endpoint.gpus.set([gpus[0]])  # only the first GPU serves
    EndpointHourUsage.objects.update_or_create(
        node=node, endpoint=endpoint, hour_start=hour,
        defaults=dict(prompt_tokens=tokens[0], generation_tokens=tokens[1], requests=100, observed_s=3600.0,
                      reset_count=0, computed_at=hour),
    )  # fmt: skip


def line(node, hour=HOUR):
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[hour])
    return NodeHourLedger.objects.get(node=node, hour_start=hour)


def test_rented_node_hour_is_priced_and_weighed_by_hand(node):
    usage(node)

    row = line(node)

    # 1.8 MJ + 3.6 MJ = 1.5 kWh IT; x PUE 1.2 = 1.8 kWh facility
    assert (row.it_kwh, row.facility_kwh) == (Decimal("1.5"), Decimal("1.8"))
    assert row.electricity_cost == Decimal("0.54")  # 1.8 kWh x 0.30
    assert row.hardware_cost == Decimal("5.00")  # 2.50 per GPU-hour x 2 GPUs
    assert row.cost == Decimal("5.54")
    assert (row.currency, row.electricity_status, row.pricing_price_id) == (
        "EUR",
        "priced",
        f"price-{NodePrice.objects.get().pk}",
    )
    assert (row.prompt_tokens, row.generation_tokens) == (1_000_000, 500_000)


def test_location_carbon_uses_the_annual_average_as_fallback_and_says_so(node):
    usage(node)
    annual = annual_intensity("DE", 2026)

    row = line(node)

    assert row.location_co2e_g == Decimal("1.8") * annual.gco2e_per_kwh
    assert (row.location_source, row.location_is_fallback) == (annual.source, True)
    assert row.market_co2e_g is None and row.market_source == ""


def test_a_live_hourly_value_wins_over_the_annual_average(node):
    usage(node)
    GridIntensityFactory(zone="DE", hour_start=HOUR, gco2e_per_kwh=Decimal("250"))

    row = line(node)

    assert row.location_co2e_g == Decimal("450")  # 1.8 kWh x 250 g/kWh
    assert (row.location_source, row.location_is_fallback) == ("electricitymaps", False)


def test_market_factor_in_force_gives_market_based_carbon(node):
    usage(node)
    SiteMarketFactorFactory(site=node.site, gco2e_per_kwh=Decimal("20"), source="contract:PPA-7", valid_from=LONG_AGO)

    row = line(node)

    assert (row.market_co2e_g, row.market_source) == (Decimal("36"), "contract:PPA-7")


def test_embodied_carbon_is_amortized_per_gpu_and_host_with_its_range(node):
    usage(node)

    row = line(node)

    per_gpu_central = Decimal(197) * 1000 / LIFE_H
    host = Decimal("312.5") * 2 * 1000 / LIFE_H
    assert row.embodied_co2e_g_central == pytest.approx(2 * per_gpu_central + host, rel=Decimal("1e-12"))
    assert row.embodied_co2e_g_low == pytest.approx(2 * Decimal("78.8") * 1000 / LIFE_H + host, rel=Decimal("1e-12"))
    assert row.embodied_co2e_g_high == pytest.approx(2 * Decimal("315.2") * 1000 / LIFE_H + host, rel=Decimal("1e-12"))
    assert row.gpu_model == "h100-sxm"


def test_second_hand_gpu_amortizes_over_its_remaining_life(node):
    usage(node)
    second = node.gpus.get(index=1)
    GpuAssetFactory(gpu=second, condition="second_hand", prior_use_years=Decimal(2), expected_own_years=Decimal(3))

    row = line(node)

    # Bought at 2 of 4 years and kept 3: the unallocated half of 197 kg over our 3 years.
    new_card = Decimal(197) * 1000 / LIFE_H
    second_hand = Decimal(197) * 1000 / 2 / Decimal(3 * 8760)
    host = Decimal("312.5") * 2 * 1000 / LIFE_H
    assert row.embodied_co2e_g_central == pytest.approx(new_card + second_hand + host, rel=Decimal("1e-12"))


def test_idle_gpu_hour_and_its_cost(node):
    usage(node)

    row = line(node)

    # GPU 2 served no tokens at 2 % utilization: idle for the hour.
    assert row.idle_gpu_h == Decimal(1)
    # its share: hardware 2.50 + its own electricity 1 kWh x 1.2 x 0.30
    assert row.idle_cost == Decimal("2.86")
    assert row.idle_facility_kwh == Decimal("1.2")


def test_rent_that_includes_power_has_no_electricity_line(node):
    usage(node)
    NodePrice.objects.update(includes_power=True)

    row = line(node)

    assert (row.electricity_cost, row.electricity_status, row.cost) == (Decimal(0), "included", Decimal("5.00"))


def test_owned_node_mid_lifetime(node):
    usage(node)
    NodePrice.objects.all().delete()
    NodePrice.objects.create(
        fleet=node.fleet, kind="owned", capex=Decimal("350400"), lifetime_years=Decimal(4), opex_per_h=Decimal("1.5"),
        valid_from=LONG_AGO,
    )  # fmt: skip

    row = line(node)

    # By month (the default, since depreciation by the book; it was 10 an hour over 8,760-hour years, forever):
    # 350,400 / 48 months = 7,300 in November 2026, over its 720 h = 10.13888.../h, + opex 1.5
    per_h = Decimal(7300) / 720
    assert row.depreciation_cost == per_h.quantize(Decimal("1e-12"))
    assert (row.opex_cost, row.rent_cost) == (Decimal("1.5"), 0)
    assert row.hardware_cost == (per_h + Decimal("1.5")).quantize(Decimal("1e-12"))


def test_owned_node_past_its_useful_life_charges_its_running_cost_only(node):
    usage(node)
    NodePrice.objects.all().delete()
    NodePrice.objects.create(
        fleet=node.fleet, kind="owned", capex=Decimal("350400"), lifetime_years=Decimal(4), opex_per_h=Decimal("1.5"),
        valid_from=datetime(2018, 1, 1, tzinfo=UTC), in_service_at=datetime(2018, 1, 1, tzinfo=UTC),
    )  # fmt: skip

    row = line(node)

    assert (row.depreciation_cost, row.hardware_cost) == (0, Decimal("1.5"))  # fully depreciated in January 2022


def test_unpriced_node_is_labelled_not_silently_free(node):
    usage(node)
    NodePrice.objects.all().delete()

    row = line(node)

    assert (row.hardware_cost, row.pricing_price_id) == (Decimal(0), "unpriced")


def test_price_change_mid_period_applies_from_its_date(node):
    change = HOUR + timedelta(hours=1)
    NodePrice.objects.update(valid_to=change)
    NodePriceFactory(node=node, rate_per_h=Decimal("3.00"), valid_from=change)
    usage(node, HOUR)
    usage(node, change)

    before, after = line(node, HOUR), line(node, change)

    assert (before.hardware_cost, after.hardware_cost) == (Decimal("5.00"), Decimal("6.00"))


def test_node_decommissioned_mid_hour_is_charged_for_the_time_held(node):
    node.decommissioned_at = HOUR + timedelta(minutes=15)
    node.save()
    usage(node)

    row = line(node)

    assert row.held_h == Decimal("0.25")
    assert row.hardware_cost == Decimal("1.25")


def test_time_of_use_tariff_across_midnight_in_the_sites_zone(node):
    node.site.time_zone = "Europe/Berlin"
    node.site.save()
    SiteTariff.objects.all().delete()
    windows = [
        {"name": "day", "start": "07:00", "end": "22:00", "price_per_kwh": "0.40"},
        {"name": "night", "start": "22:00", "end": "07:00", "price_per_kwh": "0.10"},
    ]
    SiteTariff.objects.create(site=node.site, windows=windows, valid_from=LONG_AGO)
    late = datetime(2026, 11, 2, 23, tzinfo=UTC)  # 00:00 in Berlin (CET): night
    usage(node, HOUR)  # 15:00 in Berlin: day
    usage(node, late)

    day, night = line(node, HOUR), line(node, late)

    assert (day.electricity_cost, day.tariff_price_id.split(":")[-1]) == (Decimal("0.72"), "day")
    assert (night.electricity_cost, night.tariff_price_id.split(":")[-1]) == (Decimal("0.18"), "night")


def test_recomputing_replaces_lines_and_never_adds(node):
    usage(node)
    line(node)
    usage(node, energies_j=(3_600_000.0, 3_600_000.0))

    row = line(node)

    assert NodeHourLedger.objects.count() == 1
    assert row.it_kwh == Decimal(2)


def test_usage_changes_flow_into_the_ledger_through_the_pending_queue(node):
    usage(node)
    UsageChanged.objects.create(node=node, hour_start=HOUR, changed_at=HOUR)

    written = ledger_pending_run(now=datetime.now(UTC))

    assert written == 1
    assert NodeHourLedger.objects.get().cost == Decimal("5.54")
    assert not UsageChanged.objects.exists() and not LedgerPending.objects.exists()


def test_a_mark_newer_than_the_run_survives_for_the_next_run(node):
    usage(node)
    now = datetime.now(UTC)
    ledger_mark(node_ids=[node.pk], start=HOUR, end=HOUR + timedelta(hours=1), now=now + timedelta(seconds=5))

    assert ledger_pending_run(now=now) == 0
    assert LedgerPending.objects.count() == 1


def test_held_hours_without_telemetry_still_accrue_hardware_cost(node):
    now = datetime(2026, 11, 3, 10, 30, tzinfo=UTC)
    node.commissioned_at = datetime(2026, 11, 3, 7, tzinfo=UTC)
    node.save()

    ledger_mark_held_hours(now=now)
    ledger_pending_run(now=now)

    hours = list(NodeHourLedger.objects.order_by("hour_start").values_list("hour_start", "hardware_cost", "it_kwh"))
    assert [h for h, _, _ in hours] == [datetime(2026, 11, 3, h, tzinfo=UTC) for h in (7, 8, 9)]
    assert all(cost == Decimal("5.00") and kwh == 0 for _, cost, kwh in hours)


def test_a_new_intensity_value_marks_the_lines_it_changes(node):
    usage(node)
    line(node)
    since = datetime.now(UTC)
    GridIntensityFactory(zone="DE", hour_start=HOUR, gco2e_per_kwh=Decimal("100"), fetched_at=since)

    assert ledger_mark_intensity_since(since=since, now=since) == 1
    ledger_pending_run(now=since)
    assert NodeHourLedger.objects.get().location_co2e_g == Decimal("180")


def test_utilization_weighted_amortization_is_an_organization_choice(node):
    usage(node)  # GPU utilizations 80 % and 2 %
    LedgerSettings.objects.update_or_create(
        organization=node.fleet.organization, defaults={"amortization": "utilization"}
    )

    row = line(node)

    per_gpu = Decimal(197) * 1000 / LIFE_H
    host = Decimal("312.5") * 2 * 1000 / LIFE_H
    # Each card by its own utilization; the host by the GPUs' mean, (80 + 2) / 2 = 41 %.
    expected = per_gpu * Decimal("0.80") + per_gpu * Decimal("0.02") + host * Decimal("0.41")
    assert row.amortization == "utilization"
    assert row.embodied_co2e_g_central == pytest.approx(expected, rel=Decimal("1e-12"))


def test_idle_threshold_is_an_organization_choice(node):
    usage(node, utils=(80.0, 10.0))
    assert line(node).idle_gpu_h == 0  # 10 % is busy under the default 5 %

    LedgerSettings.objects.update_or_create(
        organization=node.fleet.organization, defaults={"idle_util_threshold_pct": Decimal(20)}
    )

    assert line(node).idle_gpu_h == 1


def test_a_card_past_its_own_life_carries_no_more_embodied_carbon(node):
    usage(node)
    first, second = node.gpus.order_by("index")
    GpuAssetFactory(gpu=first, acquired_on=date(2021, 1, 1))  # 4 years ended 2024-12-31
    GpuAssetFactory(gpu=second, acquired_on=date(2025, 6, 1))

    row = line(node)

    per_gpu = Decimal(197) * 1000 / LIFE_H
    host = Decimal("312.5") * 2 * 1000 / LIFE_H
    assert row.embodied_co2e_g_central == pytest.approx(per_gpu + host, rel=Decimal("1e-12"))
    assert row.embodied_unknown_gpu_h == 0


def test_a_node_commissioned_in_2010_without_asset_rows_carries_no_embodied_carbon_in_2026(node):
    usage(node)
    node.commissioned_at = datetime(2010, 1, 1, tzinfo=UTC)  # cards and host: 4 years from commissioning
    node.save()

    row = line(node)

    assert row.embodied_co2e_g_central == row.embodied_co2e_g_low == row.embodied_co2e_g_high == 0
    assert row.embodied_unknown_gpu_h == 0  # fully allocated is known, not unknown
    assert row.held_h == 1 and row.cost > 0  # the node is still held and charged: only the carbon has ended


def test_cards_and_host_are_amortized_until_four_years_after_commissioning_then_nothing(node):
    commissioned = datetime(2022, 11, 2, 16, tzinfo=UTC)  # life ends 2026-11-01 16:00 (4 x 8,760 h)
    node.commissioned_at = commissioned
    node.save()
    last_hour = commissioned + timedelta(hours=4 * 8760) - timedelta(hours=1)
    for hour in (last_hour, last_hour + timedelta(hours=1)):
        usage(node, hour)

    in_life, after = line(node, last_hour), line(node, last_hour + timedelta(hours=1))

    per_gpu = Decimal(197) * 1000 / LIFE_H
    host = Decimal("312.5") * 2 * 1000 / LIFE_H
    assert in_life.embodied_co2e_g_central == pytest.approx(2 * per_gpu + host, rel=Decimal("1e-12"))
    assert after.embodied_co2e_g_central == 0


def test_a_node_without_commissioning_date_starts_its_cards_life_at_their_first_sample(node):
    usage(node)
    node.commissioned_at = None
    node.save()
    first, second = node.gpus.order_by("index")
    GpuInstallation.objects.create(gpu=first, installed_at=datetime(2020, 3, 1, tzinfo=UTC))  # ended 2024
    GpuInstallation.objects.create(gpu=second, installed_at=datetime(2026, 3, 1, tzinfo=UTC))

    row = line(node)

    # the host's life starts at the first card's first sample (2020) and has ended; the second card's has not
    assert row.embodied_co2e_g_central == pytest.approx(Decimal(197) * 1000 / LIFE_H, rel=Decimal("1e-12"))


def one_card_hour(node, gpu, hour=HOUR):
    """A card's hour of usage: 0.5 kWh at 80 %, the whole hour observed."""
    GpuHourUsage.objects.create(
        gpu=gpu, node=node, hour_start=hour, energy_j=1_800_000.0, energy_counter_j=1_800_000.0,
        energy_integrated_j=0.0, energy_method="counter", observed_s=3600.0, energy_covered_s=3600.0, busy_s=3600.0,
        mean_util_pct=80.0, reset_count=0, computed_at=hour,
    )  # fmt: skip


def test_a_new_card_swapped_into_an_old_node_carries_its_own_embodied_carbon(db):
    # given: a node commissioned 2022-10-01 (its host share's 4 years ended 2026-09-30) whose card A was
    # replaced on 2026-10-15 by a brand-new card B
    commissioned, swapped = datetime(2022, 10, 1, tzinfo=UTC), datetime(2026, 10, 15, tzinfo=UTC)
    node = NodeFactory(commissioned_at=commissioned, tenure="rented")
    NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=commissioned)
    a = GpuFactory(node=node, index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-card-A")
    b = GpuFactory(node=node, index=1, name="NVIDIA H100 80GB HBM3", uuid="GPU-card-B")
    GpuInstallation.objects.create(gpu=a, installed_at=commissioned, ended_at=swapped, ended_reason="replaced")
    GpuInstallation.objects.create(gpu=b, installed_at=swapped)
    one_card_hour(node, b)

    row = line(node)

    # then: card B's life runs from its installation: 197 kg over 35,040 h; the host share's is spent
    assert row.embodied_co2e_g_central == pytest.approx(Decimal(197) * 1000 / LIFE_H, rel=Decimal("1e-12"))
    assert row.embodied_unknown_gpu_h == 0


def test_a_node_s_original_cards_keep_its_in_service_date_though_first_sampled_later(db):
    # given: a node bought into service on 2022-09-15 (no commissioning date) whose collector first reported
    # its two cards on 2022-10-01, seconds apart: the node's original cards, not cards that joined it later
    node = NodeFactory(commissioned_at=None, tenure="owned")
    NodePrice.objects.create(
        node=node, fleet=node.fleet, kind="owned", capex=Decimal(48_000), lifetime_years=Decimal(4),
        valid_from=datetime(2022, 9, 1, tzinfo=UTC), in_service_at=datetime(2022, 9, 15, tzinfo=UTC),
    )  # fmt: skip
    first_sample = datetime(2022, 10, 1, tzinfo=UTC)
    for index in range(2):
        gpu = GpuFactory(node=node, index=index, name="NVIDIA H100 80GB HBM3")
        GpuInstallation.objects.create(gpu=gpu, installed_at=first_sample + timedelta(seconds=5 * index))
        one_card_hour(node, gpu, datetime(2026, 9, 20, 12, tzinfo=UTC))

    row = line(node, datetime(2026, 9, 20, 12, tzinfo=UTC))

    # then: cards and host share lived 4 years from 2022-09-15 (to 2026-09-14): nothing left to allocate
    assert (row.embodied_co2e_g_central, row.embodied_unknown_gpu_h) == (0, 0)
    assert row.held_h == 1


def test_embodied_stops_at_the_end_of_life_inside_the_hour(db):
    # given: two H100 SXM lives (card 197 kg, host share 312.5 kg) from 2022-10-31 00:30 to 2026-10-30 00:30
    commissioned = datetime(2022, 10, 31, 0, 30, tzinfo=UTC)
    node = NodeFactory(commissioned_at=commissioned, tenure="rented")
    NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=commissioned)
    GpuFactory(node=node, index=0, name="NVIDIA H100 80GB HBM3")
    first, last = datetime(2022, 10, 31, 0, tzinfo=UTC), datetime(2026, 10, 30, 0, tzinfo=UTC)

    ledger_node_hours_compute(node_id=node.pk, hour_starts=[first, last, last + timedelta(hours=1)])

    # then: the first hour and the last each carry 30 minutes (7.270 g), the hour after nothing
    rate = (Decimal(197) + Decimal("312.5")) * 1000 / LIFE_H
    lines = {row.hour_start: row for row in NodeHourLedger.objects.filter(node=node)}
    assert lines[first].embodied_co2e_g_central == pytest.approx(rate / 2, rel=Decimal("1e-12"))
    assert lines[last].embodied_co2e_g_central == pytest.approx(rate / 2, rel=Decimal("1e-12"))
    assert lines[last + timedelta(hours=1)].embodied_co2e_g_central == 0
    assert lines[last].held_h == 1  # the node is still held (and charged) the whole hour


def test_a_card_whose_life_ends_inside_the_hour_after_it_was_pulled_carries_only_its_installed_time(db):
    # given: a card installed 2022-10-31 00:30 (its life ends 2026-10-30 00:30), pulled at 00:20 that last
    # hour, on a node commissioned long before whose host share is spent
    node = NodeFactory(commissioned_at=datetime(2015, 1, 1, tzinfo=UTC), tenure="rented")
    NodePriceFactory(node=node, rate_per_h=Decimal("2.50"), valid_from=datetime(2015, 1, 1, tzinfo=UTC))
    old = GpuFactory(node=node, index=0, name="NVIDIA H100 80GB HBM3")
    card = GpuFactory(node=node, index=1, name="NVIDIA H100 80GB HBM3")
    GpuInstallation.objects.create(gpu=old, installed_at=datetime(2015, 1, 1, tzinfo=UTC))
    last = datetime(2026, 10, 30, 0, tzinfo=UTC)
    GpuInstallation.objects.create(
        gpu=card, installed_at=datetime(2022, 10, 31, 0, 30, tzinfo=UTC), ended_at=last + timedelta(minutes=20)
    )

    row = line(node, last)

    # then: 20 of the 30 minutes before its life ends: 197 kg x 1000 / 35,040 h / 3
    assert row.embodied_co2e_g_central == pytest.approx(Decimal(197) * 1000 / LIFE_H / 3, rel=Decimal("1e-12"))


def test_marking_existing_lines_queues_every_stored_hour_of_the_nodes(node):
    for hour in (HOUR, HOUR + timedelta(hours=1)):
        usage(node, hour)
        line(node, hour)
    other = NodeFactory(hostname="other")

    assert ledger_lines_reopen(node_windows={node.pk: EVERY_HOUR, other.pk: EVERY_HOUR}, now=datetime.now(UTC)) == 2
    # re-marking updates, adds nothing
    assert ledger_lines_reopen(node_windows={node.pk: EVERY_HOUR}, now=datetime.now(UTC)) == 2
    assert set(LedgerPending.objects.values_list("node_id", "hour_start")) == {
        (node.pk, HOUR),
        (node.pk, HOUR + timedelta(hours=1)),
    }


def test_a_line_carries_the_utilization_of_the_gpu_hours_it_covers(node):
    # given: GPU 0 at 80 % for the whole hour, GPU 1 at 2 % for 30 minutes
    usage(node)
    GpuHourUsage.objects.filter(gpu__index=1).update(observed_s=1800.0)

    stored = line(node)

    # then: the sums of mean_util_pct x observed_s and of observed_s over the node's GPU-hours
    assert (stored.util_pct_s, stored.util_observed_s) == (80.0 * 3600 + 2.0 * 1800, 3600.0 + 1800)
    rows = GpuHourUsage.objects.filter(gpu__node=node, hour_start=HOUR)
    assert stored.util_pct_s == sum(row.mean_util_pct * row.observed_s for row in rows)


def test_a_gpu_hour_without_a_utilization_is_left_out_of_the_lines_utilization(node):
    usage(node)
    GpuHourUsage.objects.filter(gpu__index=1).update(mean_util_pct=None)

    stored = line(node)

    assert (stored.util_pct_s, stored.util_observed_s) == (80.0 * 3600, 3600.0)


def test_a_held_hour_without_telemetry_has_no_utilization(node):
    stored = line(node)

    assert (stored.util_pct_s, stored.util_observed_s) == (0.0, 0.0)


def test_the_migration_fills_existing_lines_with_what_the_ledger_computes(node):
    from django.apps import apps

    if citus_coordinator():
        pytest.skip("migration 0004 runs before 0024 distributes the tables: its join of GPU usage and ledger lines")

    backfill = importlib.import_module("accounting.migrations.0004_ledger_utilization").utilization_backfill
    usage(node)
    usage(node, HOUR + timedelta(hours=1), utils=(50.0, 10.0))
    GpuHourUsage.objects.filter(gpu__index=1, hour_start=HOUR).update(mean_util_pct=None)
    ledger_node_hours_compute(node_id=node.pk, hour_starts=[HOUR, HOUR + timedelta(hours=1)])
    computed = list(NodeHourLedger.objects.order_by("hour_start").values_list("util_pct_s", "util_observed_s"))
    NodeHourLedger.objects.update(util_pct_s=0.0, util_observed_s=0.0)
    site_hours_rebuild()  # lines written by hand: their site-hours summed again

    backfill(apps, None)

    assert list(NodeHourLedger.objects.order_by("hour_start").values_list("util_pct_s", "util_observed_s")) == computed
    assert computed == [(80.0 * 3600, 3600.0), (50.0 * 3600 + 10.0 * 3600, 7200.0)]


@pytest.mark.parametrize("kind", ["rented", "owned"])
def test_the_migration_splits_existing_lines_hardware_cost_by_their_price(node, kind):
    from django.apps import apps

    backfill = importlib.import_module("accounting.migrations.0018_depreciation_by_the_book_split_cost")
    usage(node)
    NodePrice.objects.all().delete()
    NodePrice.objects.create(
        fleet=node.fleet, kind=kind, rate_per_h=Decimal(2), capex=Decimal("350400"), lifetime_years=Decimal(4),
        opex_per_h=Decimal("1.5"), valid_from=LONG_AGO,
    )  # fmt: skip
    computed = line(node)
    NodeHourLedger.objects.update(rent_cost=0, depreciation_cost=0, opex_cost=0)
    site_hours_rebuild()  # lines written by hand: their site-hours summed again

    backfill.split_hardware_cost(apps, None)

    stored = line_stored(node)
    split = (stored.rent_cost, stored.depreciation_cost, stored.opex_cost)
    assert split == (computed.rent_cost, computed.depreciation_cost, computed.opex_cost)
    assert sum(split) == stored.hardware_cost


def line_stored(node, hour=HOUR):
    return NodeHourLedger.objects.get(node=node, hour_start=hour)


def test_a_node_decommissioned_early_books_its_loss_on_disposal_in_its_last_held_hour(node):
    usage(node)
    NodePrice.objects.all().delete()
    NodePrice.objects.create(
        fleet=node.fleet, kind="owned", capex=Decimal(12_000), salvage_value=Decimal(1200), lifetime_years=Decimal(1),
        valid_from=LONG_AGO, in_service_at=LONG_AGO,
    )  # fmt: skip
    node.decommissioned_at = HOUR + timedelta(minutes=30)
    node.save()

    stored = line(node)

    # 900 a month from 1 January 2026: 10 months and 38.5 of November's 720 h by 14:30 on 2 November
    # (9,048.125 charged, the last half hour's 0.625 in it); then 10,800 - 9,048.125 = 1,751.875 lost: 1,752.50
    assert stored.held_h == Decimal("0.5")
    assert stored.depreciation_cost == Decimal("1752.5")
    assert stored.hardware_cost == stored.depreciation_cost
