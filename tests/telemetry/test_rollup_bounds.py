"""Property: whatever raw counters are stored (up to the wire's 2**63-1), the rollup and ledger never write
a value past its column nor raise: an hour either fits and is stored as computed, or is parked naming the column
or the counter that counts more than hardware can."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounting.models import NodeHourLedger
from accounting.node_hour_lines import ledger_pending_run
from telemetry import energy
from telemetry.models import (
    EndpointEpoch,
    EndpointHourUsage,
    GpuEpoch,
    GpuHourUsage,
    GpuSample,
    ParkedHour,
    RollupPending,
    ServingEndpoint,
    ServingSample,
)
from telemetry.parking import columns_fit
from telemetry.partitions import partitions_ensure
from telemetry.rollup import rollup_pending_run
from tests.helpers.factories import GpuFactory, NodeFactory

HOUR_S = 3600
H = (int(time.time()) // HOUR_S - 2) * HOUR_S
BIGINT_MAX = 2**63 - 1  # the wire's largest counter

counters = st.one_of(st.sampled_from([0, 1, 2**31, 2**62, BIGINT_MAX - 1, BIGINT_MAX]), st.integers(0, BIGINT_MAX))
energies_j = st.one_of(st.sampled_from([0.0, 1e15, 1e30, 1.7e308]), st.floats(0, 1e308))
series = st.lists(st.tuples(counters, counters, counters), min_size=2, max_size=8)


def at(ts_s: float) -> datetime:
    return datetime.fromtimestamp(ts_s, tz=UTC)


@pytest.fixture
def inventory(db):
    node = NodeFactory(hostname="bounds")
    endpoint = ServingEndpoint.objects.create(node=node, url="http://127.0.0.1:1/metrics", kind="vllm")
    gpu = GpuFactory(node=node)
    partitions_ensure(days=[at(H).date()])
    return {
        "node": node,
        "endpoint": endpoint,
        "endpoint_epoch": EndpointEpoch.objects.create(endpoint=endpoint, epoch="1", ttft_bucket_bounds_s=[]),
        "gpu": gpu,
        "gpu_epoch": GpuEpoch.objects.create(gpu=gpu, epoch="1"),
    }


def stored(inventory, values, energies) -> None:
    """Samples 5 s apart in hour H, written as raw rows (the ingest door is bypassed on purpose)."""
    for model in (ServingSample, GpuSample, EndpointHourUsage, GpuHourUsage, NodeHourLedger, ParkedHour, RollupPending):
        model.objects.all().delete()
    ServingSample.objects.bulk_create(
        ServingSample(
            endpoint=inventory["endpoint"], epoch=inventory["endpoint_epoch"], ts=at(H + 5 * i),
            prompt_tokens=prompt, generation_tokens=generation, requests=requests,
        )
        for i, (prompt, generation, requests) in enumerate(values)
    )  # fmt: skip
    GpuSample.objects.bulk_create(
        GpuSample(gpu=inventory["gpu"], epoch=inventory["gpu_epoch"], ts=at(H + 5 * i), energy_j=e, power_w=300.0)
        for i, e in enumerate(energies)
    )
    RollupPending.objects.create(node=inventory["node"], hour_start=at(H), marked_at=timezone.now())


def computed_sums(values) -> tuple[int, int, int] | None:
    """The hour's sums; ``None`` where a counter counts more than its bound (the hour is parked)."""
    points = [energy.ServingPoint(H + 5 * i, "1", *row) for i, row in enumerate(values)]
    try:
        (usage,) = energy.endpoint_usage_by_hour(points, hour_starts_s=[H])
    except energy.CounterImpossible:
        return None
    return usage.prompt_tokens, usage.generation_tokens, usage.requests


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=series, energies=st.lists(energies_j, min_size=2, max_size=8))
def test_rollup_and_ledger_sums_never_overflow_their_columns(inventory, values, energies):
    stored(inventory, values, sorted(energies))

    # when: neither run raises, whatever the data
    rollup_pending_run(now=timezone.now())
    ledger_pending_run(now=timezone.now())

    # then: what was stored fits its columns (read back), and the tokens are the exact sums
    for model in (EndpointHourUsage, GpuHourUsage, NodeHourLedger):
        columns_fit(list(model.objects.all()))
    sums = computed_sums(values)
    usage = EndpointHourUsage.objects.filter(hour_start=at(H)).first()
    parked = ParkedHour.objects.filter(stage="rollup").first()
    if parked is None:
        assert sums is not None
        assert (usage.prompt_tokens, usage.generation_tokens, usage.requests) == sums
    else:
        # parked only for a reason it names: a counter past its bound, a sum past bigint, an energy no column holds
        assert usage is None
        assert sums is None or max(sums) > BIGINT_MAX or "energy" in parked.error or "power" in parked.error
    for park in ParkedHour.objects.all():
        assert park.error.split(":")[0] in {"ColumnRangeError", "CounterImpossible"}, park.error
