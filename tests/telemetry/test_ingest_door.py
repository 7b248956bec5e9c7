"""What the ingest door refuses, and how: control characters, values out of physical bounds, two rows with
one key, and what it accepts that proxies do (chunked bodies); its 401 and its schema. Each case both ways in."""

from __future__ import annotations

import gzip
import io
import time

import orjson
import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from telemetry.collector import wire
from telemetry.models import CollectorStatus, GpuSample, NodeMeterSample, ServingSample
from tests.helpers.batches import make_batch
from tests.helpers.clients import GunicornClient, both_ways_in  # noqa: F401 - the client fixture: both ways in
from tests.helpers.ingest import URL, post

NOW_S = float(int(time.time()) - 600)


def refused(client, token, batch, status):
    """The answer's message, after checking that the batch was refused with ``status`` and stored nothing."""
    response = post(client, batch, token)
    assert response.status_code == status, response.content
    assert (GpuSample.objects.count(), ServingSample.objects.count(), NodeMeterSample.objects.count()) == (0, 0, 0)
    assert not CollectorStatus.objects.exists()
    return response.json()["error"]


def with_endpoint(gpus=2, seconds=10):
    return make_batch(gpus=gpus, seconds=seconds, start_s=NOW_S, endpoint=True)


# --- control characters: 400 naming the field, never a 500 -----------------------------------------

STRINGS = [
    ("batch_id", lambda b: b),
    ("gpus[0].uuid", lambda b: b["gpus"][0]),
    ("gpus[1].name", lambda b: b["gpus"][1]),
    ("gpus[0].epoch", lambda b: b["gpus"][0]),
    ("endpoints[0].url", lambda b: b["endpoints"][0]),
    ("endpoints[0].model", lambda b: b["endpoints"][0]),
    ("endpoints[0].epoch", lambda b: b["endpoints"][0]),
    ("collector.hostname", lambda b: b["collector"]),
    ("collector.version", lambda b: b["collector"]),
]


@pytest.mark.parametrize(("field", "holder"), STRINGS, ids=[s[0] for s in STRINGS])
@pytest.mark.parametrize("character", ["\x00", "\x1b", "\x7f"])
def test_a_control_character_in_any_string_is_refused_naming_the_field(client, node, token, field, holder, character):
    batch = with_endpoint()
    key = field.rsplit(".", 1)[-1]
    holder(batch)[key] = f"gpu{character}host"

    message = refused(client, token, batch, 400)

    assert message == f"{field} contains a control character (U+{ord(character):04X})"


def test_a_control_character_in_an_endpoints_gpu_uuid_is_refused(client, node, token):
    batch = with_endpoint()
    batch["endpoints"][0]["gpu_uuids"][1] = "GPU-\x00"

    assert refused(client, token, batch, 400) == "endpoints[0].gpu_uuids[1] contains a control character (U+0000)"


# --- physical bounds: 422 naming the field ----------------------------------------------------------


def test_power_over_the_board_limit_is_refused(client, node, token):
    batch = with_endpoint()
    batch["gpu_samples"]["power_w"][3] = 2000.5

    assert refused(client, token, batch, 422) == "gpu_samples.power_w[3]=2000.5 is outside 0.0..2000.0"


def test_energy_rising_faster_than_the_board_limit_allows_is_refused(client, node, token):
    batch = make_batch(gpus=1, seconds=4, start_s=NOW_S)
    energy = batch["gpu_samples"]["energy_j"]
    energy[2] = energy[1] + 2000.5  # 1 s later: at most 2000 W x 1 s = 2000 J (no slack: an hour holds 2 kWh at most)

    message = refused(client, token, batch, 422)

    assert message == (
        "gpu_samples.energy_j[2] rises by 2000.5 in 1 s: more than 2000 a second (the board limit, W) allows "
        "for GPU GPU-test-0000: at most 2000"
    )


def test_energy_rising_at_the_limit_and_a_counter_reset_are_accepted(client, node, token):
    batch = make_batch(gpus=1, seconds=4, start_s=NOW_S)
    energy = batch["gpu_samples"]["energy_j"]
    energy[1] = energy[0] + 2000.0  # exactly the limit
    energy[2], energy[3] = 10.0, 310.0  # the counter restarted from zero: a drop to what 1 s can hold is a reset

    response = post(client, batch, token)

    assert response.status_code == 200, response.content
    assert response.json()["stored"]["gpu_samples"] == 4


@pytest.mark.parametrize("counter", ["prompt_tokens", "generation_tokens", "requests"])
def test_a_serving_counter_that_would_overflow_the_rollups_sums_is_refused(client, node, token, counter):
    batch = with_endpoint()
    batch["serving_samples"][counter][1] = 2**63 - 1  # accepted before, and the rollup then failed for everyone

    message = refused(client, token, batch, 422)

    assert message == f"serving_samples.{counter}[1]={2**63 - 1} is outside 0..{2**53}"


