"""POST /api/v1/ingest/: atomic, idempotent, scoped to the token's node, strict about input."""

from __future__ import annotations

import gzip
import time

import orjson
import pytest

from fleets.models import Gpu
from fleets.services import credentials_revoke
from telemetry.collector import wire
from telemetry.models import CollectorStatus, GpuSample, NodeMeterSample, ServingEndpoint, ServingSample
from tests.helpers.batches import make_batch
from tests.helpers.clients import both_ways_in  # noqa: F401 - the client fixture: each test both ways in
from tests.helpers.factories import GpuFactory, NodeFactory
from tests.helpers.ingest import URL, post


def stored_counts():
    return GpuSample.objects.count(), ServingSample.objects.count()


def test_batch_is_stored_and_counted(client, node, token):
    batch = make_batch(gpus=2, seconds=10, endpoint=True)
    response = post(client, batch, token)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["stored"] == {"gpu_samples": 20, "serving_samples": 2}
    assert body["duplicates"] == {"gpu_samples": 0, "serving_samples": 0}
    assert body["rejected"] == []
    assert stored_counts() == (20, 2)
    serving = list(ServingSample.objects.order_by("ts").values_list("ttft_bucket_counts", "generation_tokens"))
    sent = batch["serving_samples"]
    assert serving == list(zip(sent["ttft_bucket_counts"], sent["generation_tokens"], strict=True))


def test_new_gpus_and_endpoints_join_the_inventory_on_first_report(client, node, token):
    post(client, make_batch(gpus=2, endpoint=True), token)

    gpus = Gpu.objects.filter(node=node).order_by("index")
    assert [(g.uuid, g.name, g.energy_counter_supported) for g in gpus] == [
        ("GPU-test-0000", "NVIDIA H100 80GB HBM3", True),
        ("GPU-test-0001", "NVIDIA H100 80GB HBM3", True),
    ]
    endpoint = ServingEndpoint.objects.get(node=node)
    assert (endpoint.kind, endpoint.model_name) == ("vllm", "meta-llama/Llama-3.1-8B-Instruct")
    assert set(endpoint.gpus.all()) == set(gpus)


def test_resent_batch_answers_200_and_changes_nothing(client, node, token):
    batch = make_batch(gpus=2, seconds=10, endpoint=True)
    post(client, batch, token)
    before = list(GpuSample.objects.order_by("gpu_id", "ts").values())

    batch["gpu_samples"]["power_w"] = [999.0] * len(batch["gpu_samples"]["power_w"])  # same keys, other values
    again = post(client, batch, token)

    assert again.status_code == 200
    assert again.json()["stored"] == {"gpu_samples": 0, "serving_samples": 0}
    assert again.json()["duplicates"] == {"gpu_samples": 20, "serving_samples": 2}
    assert list(GpuSample.objects.order_by("gpu_id", "ts").values()) == before


def test_stored_values_match_what_was_sent(client, node, token):
    batch = make_batch(gpus=1, seconds=1)
    batch["gpu_samples"]["mem_util_pct"] = [None]
    post(client, batch, token)

    row = GpuSample.objects.get()
    assert row.ts.timestamp() == batch["gpu_samples"]["ts"][0]
    assert (row.power_w, row.energy_j, row.util_pct, row.mem_util_pct, row.temp_c) == (
        300.0,
        batch["gpu_samples"]["energy_j"][0],
        90,
        None,
        60,
    )


def test_plain_json_without_gzip_is_accepted(client, node, token):
    response = post(client, make_batch(gpus=1, seconds=3), token, gzip_it=False)

    assert response.status_code == 200
    assert stored_counts() == (3, 0)


def test_collector_status_records_freshness_and_drops(client, node, token):
    batch = make_batch(gpus=1, seconds=5)
    batch["collector"]["dropped_batches"] = 7
    batch["collector"]["spool_bytes"] = 4096
    post(client, batch, token)

    status = CollectorStatus.objects.get(node=node)
    assert (status.dropped_batches, status.spool_bytes, status.batches_accepted) == (7, 4096, 1)
    assert status.newest_sample_at.timestamp() == batch["gpu_samples"]["ts"][-1]
    assert 0 <= status.lag_s < 60


def test_old_backfill_does_not_move_newest_sample_back(client, node, token):
    post(client, make_batch(gpus=1, seconds=5), token)
    newest = CollectorStatus.objects.get().newest_sample_at
    post(client, make_batch(gpus=1, seconds=5, start_s=time.time() - 86400), token)

    assert CollectorStatus.objects.get().newest_sample_at == newest
    assert CollectorStatus.objects.get().batches_accepted == 2


