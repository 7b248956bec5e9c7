"""The WSGI ingest route: valid batches answered without Django's request cycle, exactly as Django would."""

from __future__ import annotations

import gzip
import logging
import time
from datetime import timedelta

import orjson
import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from django.urls import set_script_prefix
from django.utils import timezone
from psycopg import pq

from config.wsgi import application, django_application
from fleets.models import NodeCredential
from fleets.services import credentials_revoke
from fleets.tokens import token_sha256
from telemetry import ingest
from telemetry.api import IngestView
from telemetry.models import CollectorStatus, GpuSample
from telemetry.route import IngestRoute
from tests.telemetry.batches import make_batch
from tests.telemetry.wsgi_client import WsgiClient

URL = "/api/v1/ingest/"
NOW_S = float(int(time.time()) - 600)


def send(client: WsgiClient, batch: dict | bytes, token: str | None, **headers: str):
    body = batch if isinstance(batch, bytes) else gzip.compress(orjson.dumps(batch))
    headers = {"Content-Encoding": "gzip", **headers}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return client.post(URL, body, headers=headers)


def through_django_only(environ, start_response):
    raise AssertionError("a valid batch went to Django")


def test_a_valid_batch_is_stored_by_the_route_alone(token, monkeypatch):
    monkeypatch.setattr(application, "django", through_django_only)

    response = send(WsgiClient(), make_batch(gpus=2, seconds=5), token)

    assert response.status_code == 200, response.content
    assert response.json()["stored"] == {"gpu_samples": 10, "serving_samples": 0}
    assert GpuSample.objects.count() == 10


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_the_routes_answer_has_the_headers_djangos_middleware_adds(token, settings, scheme):
    settings.SECURE_HSTS_SECONDS = 3600  # sent over HTTPS only, by both
    django_app, route = fresh_apps()

    by_django = send(WsgiClient(django_app, scheme=scheme), make_batch(gpus=1, seconds=3), token)
    by_route = send(WsgiClient(route, scheme=scheme), make_batch(gpus=1, seconds=3, start_s=by_django_end()), token)

    assert (by_django.status_code, by_route.status_code) == (200, 200)
    assert by_route.headers == by_django.headers
    assert ("strict-transport-security" in by_route.headers) == (scheme == "https")
    assert by_route.headers["content-length"] == str(len(by_route.content))


def fresh_apps() -> tuple[WSGIHandler, IngestRoute]:
    """Django's application and the route around it, loaded now (middleware reads its settings when loaded)."""
    django_app = WSGIHandler()
    return django_app, IngestRoute(django_app)


def by_django_end() -> float:
    return float(GpuSample.objects.latest("ts").ts.timestamp() + 1)


def test_a_refused_batch_gets_the_same_answer_both_ways(token, caplog):
    bad = make_batch(gpus=1, seconds=2)
    bad["gpu_samples"]["power_w"][0] = -1.0

    with caplog.at_level(logging.WARNING, logger="django.request"):
        by_django = send(WsgiClient(django_application), bad, token)
        by_route = send(WsgiClient(), bad, token)

    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("WARNING", "Bad Request: /api/v1/ingest/")] * 2
    assert by_route.status_code == by_django.status_code == 400
    assert by_route.content == by_django.content
    assert by_route.headers == by_django.headers
    assert GpuSample.objects.count() == 0


@pytest.mark.parametrize(
    ("case", "change", "status"),
    [
        ("no token", {"token": None}, 401),
        ("unknown token", {"token": "wln_" + "x" * 40}, 401),
        ("not a bearer token", {"token": None, "headers": {"Authorization": "Basic dXNlcjpwYXNz"}}, 401),
        ("a host not allowed", {"host": "evil.example"}, 400),
        ("plain HTTP where HTTPS is required", {"redirect": True}, 301),
    ],
)
def test_what_the_route_does_not_accept_gets_djangos_own_answer(token, settings, case, change, status):
    settings.SECURE_SSL_REDIRECT = change.get("redirect", False)
    host = change.get("host", "testserver")
    used = change.get("token", token)
    headers = change.get("headers", {})
    batch = make_batch(gpus=1, seconds=2)
    django_app, route = fresh_apps()

    by_django = send(WsgiClient(django_app, host=host), batch, used, **headers)
    by_route = send(WsgiClient(route, host=host), batch, used, **headers)

    assert by_route.status_code == by_django.status_code == status, case
    assert by_route.content == by_django.content
    assert by_route.headers == by_django.headers
    assert GpuSample.objects.count() == 0


@pytest.mark.parametrize(("method", "path"), [("GET", URL), ("PUT", URL), ("POST", "/api/v1/ingest")])
def test_other_methods_and_paths_go_to_django(token, monkeypatch, method, path):
    reached = []

    def django_app(environ, start_response):
        reached.append(environ)
        start_response("204 No Content", [])
        return []

    monkeypatch.setattr(application, "django", django_app)

    WsgiClient().request(method, path, b"{}", content_type="application/json")

    assert [environ["PATH_INFO"] for environ in reached] == [path]


def test_the_route_is_found_below_any_mount_point(token):
    route = fresh_apps()[1]  # loaded first: what loads here keeps the prefix it sees (static files' base URL)
    set_script_prefix("/wattledger/")  # as a request under SCRIPT_NAME=/wattledger leaves it in this thread
    try:
        assert route.path == "/api/v1/ingest/"
    finally:
        set_script_prefix("/")

    response = WsgiClient(route).request(
        "POST", URL, gzip.compress(orjson.dumps(make_batch(gpus=1, seconds=2))), content_type="application/json",
        headers={"Content-Encoding": "gzip", "Authorization": f"Bearer {token}"}, script_name="/wattledger",
    )  # fmt: skip

    assert response.status_code == 200
    assert GpuSample.objects.count() == 2