@pytest.mark.parametrize(
    ("counter", "per_gpu_s"), [("prompt_tokens", 10_000_000), ("generation_tokens", 200_000), ("requests", 20_000)]
)
def test_a_serving_counter_rising_faster_than_its_gpus_can_is_refused(client, node, token, counter, per_gpu_s):
    batch = with_endpoint(gpus=2)  # two scrapes, 5 s apart, of an endpoint on 2 GPUs
    column = batch["serving_samples"][counter]
    limit = per_gpu_s * 2 * (5 + 1)  # per GPU-second x 2 GPUs x (5 s + 1 s of slack)
    column[1] = column[0] + limit + 1

    message = refused(client, token, batch, 422)

    assert message.startswith(f"serving_samples.{counter}[1] rises by {limit + 1:g} in 5 s: more than {limit / 6:g}")


def test_a_ttft_histogram_counting_more_first_tokens_than_requests_can_have_is_refused(client, node, token):
    batch = with_endpoint(gpus=2)
    counts = batch["serving_samples"]["ttft_bucket_counts"]
    counts[1] = [*counts[1][:-1], 240_001]  # +Inf: at most 20,000 requests per GPU-second x 2 x 6 s = 240,000

    message = refused(client, token, batch, 422)

    assert message.startswith("serving_samples.ttft_bucket_counts[1] rises by 240001 in 5 s")


def test_an_endpoint_naming_one_gpu_twice_is_refused(client, node, token):
    # one GPU named ten times would bound the endpoint's counters as ten GPUs', which the rollup (counting the
    # endpoint's distinct GPUs) then finds impossible
    batch = with_endpoint(gpus=2)
    batch["endpoints"][0]["gpu_uuids"] = ["GPU-test-0000", "GPU-test-0001", "GPU-test-0000"]

    message = refused(client, token, batch, 422)

    assert message == (
        "endpoints[0].gpu_uuids[2] names GPU GPU-test-0000 again (as endpoints[0].gpu_uuids[0]): list each GPU once"
    )


def node_meter(ts, *, power_w=None, energy_j=None):
    """A node meter's columns (RAPL: the CPU packages' energy counter, and power)."""
    return {
        "method": "rapl",
        "epoch": "collector-1",
        "ts": ts,
        "power_w": power_w or [100.0] * len(ts),
        "energy_j": energy_j or [None] * len(ts),
    }


def test_a_node_meter_reading_from_the_future_is_refused(client, node, token):
    batch = make_batch(gpus=1, seconds=3, start_s=NOW_S) | {"node_meter": node_meter([4.0e9])}  # in 2096

    message = refused(client, token, batch, 422)

    assert message.startswith("a sample is ") and message.endswith("check the host's clock")


def test_two_node_meter_readings_at_one_instant_are_refused(client, node, token):
    meter = node_meter([NOW_S + 1.0, NOW_S + 2.0, NOW_S + 1.0], power_w=[100.0, 100.0, 900.0])
    batch = make_batch(gpus=1, seconds=3, start_s=NOW_S) | {"node_meter": meter}

    assert refused(client, token, batch, 422).startswith("node_meter rows 0 and 2 are both the node meter at ")


def test_a_node_meter_energy_rising_faster_than_the_rollup_allows_is_refused(client, node, token):
    meter = node_meter([NOW_S + 10.0, NOW_S + 11.0, NOW_S + 12.0], energy_j=[0.0, 1500.0, 3500.5])
    batch = make_batch(gpus=1, seconds=20, start_s=NOW_S) | {"node_meter": meter}

    message = refused(client, token, batch, 422)

    assert message == (
        "node_meter.energy_j[2] rises by 2000.5 in 1 s: more than 2000 a second (the board limit, W) allows "
        "for the node meter: at most 2000"
    )


def test_a_node_meter_energy_at_the_limit_and_its_restart_are_accepted(client, node, token):
    meter = node_meter([NOW_S + 10.0, NOW_S + 11.0, NOW_S + 12.0], energy_j=[5000.0, 7000.0, 1000.0])

    response = post(client, make_batch(gpus=1, seconds=20, start_s=NOW_S) | {"node_meter": meter}, token)

    assert response.status_code == 200, response.content
    assert NodeMeterSample.objects.count() == 3


# --- two rows with one key in a batch: 422 naming them ------------------------------------------------


def test_two_gpu_rows_with_one_key_are_refused_naming_them(client, node, token):
    batch = make_batch(gpus=1, seconds=3, start_s=NOW_S)
    for column in batch["gpu_samples"].values():
        column.append(column[0])  # row 3 repeats row 0

    message = refused(client, token, batch, 422)

    assert message.startswith("gpu_samples rows 0 and 3 are both GPU GPU-test-0000 at ")