def test_samples_older_than_retention_are_rejected_and_the_rest_stored(client, node, token, settings):
    old = make_batch(gpus=1, seconds=2, start_s=time.time() - (settings.TELEMETRY_RETENTION_DAYS + 1) * 86400)
    batch = make_batch(gpus=1, seconds=3)
    for column, values in old["gpu_samples"].items():
        batch["gpu_samples"][column] = values + batch["gpu_samples"][column]

    response = post(client, batch, token)

    assert response.status_code == 200
    assert response.json()["stored"]["gpu_samples"] == 3
    assert response.json()["rejected"] == [
        {
            "kind": "gpu_samples",
            "rows": 2,
            "reason": f"older than the {settings.TELEMETRY_RETENTION_DAYS}-day retention",
        }
    ]


def node_meter(stamps):
    return {"method": "ipmi_dcmi", "epoch": "collector-1", "ts": stamps, "power_w": [612.0] * len(stamps),
            "energy_j": [None] * len(stamps)}  # fmt: skip


def test_node_meter_readings_are_counted_and_a_resent_batch_stores_them_once(client, node, token):
    start_s = float(int(time.time()) - 60)
    batch = make_batch(gpus=1, seconds=3, start_s=start_s) | {"node_meter": node_meter([start_s, start_s + 1.0])}

    first, again = post(client, batch, token).json(), post(client, batch, token).json()

    assert (first["stored"], first["duplicates"]) == (
        {"gpu_samples": 3, "serving_samples": 0, "node_meter": 2},
        {"gpu_samples": 0, "serving_samples": 0, "node_meter": 0},
    )
    assert (again["stored"], again["duplicates"]) == (
        {"gpu_samples": 0, "serving_samples": 0, "node_meter": 0},
        {"gpu_samples": 3, "serving_samples": 0, "node_meter": 2},
    )
    assert NodeMeterSample.objects.count() == 2


def test_node_meter_readings_older_than_retention_are_rejected_and_the_rest_stored(client, node, token, settings):
    old_s, now_s = time.time() - (settings.TELEMETRY_RETENTION_DAYS + 1) * 86400, float(int(time.time()) - 60)
    batch = make_batch(gpus=1, seconds=3, start_s=now_s) | {"node_meter": node_meter([old_s, now_s, now_s + 1.0])}

    response = post(client, batch, token)

    assert response.status_code == 200
    assert response.json()["stored"]["node_meter"] == 2
    assert response.json()["rejected"] == [
        {"kind": "node_meter", "rows": 1, "reason": f"older than the {settings.TELEMETRY_RETENTION_DAYS}-day retention"}
    ]
    assert NodeMeterSample.objects.count() == 2


# --- authentication and scope ---------------------------------------------------


@pytest.mark.parametrize("bad_token", [None, "wln_unknown", "not-a-node-token"])
def test_missing_or_unknown_token_is_401(client, node, token, bad_token):
    response = post(client, make_batch(), bad_token)

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert stored_counts() == (0, 0)


def test_revoked_token_is_401(client, node, token):
    credentials_revoke(node=node)

    assert post(client, make_batch(), token).status_code == 401


def test_token_cannot_write_another_nodes_gpu(client, node, token):
    other = GpuFactory(node=NodeFactory(fleet=node.fleet, site=node.site, hostname="gpu-02"), uuid="GPU-test-0001")

    response = post(client, make_batch(gpus=2), token)

    assert response.status_code == 403
    assert "GPU-test-0001 is registered to another node" in response.json()["error"]
    assert stored_counts() == (0, 0)
    assert other.node.hostname == "gpu-02"
    assert not Gpu.objects.filter(uuid="GPU-test-0000").exists()


@pytest.mark.parametrize("path", ["/api/schema/", "/admin/"])
def test_node_token_reads_no_other_endpoint(client, token, path):
    response = client.get(path, headers={"Authorization": f"Bearer {token}"})

    assert response.status_code in (302, 401, 403)
    if response.status_code == 302:
        assert "/login/" in response.url


def test_only_post_is_allowed(client, token):
    assert client.get(URL, headers={"Authorization": f"Bearer {token}"}).status_code == 405


# --- bad input: 4xx with a message, nothing stored ----------------------------


def _mutate(path: str, value):
    def apply(batch):
        target = batch
        keys = path.split(".")
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        last = keys[-1]
        target[int(last) if last.isdigit() else last] = value
        return batch

    return apply


