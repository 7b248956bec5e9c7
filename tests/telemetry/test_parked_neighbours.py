"""A poison node-hour is parked alone: the same node's hours before and after it, and other nodes' and other
organizations' same hour, are rolled up and priced as if it were not there; at both stages (rollup and ledger).

The node's GPU is sampled every 10 s through all three hours, so each neighbour's sample window reaches into
the poison hour; the poison is a stored reading no hardware can reach (as a batch accepted before the ingest
door had bounds left it), or a usage row no ledger column can hold.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from django.utils import timezone

from accounting.models import LedgerPending, NodeHourLedger
from accounting.node_hour_lines import ledger_pending_run
from telemetry.collector.wire import batch_decode
from telemetry.ingest import batch_ingest
from telemetry.models import GpuHourUsage, GpuSample, ParkedHour, RollupPending, UsageChanged
from telemetry.rollup import rollup_pending_run
from tests.helpers.batches import make_batch
from tests.helpers.factories import GpuFactory, NodeFactory

HOUR_S = 3600
H = (int(time.time()) // HOUR_S - 4) * HOUR_S  # the poison hour; its next hour ends well before now
STEP_S = 10


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


def sampled_node(hostname: str, organization: str, *, hours: tuple[int, ...]):
    """A node with one GPU sampled every 10 s through ``hours`` (one batch an hour), ingested normally."""
    node = NodeFactory(hostname=hostname, fleet__organization__name=organization)
    for hour_s in hours:
        batch = make_batch(gpus=1, seconds=HOUR_S // STEP_S, start_s=hour_s)
        samples = batch["gpu_samples"]
        samples["ts"] = [hour_s + STEP_S * i for i in range(len(samples["ts"]))]
        samples["energy_j"] = [1e7 + 300.0 * (ts - H) for ts in samples["ts"]]  # 300 W, one counter throughout
        batch["gpus"][0]["uuid"] += f"-{hostname}"
        batch["sent_at"] = hour_s + HOUR_S
        batch_ingest(node=node, batch=batch_decode(orjson.dumps(batch)), received_at=timezone.now())
    return node


def beat_runs() -> None:
    for _ in range(3):
        rollup_pending_run(now=timezone.now())
        ledger_pending_run(now=timezone.now())


@pytest.mark.django_db(transaction=True)
def test_an_impossible_stored_reading_parks_its_rollup_hour_only():
    # given: a node sampled through H-1, H and H+1, then one reading in the middle of H made impossible
    # (1e12 J more than 10 s can hold, then back: a "reset" that does not fit either)
    three = (H - HOUR_S, H, H + HOUR_S)
    poisoned = sampled_node("poisoned", "Org one", hours=three)
    sibling = sampled_node("sibling", "Org one", hours=(H,))
    stranger = sampled_node("stranger", "Org two", hours=(H,))
    GpuSample.objects.filter(gpu__node=poisoned, ts=at(H + 1800)).update(energy_j=1e12)

    # when
    beat_runs()

    # then: the poison hour alone is parked, with the reason, and stays queued
    [parked] = ParkedHour.objects.all()
    assert (parked.node, parked.hour_start, parked.stage) == (poisoned, at(H), "rollup")
    assert "energy_j counts" in parked.error
    assert list(RollupPending.objects.values_list("node", "hour_start")) == [(poisoned.pk, at(H))]
    # and its neighbours are rolled up as usual, at 300 W: the hour before holds its whole 3600 s (its last
    # interval reaches into H), the hour after 3590 s (no sample after its last)
    usage = dict(GpuHourUsage.objects.filter(gpu__node=poisoned).values_list("hour_start", "energy_j"))
    assert usage == {at(H - HOUR_S): 300.0 * 3600, at(H + HOUR_S): 300.0 * 3590}
    # and priced
    lines = NodeHourLedger.objects.filter(node=poisoned).values_list("hour_start", flat=True)
    assert set(lines) == {at(H - HOUR_S), at(H + HOUR_S)}
    # another node of the same organization and another organization's node: their hour H, untouched
    for node in (sibling, stranger):
        assert GpuHourUsage.objects.get(gpu__node=node).hour_start == at(H)
        assert NodeHourLedger.objects.get(node=node).hour_start == at(H)
    assert not LedgerPending.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_usage_row_no_ledger_column_holds_parks_its_ledger_hour_only():
    # given: three hours of a GPU's usage, the middle one past every ledger amount (1e30 J is 2.8e23 kWh)
    poisoned = NodeFactory(hostname="poisoned", fleet__organization__name="Org one")
    gpu = GpuFactory(node=poisoned)
    for hour_s, energy_j in ((H - HOUR_S, 1e6), (H, 1e30), (H + HOUR_S, 1e6)):
        GpuHourUsage.objects.create(
            gpu=gpu, hour_start=at(hour_s), energy_j=energy_j, energy_counter_j=energy_j, energy_integrated_j=0,
            energy_method="counter", observed_s=3600, energy_covered_s=3600, busy_s=3600, reset_count=0,
            computed_at=timezone.now(),
        )  # fmt: skip
        UsageChanged.objects.create(node=poisoned, hour_start=at(hour_s), changed_at=timezone.now() - timedelta(days=1))
    sibling = sampled_node("sibling", "Org one", hours=(H,))
    stranger = sampled_node("stranger", "Org two", hours=(H,))

    # when
    beat_runs()

    # then: the ledger hour alone is parked, naming the column
    [parked] = ParkedHour.objects.all()
    assert (parked.node, parked.hour_start, parked.stage) == (poisoned, at(H), "ledger")
    assert "NodeHourLedger.it_kwh" in parked.error
    assert list(LedgerPending.objects.values_list("node", "hour_start")) == [(poisoned.pk, at(H))]
    # and its neighbours are priced
    lines = dict(NodeHourLedger.objects.filter(node=poisoned).values_list("hour_start", "it_kwh"))
    assert lines.keys() == {at(H - HOUR_S), at(H + HOUR_S)}
    assert lines[at(H - HOUR_S)] == lines[at(H + HOUR_S)] > 0
    for node in (sibling, stranger):
        assert NodeHourLedger.objects.get(node=node).hour_start == at(H)