def test_two_rows_equal_once_rounded_to_the_microsecond_are_refused(client, node, token):
    batch = make_batch(gpus=1, seconds=2, start_s=NOW_S)
    batch["gpu_samples"]["ts"] = [NOW_S + 0.1234561, NOW_S + 0.1234564]  # both .123456

    message = refused(client, token, batch, 422)

    assert "gpu_samples rows 0 and 1 are both GPU GPU-test-0000 at " in message
    assert message.endswith(".123456+00:00")


def test_two_serving_rows_with_one_key_are_refused(client, node, token):
    batch = with_endpoint()
    for column in batch["serving_samples"].values():
        column[1] = column[0]

    assert refused(client, token, batch, 422).startswith("serving_samples rows 0 and 1 are both endpoint http://")


def test_one_gpu_in_two_epochs_may_not_repeat_a_timestamp_either(client, node, token):
    batch = make_batch(gpus=1, seconds=2, start_s=NOW_S)
    batch["gpus"].append({**batch["gpus"][0], "epoch": "boot-2/driver-1"})
    batch["gpu_samples"]["gpu"][1] = 1
    batch["gpu_samples"]["ts"][1] = batch["gpu_samples"]["ts"][0]

    assert refused(client, token, batch, 422).startswith("gpu_samples rows 0 and 1 are both GPU GPU-test-0000")


# --- chunked bodies ----------------------------------------------------------------------------------


def test_a_chunked_body_is_read_whole_and_stored(client, node, token):
    body = gzip.compress(orjson.dumps(make_batch(gpus=2, seconds=10, start_s=NOW_S)))
    headers = {"Content-Encoding": "gzip", "Authorization": f"Bearer {token}"}

    if isinstance(client, GunicornClient):  # a real chunked request: gunicorn de-chunks the stream
        response = client.request(
            "POST", URL, body, headers={**headers, "Content-Type": wire.CONTENT_TYPE}, chunked=True
        )
    else:  # what a WSGI server hands Django for one: no Content-Length, the de-chunked stream
        extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}
        extra["wsgi.input"] = io.BytesIO(body)
        response = client.post(
            URL, body, content_type=wire.CONTENT_TYPE, CONTENT_LENGTH="", HTTP_TRANSFER_ENCODING="chunked", **extra
        )

    assert response.status_code == 200, response.content
    assert response.json()["stored"]["gpu_samples"] == 20


def test_a_chunked_body_over_the_limit_is_413(gunicorn_port, transactional_db, node, token):
    body = b" " * (wire.MAX_BODY_BYTES + 1)
    headers = {"Content-Type": wire.CONTENT_TYPE, "Authorization": f"Bearer {token}"}

    response = GunicornClient(gunicorn_port).request("POST", URL, body, headers=headers, chunked=True)

    assert response.status_code == 413
    assert response.json() == {"error": f"body is over the limit of {wire.MAX_BODY_BYTES} bytes"}


# --- the 401 and the schema -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_token", "message"),
    [
        (None, "Authentication credentials were not provided."),
        ("wln_" + "x" * 40, "unknown or revoked node token"),
        ("not-a-node-token", "not a node token"),
    ],
)
def test_the_401_answer_is_in_the_documented_error_schema(client, node, token, bad_token, message):
    response = post(client, make_batch(gpus=1, seconds=1), bad_token)

    assert response.status_code == 401
    assert response.json() == {"error": message}
    assert response["WWW-Authenticate"] == 'Bearer realm="wattledger-ingest"'


def test_the_schema_allows_only_the_version_the_server_accepts():
    schema = SchemaGenerator().get_schema(request=None, public=True)

    version = schema["components"]["schemas"]["BatchSchema"]["properties"]["version"]
    enum = schema["components"]["schemas"][version["allOf"][0]["$ref"].rsplit("/", 1)[-1]]
    assert (enum["type"], enum["enum"]) == ("integer", [wire.WIRE_VERSION])
    responses = schema["paths"]["/api/v1/ingest/"]["post"]["responses"]
    assert responses["401"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorSchema"}


# --- middleware an operator adds sees ingest requests -----------------------------------------------

seen: list[tuple[str, str, int]] = []


def recording_middleware(get_response):
    def middleware(request):
        response = get_response(request)
        seen.append((request.method, request.path, response.status_code))
        return response

    return middleware


def test_a_middleware_added_to_the_settings_sees_ingest_requests(settings, node, token):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.recording_middleware"]
    seen.clear()

    post(Client(), make_batch(gpus=1, seconds=2, start_s=NOW_S), token)
    post(Client(), make_batch(gpus=1, seconds=2, start_s=NOW_S), None)

    assert seen == [("POST", URL, 200), ("POST", URL, 401)]