BAD_BATCHES = [
    ("unknown version", _mutate("version", 99), 400, "unsupported wire version 99"),
    ("negative power", _mutate("gpu_samples.power_w.0", -5.0), 422, "gpu_samples.power_w[0]=-5.0 is outside"),
    ("power above bound", _mutate("gpu_samples.power_w.1", 9000.0), 422, "gpu_samples.power_w[1]=9000.0"),
    ("utilization over 100", _mutate("gpu_samples.util_pct.2", 101), 422, "gpu_samples.util_pct[2]=101"),
    ("negative energy", _mutate("gpu_samples.energy_j.0", -1.0), 422, "gpu_samples.energy_j[0]"),
    ("string as number", _mutate("gpu_samples.temp_c.0", "hot"), 400, "gpu_samples.temp_c[0] must be an integer"),
    ("ragged columns", _mutate("gpu_samples.ts", [1.8e9]), 400, "columns differ in length"),
    ("dangling gpu ref", _mutate("gpu_samples.gpu.0", 7), 400, "gpu_samples.gpu[0]=7 does not name"),
    ("ts in milliseconds", _mutate("gpu_samples.ts.0", 5.0), 422, "gpu_samples.ts[0]"),
    ("bad endpoint kind", _mutate("endpoints.0.kind", "ollama"), 400, "endpoints[0].kind must be one of"),
    ("non-cumulative ttft", _mutate("serving_samples.ttft_bucket_counts.1.3", 0), 400, "must be cumulative"),
    ("missing gpu uuid", _mutate("gpus.0.uuid", ""), 400, "gpus[0].uuid must be a non-empty string"),
    ("endpoint on foreign gpu", _mutate("endpoints.0.gpu_uuids", ["GPU-elsewhere"]), 422, "not on this node"),
]


@pytest.mark.parametrize(("name", "mutate", "status", "message"), BAD_BATCHES, ids=[b[0] for b in BAD_BATCHES])
def test_bad_batch_is_refused_with_a_message_and_nothing_stored(client, node, token, name, mutate, status, message):
    batch = mutate(make_batch(gpus=2, seconds=10, endpoint=True))

    response = post(client, batch, token)

    assert response.status_code == status, response.content
    assert message in response.json()["error"]
    assert stored_counts() == (0, 0)
    assert not Gpu.objects.exists()


def test_nan_is_refused(client, node, token):
    body = orjson.dumps(make_batch(gpus=1, seconds=1)).replace(b'"power_w":[300.0]', b'"power_w":[NaN]')

    response = post(client, body, token)

    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]


def test_samples_from_the_future_are_refused(client, node, token):
    batch = make_batch(gpus=1, seconds=2, start_s=time.time() + 3600)

    response = post(client, batch, token)

    assert response.status_code == 422
    assert "ahead of the server's clock" in response.json()["error"]
    assert stored_counts() == (0, 0)


def test_too_many_rows_is_413(client, node, token):
    batch = make_batch(gpus=8, seconds=wire.MAX_GPU_ROWS // 8 + 1)  # 8 rows over the limit

    response = post(client, batch, token)

    assert response.status_code == 413
    assert f"gpu_samples has {wire.MAX_GPU_ROWS + 8} rows; the limit is {wire.MAX_GPU_ROWS}" in response.json()["error"]
    assert stored_counts() == (0, 0)


def test_oversized_body_is_413_before_parsing(client, node, token):
    response = post(client, b"x" * (wire.MAX_BODY_BYTES + 1), token, gzip_it=False)

    assert response.status_code == 413


def test_decompression_bomb_is_413_without_inflating_it_all(client, node, token):
    bomb = gzip.compress(b" " * (wire.MAX_DECOMPRESSED_BYTES * 4), compresslevel=9)
    assert len(bomb) < wire.MAX_BODY_BYTES

    response = post(client, bomb, token, gzip_it=False, **{"Content-Encoding": "gzip"})

    assert response.status_code == 413
    assert "inflates past" in response.json()["error"]


def test_corrupt_gzip_is_400(client, node, token):
    response = post(client, b"\x1f\x8b not gzip", token, gzip_it=False, **{"Content-Encoding": "gzip"})

    assert response.status_code == 400


def test_wrong_content_type_is_415(client, node, token):
    response = post(client, make_batch(), token, content_type="text/plain")

    assert response.status_code == 415
    assert "Content-Type must be application/json" in response.json()["error"]


def test_batch_is_atomic_when_a_later_part_fails(node, token, monkeypatch):
    """In process only: the failure is put into the server's code."""
    from django.test import Client

    from telemetry import ingest

    written_before_failure = []

    def serving_rows_fail(*, kind, columns, rows):
        if kind == "serving_samples":  # the GPU rows are in, inside the transaction
            written_before_failure.append(stored_counts())
            raise RuntimeError("disk full")
        return rows_insert(kind=kind, columns=columns, rows=rows)

    rows_insert = ingest.rows_insert
    monkeypatch.setattr(ingest, "rows_insert", serving_rows_fail)

    response = post(Client(raise_request_exception=False), make_batch(gpus=2, seconds=5, endpoint=True), token)

    assert response.status_code == 500
    assert written_before_failure == [(10, 0)]  # the GPU rows were in, and are gone with the failure
    assert stored_counts() == (0, 0)
    assert not CollectorStatus.objects.exists()
