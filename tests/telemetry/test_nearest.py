"""The stored sample nearest a time, for many GPUs and times in one statement (``telemetry.nearest``): each probe
answers what its own lookup would, in any number of probes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from telemetry.models import GpuEpoch, GpuSample
from telemetry.nearest import Probe, nearest_rows
from telemetry.partitions import partitions_ensure
from telemetry.rawstore import GPU_COLUMNS, rows_insert
from tests.helpers.factories import GpuFactory

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def stored(gpu, offsets_s):
    epoch = GpuEpoch.objects.create(gpu=gpu, epoch="e1")
    stamps = [T0 + timedelta(seconds=s) for s in offsets_s]
    partitions_ensure(days={ts.date() for ts in stamps})
    rows = [(gpu.node_id, ts, gpu.pk, epoch.pk, 1.0 + i, 0, 100.0, 50, 10, 40) for i, ts in enumerate(stamps)]
    rows_insert(kind="gpu_samples", columns=GPU_COLUMNS, rows=rows)
    return stamps


def nearest(gpu, probes, columns=()):
    return nearest_rows(GpuSample, node_id=gpu.node_id, owner_column="gpu_id", columns=columns, probes=probes)


@pytest.mark.django_db
def test_each_probe_finds_the_sample_before_or_after_within_the_bridge_limit(settings):
    # given: a GPU's samples at 0, 60 and 120 s, and one far beyond the bridge limit
    settings.TELEMETRY_MAX_BRIDGE_S = 3600
    gpu = GpuFactory()
    at = stored(gpu, [0, 60, 120, 10_000])
    # when: probed either side of 60 s, at 60 s itself, and where the nearest sample is too far away
    rows = nearest(
        gpu,
        [
            Probe(gpu.pk, at[1]),  # before 60: 0
            Probe(gpu.pk, at[1], inclusive=True),  # at or before 60: 60
            Probe(gpu.pk, at[1], later=True),  # after 60: 120
            Probe(gpu.pk, at[1], later=True, inclusive=True),  # at or after 60: 60
            Probe(gpu.pk, at[2] + timedelta(seconds=4000), later=False),  # 4,000 s after 120: beyond the limit
            Probe(gpu.pk, at[0]),  # nothing before the first
            Probe(gpu.pk, None),  # the newest, however old
            Probe(gpu.pk, None, later=True),  # the first
        ],
        columns=("energy_j",),
    )
    # then: each as its own lookup would answer, with its columns
    assert rows == [(at[0], 1.0), (at[1], 2.0), (at[2], 3.0), (at[1], 2.0), None, None, (at[3], 4.0), (at[0], 1.0)]


@pytest.mark.django_db
def test_probes_of_many_gpus_beyond_one_statements_bound_keep_their_order():
    # given: three GPUs of one node with a sample each at a different time
    first = GpuFactory()
    gpus = [first, GpuFactory(node=first.node), GpuFactory(node=first.node)]
    stamps = [stored(gpu, [n * 10])[0] for n, gpu in enumerate(gpus)]
    # when: 900 probes alternate over them (more than one statement holds)
    probes = [Probe(gpus[i % 3].pk, T0 + timedelta(hours=1)) for i in range(900)]
    with CaptureQueriesContext(connection) as queries:
        rows = nearest(first, probes)
    # then: each probe answers for its own GPU, in order, in a few statements
    assert rows == [(stamps[i % 3],) for i in range(900)]
    assert len(queries) == 3
