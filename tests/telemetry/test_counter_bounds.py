"""Every counter increase is bounded by what hardware can do over the elapsed time: within a batch and against
the last stored sample a batch is refused (422, nothing stored); what only later-stored samples show, the
rollup parks (that node-hour only)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from django.utils import timezone

from telemetry import energy
from telemetry.models import (
    EndpointEpoch,
    EndpointHourUsage,
    GpuHourUsage,
    GpuSample,
    NodeHourUsage,
    NodeMeterSample,
    ParkedHour,
    RollupPending,
    ServingSample,
)
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import make_batch
from tests.helpers.ingest import post

HOUR_S = 3600
H = (int(time.time()) // HOUR_S - 3) * HOUR_S  # an hour well inside retention, three before now
NVML_MAX_J = 1.9e16  # NVML's counter: a uint64 of mJ


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


def gpu_batch(start_s: float, energies: list[float | None], *, epoch: str = "boot-1/driver-1") -> dict:
    batch = make_batch(gpus=1, seconds=len(energies), start_s=start_s)
    batch["gpus"][0]["epoch"] = epoch
    batch["gpu_samples"]["energy_j"] = energies
    return batch


def refused(client, token, batch) -> str:
    before = (GpuSample.objects.count(), ServingSample.objects.count(), NodeMeterSample.objects.count())
    response = post(client, batch, token)
    assert response.status_code == 422, response.content
    after = (GpuSample.objects.count(), ServingSample.objects.count(), NodeMeterSample.objects.count())
    assert after == before  # nothing of the batch
    return response.json()["error"]


# --- within a batch ------------------------------------------------------------------------------


def test_the_probes_jump_to_nvmls_maximum_and_back_within_a_batch_is_refused(client, node, token):
    batch = gpu_batch(H + 100, [5.39e11, NVML_MAX_J, 5.39e11])

    message = refused(client, token, batch)

    assert message == (
        f"gpu_samples.energy_j[1] rises by {NVML_MAX_J - 5.39e11:g} in 1 s: more than 2000 a second "
        "(the board limit, W) allows for GPU GPU-test-0000: at most 2000"
    )


def test_a_drop_to_more_than_the_time_since_the_last_sample_can_hold_is_no_reset(client, node, token):
    # a sawtooth of fake resets: each drop lands on a reading no counter restarted from zero could reach
    batch = gpu_batch(H + 100, [1e6, 10.0, 1e9, 10.0, 1e9])

    message = refused(client, token, batch)

    assert message.startswith("gpu_samples.energy_j[2] rises by 1e+09 in 1 s")
    batch = gpu_batch(H + 100, [1e9, 5e8, 1e9])
    assert refused(client, token, batch) == (
        "gpu_samples.energy_j[1] restarts after a drop reading 5e+08 1 s after 1e+09: more than 2000 a second "
        "(the board limit, W) allows for GPU GPU-test-0000: at most 2000"
    )


def test_a_new_epoch_is_a_restart_whatever_the_order_of_its_rows(client, node, token):
    # one GPU under two epochs, interleaved: the rollup pairs them in time, so does the check
    batch = make_batch(gpus=1, seconds=3, start_s=H + 100)
    batch["gpus"] = [batch["gpus"][0], {**batch["gpus"][0], "epoch": "boot-2/driver-1"}]
    batch["gpu_samples"]["gpu"] = [0, 1, 0]
    batch["gpu_samples"]["energy_j"] = [5.39e11, NVML_MAX_J, 5.39e11 + 300]

    assert refused(client, token, batch).startswith("gpu_samples.energy_j[1] restarts in a new epoch reading 1.9e+16")


def test_prompt_tokens_from_zero_to_two_to_the_53_in_a_second_are_refused(client, node, token):
    batch = make_batch(gpus=1, seconds=10, start_s=H + 100, endpoint=True)
    serving = batch["serving_samples"]
    serving["ts"][1] = serving["ts"][0] + 1
    serving["prompt_tokens"][:2] = [0, 2**53]

    message = refused(client, token, batch)

    assert message.startswith(f"serving_samples.prompt_tokens[1] rises by {2**53:g} in 1 s: more than 1e+07 a second")
    assert "(1 GPUs) allows for endpoint http://127.0.0.1:8000/metrics" in message
    assert message.endswith("at most 2e+07")


def test_a_real_reset_within_a_batch_is_accepted_and_counted_as_its_new_reading(client, node, token):
    # a reboot: the counter restarts from zero, 150 J a second later
    batch = gpu_batch(H + 100, [5.39e11, 5.39e11 + 300, 150.0, 450.0])

    assert post(client, batch, token).status_code == 200
    rollup_pending_run(now=timezone.now())

    assert GpuHourUsage.objects.get(hour_start=at(H)).energy_j == 300 + 150 + 300


# --- against the last stored sample --------------------------------------------------------------


def test_the_second_batchs_first_reading_is_bounded_by_the_stored_last_one(client, node, token):
    assert post(client, gpu_batch(H + 100, [5.39e11, 5.39e11 + 300]), token).status_code == 200

    message = refused(client, token, gpu_batch(H + 102, [NVML_MAX_J]))

    assert message == (
        f"gpu_samples.energy_j[0] rises by {NVML_MAX_J - 5.39e11 - 300:g} in 1 s: more than 2000 a second "
        f"(the board limit, W) allows for GPU GPU-test-0000 (against its sample stored at {at(H + 101).isoformat()}): "
        "at most 2000"
    )


def test_a_sawtooth_across_batches_is_refused_batch_by_batch(client, node, token):
    assert post(client, gpu_batch(H + 100, [1e9, 1e9 + 300]), token).status_code == 200

    assert post(client, gpu_batch(H + 102, [10.0, 20.0]), token).status_code == 200  # a reset that fits: believed

    message = refused(client, token, gpu_batch(H + 104, [1e9, 1e9 + 300]))  # the tooth back up: impossible

    assert message.startswith("gpu_samples.energy_j[0] rises by 1e+09 in 1 s: more than 2000 a second")


def test_a_restart_to_what_the_time_can_hold_is_accepted_across_batches_and_bridged(client, node, token):
    assert post(client, gpu_batch(H + 100, [5.39e11, 5.39e11 + 300]), token).status_code == 200
    rebooted = gpu_batch(H + 102, [500.0, 800.0], epoch="boot-2/driver-1")  # 500 J a second after: fits 2000 W

    assert post(client, rebooted, token).status_code == 200
    rollup_pending_run(now=timezone.now())

    assert GpuHourUsage.objects.get(hour_start=at(H)).energy_j == 300 + 500 + 300


def test_prompt_tokens_jumping_between_batches_are_refused(client, node, token):
    first = make_batch(gpus=1, seconds=10, start_s=H + 100, endpoint=True)
    assert post(client, first, token).status_code == 200
    second = make_batch(gpus=1, seconds=10, start_s=H + 110, endpoint=True)
    second["serving_samples"]["prompt_tokens"] = [2**53, 2**53]

    message = refused(client, token, second)

    assert message.startswith("serving_samples.prompt_tokens[0] rises by")
    assert "against its sample stored at" in message


def meter_batch(start_s: float, energies: list[float], *, epoch: str = "collector-1") -> dict:
    """A GPU's second and the node meter's RAPL counter read each second from ``start_s``."""
    stamps = [start_s + i for i in range(len(energies))]
    meter = {"method": "rapl", "epoch": epoch, "ts": stamps, "power_w": [None] * len(stamps), "energy_j": energies}
    return make_batch(gpus=1, seconds=len(energies), start_s=start_s) | {"node_meter": meter}


def test_the_node_meters_first_reading_is_bounded_by_its_stored_last_one(client, node, token):
    assert post(client, meter_batch(H + 100, [1e6, 1e6 + 300]), token).status_code == 200

    message = refused(client, token, meter_batch(H + 102, [1e9]))

    assert message == (
        f"node_meter.energy_j[0] rises by {1e9 - 1e6 - 300:g} in 1 s: more than 2000 a second (the board limit, W) "
        f"allows for the node meter (against its reading stored at {at(H + 101).isoformat()}): at most 2000"
    )
    assert NodeMeterSample.objects.count() == 2


def test_the_node_meter_restarting_with_its_collector_is_accepted_and_counted_from_zero(client, node, token):
    assert post(client, meter_batch(H + 100, [1e6, 1e6 + 300]), token).status_code == 200
    restarted = meter_batch(H + 103, [400.0, 700.0], epoch="collector-2")  # 400 J in 2 s since: fits 2000 W

    assert post(client, restarted, token).status_code == 200
    rollup_pending_run(now=timezone.now())

    assert NodeHourUsage.objects.get(hour_start=at(H)).energy_j == 300 + 400 + 300
    assert not ParkedHour.objects.exists()


# --- an endpoint's GPUs: each epoch bounded by the GPUs it was declared on ----------------------------


def redeployed(start_s: float, gpus: tuple[int, int], rises: tuple[int, int], *, from_tokens: int = 0) -> dict:
    """One endpoint declared twice in a batch, restarted onto other GPUs: four scrapes 5 s apart in epoch
    "first" on ``gpus[0]`` GPUs, then four in epoch "second" on ``gpus[1]``, its generation tokens rising
    ``rises`` a second (epoch "first" from ``from_tokens``, "second" from zero)."""
    batch = make_batch(gpus=2, seconds=40, start_s=start_s, endpoint=True)
    declared = batch["endpoints"][0]
    batch["endpoints"] = [
        declared | {"epoch": epoch, "gpu_uuids": declared["gpu_uuids"][:count]}
        for epoch, count in zip(("first", "second"), gpus, strict=True)
    ]
    serving = batch["serving_samples"]
    serving["endpoint"] = [0] * 4 + [1] * 4
    serving["generation_tokens"] = [from_tokens + rises[0] * 5 * i for i in range(4)] + [
        rises[1] * 5 * i for i in range(4)
    ]
    return batch


@pytest.mark.parametrize(("gpus", "rises"), [((2, 1), (300_000, 100_000)), ((1, 2), (100_000, 300_000))])
def test_an_endpoint_declared_twice_in_a_batch_is_bounded_by_each_declaration(client, node, token, gpus, rises):
    # 300k generation tokens a second: more than one GPU's 200k, what two can
    assert post(client, redeployed(H + 100, gpus, rises), token).status_code == 200
    rollup_pending_run(now=timezone.now())

    assert not ParkedHour.objects.exists(), list(ParkedHour.objects.values_list("error", flat=True))
    assert EndpointHourUsage.objects.get(hour_start=at(H)).generation_tokens == 15 * (rises[0] + rises[1])
    assert sorted(EndpointEpoch.objects.values_list("epoch", "gpu_count")) == [("first", gpus[0]), ("second", gpus[1])]


def test_an_endpoints_rows_are_refused_beyond_what_their_own_declaration_allows(client, node, token):
    message = refused(client, token, redeployed(H + 100, (2, 1), (100_000, 300_000)))

    assert message.startswith("serving_samples.generation_tokens[5] rises by 1.5e+06 in 5 s: more than 200000")
    assert "(1 GPUs)" in message


def _counters_go_on(batch: dict, *, rows: range, after_s: int) -> None:
    """The prompt, request and TTFT counters of ``rows`` going on from make_batch's readings ``after_s`` seconds in
    (make_batch counts each batch's from zero: in one epoch across two batches that would be a server restart)."""
    serving = batch["serving_samples"]
    for row in rows:
        serving["prompt_tokens"][row] += 1000 * after_s
        serving["requests"][row] += 10 * after_s
        serving["ttft_bucket_counts"][row] = [
            count + more
            for count, more in zip(
                serving["ttft_bucket_counts"][row], [0, 0, after_s, 2 * after_s, *([10 * after_s] * 13)], strict=True
            )
        ]
        serving["ttft_sum_s"][row] += 0.02 * after_s


def test_a_batchs_first_reading_is_bounded_by_its_own_declaration_against_the_stored_one(client, node, token):
    # given: an endpoint on two GPUs serving 300k tokens a second
    first = make_batch(gpus=2, seconds=20, start_s=H + 60, endpoint=True)
    first["endpoints"][0]["epoch"] = "first"
    first["serving_samples"]["generation_tokens"] = [300_000 * 5 * i for i in range(4)]
    assert post(client, first, token).status_code == 200

    # when: the next batch goes on in that epoch on both GPUs (every counter going on from the first batch's),
    # then restarts on one
    second = redeployed(H + 80, (2, 1), (300_000, 100_000), from_tokens=300_000 * 20)
    _counters_go_on(second, rows=range(4), after_s=20)
    response = post(client, second, token)

    # then: its first reading is held to its own entry's two GPUs, not to the last entry's one
    assert response.status_code == 200, response.content
    rollup_pending_run(now=timezone.now())
    assert not ParkedHour.objects.exists(), list(ParkedHour.objects.values_list("error", flat=True))


def test_an_endpoint_redeployed_on_fewer_gpus_does_not_park_its_earlier_hours(client, node, token):
    # given: an endpoint on two GPUs serving 300k tokens a second, rolled up
    one = make_batch(gpus=2, seconds=20, start_s=H + 60, endpoint=True)
    one["serving_samples"]["generation_tokens"] = [300_000 * t for t in range(0, 20, 5)]
    assert post(client, one, token).status_code == 200
    rollup_pending_run(now=timezone.now())
    assert not ParkedHour.objects.exists()

    # when: it is redeployed on one GPU (a new epoch) and its hour rolled up again
    two = make_batch(gpus=2, seconds=20, start_s=H + 600, endpoint=True)
    two["endpoints"][0] |= {"epoch": "redeployed-on-one-gpu", "gpu_uuids": two["endpoints"][0]["gpu_uuids"][:1]}
    two["serving_samples"]["generation_tokens"] = [100_000 * t for t in range(0, 20, 5)]
    assert post(client, two, token).status_code == 200
    rollup_pending_run(now=timezone.now())

    # then: the samples of its first epoch are still bounded by the two GPUs they were served from
    assert not ParkedHour.objects.exists(), list(ParkedHour.objects.values_list("error", flat=True))
    assert EndpointHourUsage.objects.get(hour_start=at(H)).generation_tokens == 300_000 * 15 + 100_000 * 15


# --- what only later samples show: the rollup parks that hour, no other ---------------------------


def test_a_backfill_that_later_samples_contradict_parks_that_hour_only(client, node, token):
    # given: three hours of a GPU, then a backfill into the middle one, fine against the sample before it,
    # that the stored sample after it shows impossible (a new epoch at 10 J, then 5.39e11 J ten seconds later)
    for hour in (H - HOUR_S, H, H + HOUR_S):
        energies = [5.39e11 + 300.0 * i for i in range(10)] if hour != H else [5.39e11 + 3000, 5.39e11 + 3300]
        assert post(client, gpu_batch(hour + 1000, energies), token).status_code == 200
    assert post(client, gpu_batch(H + 990, [10.0], epoch="boot-2/driver-1"), token).status_code == 200

    rollup_pending_run(now=timezone.now())

    parked = ParkedHour.objects.get(node=node, stage="rollup")
    gpu_id = GpuSample.objects.values_list("gpu_id", flat=True).first()
    assert parked.hour_start == at(H)
    assert parked.error.startswith(f"CounterImpossible: GPU {gpu_id}: energy_j counts 5.39e+11 in 10 s from ")
    assert parked.error.endswith("more than 2000 a second (the board limit, W) allows: at most 20000")
    usage = dict(GpuHourUsage.objects.values_list("hour_start", "energy_j"))
    assert usage == {at(H - HOUR_S): 2700.0, at(H + HOUR_S): 2700.0}  # the neighbours, untouched by it
    assert list(RollupPending.objects.values_list("hour_start", flat=True)) == [at(H)]


@pytest.mark.parametrize("teeth", [1, 40, 1200])
def test_a_sawtooth_of_fake_resets_never_puts_more_than_the_board_limit_into_an_hour(teeth):
    # drops followed by huge readings, a second apart: the pure rule refuses to sum them
    points = [energy.GpuPoint(H + 2 * i + j, "1", value) for i in range(teeth) for j, value in enumerate((10.0, 1e12))]

    with pytest.raises(energy.CounterImpossible, match="energy_j counts 1e\\+12 in 1 s"):
        energy.gpu_usage_by_hour(points, hour_starts_s=[H])


def test_whatever_the_rule_accepts_an_hour_holds_at_most_the_board_limit():
    # at the limit every second, with a restart to its most halfway
    points = [
        energy.GpuPoint(H + i, "1" if i < 1800 else "2", 2000.0 * (i if i < 1800 else i - 1799)) for i in range(3601)
    ]

    (usage,) = energy.gpu_usage_by_hour(points, hour_starts_s=[H])

    assert usage.energy_j <= 2000.0 * HOUR_S