def test_an_unexpected_error_is_answered_500_logged_and_stores_nothing(token, monkeypatch, caplog):
    def failing(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ingest, "_status_statement", failing)

    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = send(WsgiClient(), make_batch(gpus=1, seconds=2), token)

    assert response.status_code == 500
    assert any("disk on fire" in (record.exc_text or str(record.exc_info)) for record in caplog.records)
    assert GpuSample.objects.count() == 0
    assert send(WsgiClient(), make_batch(gpus=1, seconds=2), token).status_code == 500  # and the next one too
    monkeypatch.undo()
    assert send(WsgiClient(), make_batch(gpus=1, seconds=2), token).status_code == 200  # the connection still works


def test_the_request_ends_as_a_django_request_does(token):
    finished = []

    def receiver(**kwargs):
        finished.append(kwargs)

    signals.request_finished.connect(receiver)
    try:
        response = send(WsgiClient(), make_batch(gpus=1, seconds=2), token)
    finally:
        signals.request_finished.disconnect(receiver)

    assert response.status_code == 200
    assert len(finished) == 1


# --- a token this process knows: checked in the batch's own transaction ------------------------------

needs_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the check joins the batch's pipeline on PostgreSQL only"
)


@pytest.fixture
def lookups(monkeypatch):
    """The token lookups made before a batch is read (the view's authentication)."""
    made = []
    original = IngestView.node_authenticate.__func__

    def counted(cls, request):
        made.append(request.path)
        return original(cls, request)

    monkeypatch.setattr(IngestView, "node_authenticate", classmethod(counted))
    return made


@needs_postgresql
def test_a_known_tokens_batch_is_stored_without_a_lookup_of_its_own(token, lookups):
    route = fresh_apps()[1]

    first = send(WsgiClient(route), make_batch(gpus=1, seconds=2, start_s=NOW_S), token)
    second = send(WsgiClient(route), make_batch(gpus=1, seconds=2, start_s=NOW_S + 2), token)

    assert (first.status_code, second.status_code) == (200, 200)
    assert len(lookups) == 1
    assert GpuSample.objects.count() == 4
    assert CollectorStatus.objects.get().batches_accepted == 2


@needs_postgresql
@pytest.mark.parametrize("bad_batch", [False, True])
def test_a_known_token_revoked_since_is_refused_as_django_refuses_it_and_stores_nothing(node, token, bad_batch):
    django_app, route = fresh_apps()
    assert send(WsgiClient(route), make_batch(gpus=1, seconds=2, start_s=NOW_S), token).status_code == 200
    credentials_revoke(node=node)
    batch = make_batch(gpus=1, seconds=2, start_s=NOW_S + 2)
    if bad_batch:  # refused before the database: the token is checked before the batch's error is told
        batch["gpu_samples"]["temp_c"][0] = 900

    by_route = send(WsgiClient(route), batch, token)
    by_django = send(WsgiClient(django_app), batch, token)

    assert by_route.status_code == by_django.status_code == 401
    assert (by_route.content, by_route.headers) == (by_django.content, by_django.headers)
    assert GpuSample.objects.count() == 2
    assert CollectorStatus.objects.get().batches_accepted == 1
    assert route._known.get(token_sha256(token)) is None


@needs_postgresql
def test_a_known_tokens_use_is_still_recorded(node, token):
    route = fresh_apps()[1]
    send(WsgiClient(route), make_batch(gpus=1, seconds=2, start_s=NOW_S), token)
    NodeCredential.objects.update(last_used_at=timezone.now() - timedelta(hours=1))

    send(WsgiClient(route), make_batch(gpus=1, seconds=2, start_s=NOW_S + 2), token)

    assert timezone.now() - NodeCredential.objects.get().last_used_at < timedelta(minutes=1)


@needs_postgresql
@pytest.mark.parametrize("revoked", [False, True])
def test_an_error_before_a_known_tokens_check_is_answered_after_checking_it(node, token, monkeypatch, revoked):
    route = fresh_apps()[1]
    assert send(WsgiClient(route), make_batch(gpus=1, seconds=2, start_s=NOW_S), token).status_code == 200
    if revoked:
        credentials_revoke(node=node)

    def failing(**kwargs):
        raise RuntimeError("no space left for a partition")

    monkeypatch.setattr(ingest, "partitions_ensure", failing)
    response = send(WsgiClient(route), make_batch(gpus=1, seconds=2, start_s=NOW_S + 2), token)

    assert response.status_code == (401 if revoked else 500)
    assert GpuSample.objects.count() == 2


@needs_postgresql
@pytest.mark.django_db(transaction=True)
def test_with_real_commits_a_known_tokens_batches_and_a_resend_are_stored_once(node, token):
    route = fresh_apps()[1]
    batch = make_batch(gpus=2, seconds=5, start_s=NOW_S)

    answers = [send(WsgiClient(route), batch, token) for _ in range(2)]  # the second is a re-send
    later = send(WsgiClient(route), make_batch(gpus=2, seconds=5, start_s=NOW_S + 5), token)

    assert [a.json()["stored"]["gpu_samples"] for a in (*answers, later)] == [10, 0, 10]
    assert answers[1].json()["duplicates"]["gpu_samples"] == 10
    assert GpuSample.objects.count() == 20
    assert CollectorStatus.objects.get().batches_accepted == 3
    # Each batch's COMMIT went with its COPY: the connection is idle, back in autocommit, and usable.
    assert connection.get_autocommit()
    assert connection.connection.pgconn.transaction_status == pq.TransactionStatus.IDLE
    assert not connection.in_atomic_block
