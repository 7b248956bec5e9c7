"""One tenant's bad data never stops anyone else's rollup or ledger: its node-hours are parked.

The bad node's raw rows are written directly (as a glitching counter or an old
batch accepted before the ingest door had bounds would have left them).
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import OperationalError
from django.utils import timezone

from accounting.models import LedgerPending, NodeHourLedger
from accounting.node_hour_lines import ledger_pending_run
from accounting.tasks import ledger_pending_task
from fleets.models import Role
from telemetry.collector import wire
from telemetry.collector.wire import batch_decode
from telemetry.ingest import batch_ingest
from telemetry.models import (
    EndpointEpoch,
    EndpointHourUsage,
    GpuHourUsage,
    ParkedHour,
    RollupPending,
    ServingEndpoint,
    ServingSample,
    UsageChanged,
)
from telemetry.partitions import partitions_ensure
from telemetry.rollup import rollup_pending_run
from telemetry.tasks import rollup_pending_task
from tests.helpers.batches import make_batch
from tests.helpers.factories import GpuFactory, MembershipFactory, NodeFactory, UserFactory

HOUR_S = 3600
H = (int(time.time()) // HOUR_S - 2) * HOUR_S
BIGINT_MAX = 2**63 - 1


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


def healthy_node(name: str):
    """A node of its own organization with one hour of GPU and serving samples, ingested normally."""
    node = NodeFactory(hostname=name, fleet__organization__name=f"Org {name}")
    batch = make_batch(gpus=2, seconds=61, start_s=H + 600, endpoint=True)
    for ref in batch["gpus"]:
        ref["uuid"] += f"-{name}"
    batch["endpoints"][0]["gpu_uuids"] = [ref["uuid"] for ref in batch["gpus"]]
    batch_ingest(node=node, batch=batch_decode(orjson.dumps(batch)), received_at=timezone.now())
    return node


def poisoned_node(*, hour_s: int = H, marked_at: datetime | None = None):
    """A node whose serving counters add up past bigint within the hour (two restarts at the top)."""
    node = NodeFactory(hostname="poisoned", fleet__organization__name="Org poisoned")
    endpoint = ServingEndpoint.objects.create(node=node, url="http://127.0.0.1:1/metrics", kind="vllm")
    epoch = EndpointEpoch.objects.create(endpoint=endpoint, epoch="1", ttft_bucket_bounds_s=[])
    partitions_ensure(days=[at(hour_s).date()])
    counters = [0, BIGINT_MAX, 0, BIGINT_MAX, 0, BIGINT_MAX]
    ServingSample.objects.bulk_create(
        ServingSample(
            endpoint=endpoint,
            epoch=epoch,
            ts=at(hour_s + 600 + 5 * i),
            prompt_tokens=v,
            generation_tokens=v,
            requests=0,
        )
        for i, v in enumerate(counters)
    )
    # Older than every other mark, as the frozen queue had it: claimed first by every run.
    marked_at = marked_at or timezone.now() - timedelta(days=1)
    RollupPending.objects.create(node=node, hour_start=at(hour_s), marked_at=marked_at)
    return node


def all_rolled_up() -> None:
    """What beat does: rollup then ledger, a few runs."""
    for _ in range(3):
        rollup_pending_run(now=timezone.now())
        ledger_pending_run(now=timezone.now())


@pytest.mark.django_db(transaction=True)
def test_a_poisoned_node_parks_its_hour_and_every_other_tenant_reaches_the_ledger():
    # given: a poisoned node claimed first, and two healthy tenants
    poisoned = poisoned_node()
    healthy = [healthy_node("alpha"), healthy_node("beta")]

    # when
    all_rolled_up()

    # then: every healthy tenant's hour has usage and a ledger line
    for node in healthy:
        assert GpuHourUsage.objects.filter(gpu__node=node, hour_start=at(H)).count() == 2
        usage = EndpointHourUsage.objects.get(endpoint__node=node, hour_start=at(H))
        assert (usage.prompt_tokens, usage.generation_tokens) == (60_000, 300_000)
        line = NodeHourLedger.objects.get(node=node, hour_start=at(H))
        assert line.generation_tokens == 300_000
    assert not RollupPending.objects.exclude(node=poisoned).exists()
    assert not LedgerPending.objects.exists()
    # and the poisoned hour is parked with its error, retried later
    assert RollupPending.objects.filter(node=poisoned).exists()
    parked = ParkedHour.objects.get(node=poisoned, stage="rollup")
    assert parked.attempts >= 1
    assert "prompt_tokens" in parked.error
    assert parked.retry_at > timezone.now()
    assert not EndpointHourUsage.objects.filter(endpoint__node=poisoned).exists()


@pytest.mark.django_db(transaction=True)
def test_a_parked_hour_waits_for_its_backoff_then_is_retried_and_unparked_once_fixed():
    poisoned = poisoned_node()
    rollup_pending_run(now=timezone.now())
    parked = ParkedHour.objects.get(node=poisoned)
    assert parked.attempts == 1

    # A run before the retry time does not touch it.
    rollup_pending_run(now=timezone.now())
    assert ParkedHour.objects.get(node=poisoned).attempts == 1

    # After the retry time it is tried again, fails again, and waits twice as long.
    first_wait = parked.retry_at - parked.failed_at
    rollup_pending_run(now=parked.retry_at + timedelta(seconds=1))
    again = ParkedHour.objects.get(node=poisoned)
    assert again.attempts == 2
    assert again.retry_at - again.failed_at == 2 * first_wait

    # The data fixed (the glitching rows deleted), the next retry rolls it up and unparks it.
    ServingSample.objects.filter(prompt_tokens=BIGINT_MAX).delete()
    rollup_pending_run(now=again.retry_at + timedelta(seconds=1))
    assert not RollupPending.objects.filter(node=poisoned).exists()
    assert not ParkedHour.objects.exists()
    assert EndpointHourUsage.objects.get(endpoint__node=poisoned).prompt_tokens == 0


@pytest.mark.django_db(transaction=True)
def test_only_the_failing_hour_of_a_claim_is_parked():
    poisoned = poisoned_node()
    # A good hour of the same node in the same claim, with its own samples.
    # On an endpoint of its own: samples of one counter on both sides of a gap join its hours,
    # which are then computed (and parked) together.
    endpoint = ServingEndpoint.objects.create(node=poisoned, url="http://127.0.0.1:2/metrics", kind="vllm")
    epoch = EndpointEpoch.objects.create(endpoint=endpoint, epoch="1", ttft_bucket_bounds_s=[])
    ServingSample.objects.bulk_create(
        ServingSample(endpoint=endpoint, epoch=epoch, ts=at(H - HOUR_S + 600 + 5 * i), prompt_tokens=100 * i)
        for i in range(3)
    )
    RollupPending.objects.create(node=poisoned, hour_start=at(H - HOUR_S), marked_at=timezone.now())

    rollup_pending_run(now=timezone.now())

    assert [row.hour_start for row in RollupPending.objects.filter(node=poisoned)] == [at(H)]
    assert [row.hour_start for row in ParkedHour.objects.filter(node=poisoned)] == [at(H)]
    good = EndpointHourUsage.objects.get(endpoint=endpoint, hour_start=at(H - HOUR_S))
    assert good.prompt_tokens == 200


@pytest.mark.django_db(transaction=True)
def test_a_value_the_database_itself_refuses_parks_the_hour_and_the_transaction_goes_on(monkeypatch):
    # given: the check in Python out of the way, so the database refuses the sum mid-transaction
    # (PostgreSQL: DataError "bigint out of range"; SQLite's driver: OverflowError)
    monkeypatch.setattr("telemetry.rollup.columns_fit", lambda rows: None)
    # and the counters' bounds, which park the poisoned hour before any sum is made
    monkeypatch.setattr(wire, "SERVING_RISE_PER_GPU_S", dict.fromkeys(wire.SERVING_RISE_PER_GPU_S, math.inf))
    poisoned = poisoned_node()
    node = healthy_node("gamma")

    # when: the beat tasks run, as Celery calls them
    for _ in range(2):
        rollup_pending_task()
        ledger_pending_task()

    # then
    assert NodeHourLedger.objects.filter(node=node, hour_start=at(H)).exists()
    assert ParkedHour.objects.get(node=poisoned, stage="rollup").error.split(":")[0] in {"DataError", "OverflowError"}


@pytest.mark.django_db(transaction=True)
def test_a_ledger_line_past_its_columns_parks_the_ledger_hour_only():
    # given: usage rows holding an energy no ledger amount column can hold (1e30 J is 2.8e23 kWh)
    poisoned = NodeFactory(hostname="poisoned")
    gpu = GpuFactory(node=poisoned)
    GpuHourUsage.objects.create(
        gpu=gpu, hour_start=at(H), energy_j=1e30, energy_counter_j=1e30, energy_integrated_j=0, energy_method="counter",
        observed_s=3600, energy_covered_s=3600, busy_s=3600, reset_count=0, computed_at=timezone.now(),
    )  # fmt: skip
    UsageChanged.objects.create(node=poisoned, hour_start=at(H), changed_at=timezone.now() - timedelta(days=1))
    node = healthy_node("delta")
    rollup_pending_run(now=timezone.now())

    # when
    ledger_pending_run(now=timezone.now())

    # then
    assert NodeHourLedger.objects.filter(node=node, hour_start=at(H)).exists()
    parked = ParkedHour.objects.get(node=poisoned)
    assert (parked.stage, parked.hour_start, parked.attempts) == ("ledger", at(H), 1)
    assert "NodeHourLedger.it_kwh" in parked.error
    assert LedgerPending.objects.filter(node=poisoned).count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("error", [OperationalError("server closed the connection"), SoftTimeLimitExceeded()])
def test_a_failure_not_about_the_data_ends_the_run_and_parks_nothing(monkeypatch, error):
    healthy_node("epsilon")

    def fail(**kwargs):
        raise error

    monkeypatch.setattr("telemetry.rollup.rollup_node_hours", fail)

    with pytest.raises(type(error)):
        rollup_pending_run(now=timezone.now())

    assert not ParkedHour.objects.exists()
    assert RollupPending.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_parked_hour_is_shown_to_its_organization_only(client, user_b):
    poisoned = poisoned_node()
    admin = UserFactory(username="poison-admin")
    MembershipFactory(user=admin, organization=poisoned.fleet.organization, role=Role.ADMIN)
    rollup_pending_run(now=timezone.now())

    client.force_login(admin)
    [row] = client.get("/api/v1/nodes/").json()
    detail = client.get(f"/api/v1/nodes/{poisoned.pk}/").json()
    page = client.get(f"/nodes/{poisoned.pk}/").content.decode()

    [parked] = row["parked_hours"]
    assert (parked["stage"], parked["hour_start"], parked["attempts"]) == (
        "rollup",
        at(H).isoformat().replace("+00:00", "Z"),
        1,
    )
    assert parked["error"].startswith(
        f"CounterImpossible: endpoint {poisoned.serving_endpoints.get().pk}: prompt_tokens"
    )
    assert detail["parked_hours"] == row["parked_hours"]
    assert 'id="parked-hours"' in page and "prompt_tokens counts" in page
    # another organization's admin sees neither the node nor its error
    client.force_login(user_b)
    assert client.get("/api/v1/nodes/").json() == []
    assert client.get(f"/api/v1/nodes/{poisoned.pk}/").status_code == 404
    assert client.get(f"/nodes/{poisoned.pk}/").status_code == 404
