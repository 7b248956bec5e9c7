"""URLs users name (the advice webhook, a Prometheus source) never reach inside: internal targets refused when
saved and sent; one deadline; no redirect.

Stand-ins on 127.0.0.1 are reached only through ``OUTBOUND_ALLOWED_HOSTS``, as an
operator would name an internal target; names resolve through the suite's stand-in
resolver (``conftest.STAND_IN_NAMES``), never real DNS.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.error
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from advice.models import AdviceNotification, AdviceSettings
from advice.notify import notification_send
from common.outbound import OutboundFailed, OutboundRefused, pinned_opener, post_json, send_check, target_check
from fleets.models import Role

INTERNAL = [
    "http://127.0.0.1/hook",
    "http://127.1.2.3:8080/hook",
    "http://localhost/hook",
    "http://10.0.0.5/hook",
    "http://172.16.3.4/hook",
    "http://172.31.255.1/hook",
    "http://192.168.1.1/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.0.1/hook",
    "http://0.0.0.0/hook",
    "http://224.0.0.1/hook",
    "http://240.0.0.1/hook",
    "http://[::1]/hook",
    "http://[fd00::1]/hook",
    "http://[fe80::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[::ffff:10.0.0.1]/hook",
    "http://[::]/hook",
    "http://internal.example.com/hook",
    "http://metadata.example.com/hook",
]


@pytest.fixture(autouse=True)
def _internal_names(_stand_in_resolver: dict[str, str]) -> None:
    _stand_in_resolver.update(
        {"localhost": "127.0.0.1", "internal.example.com": "10.1.2.3", "metadata.example.com": "169.254.169.254"}
    )


@pytest.mark.parametrize("url", INTERNAL)
def test_an_internal_target_is_refused_when_saved(client_as, org_a, url):
    admin = client_as(Role.ADMIN)
    refused = admin.put("/api/v1/advice-settings/", {"webhook_url": url}, format="json")

    assert refused.status_code == 400
    assert refused.json()["webhook_url"][0].startswith("refused: ")
    assert not AdviceSettings.objects.filter(organization=org_a).exclude(webhook_url="").exists()


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://hooks.example.com/x", "only http and https"),
        ("https://user:secret@hooks.example.com/x", "user name or password"),
        ("https://nowhere.example.com/x", "does not resolve"),
    ],
)
def test_a_url_the_rule_refuses_says_why(url, why):
    with pytest.raises(OutboundRefused, match=why):
        target_check(url)


def test_a_public_name_is_saved(client_as, org_a):
    admin = client_as(Role.ADMIN)
    saved = admin.put("/api/v1/advice-settings/", {"webhook_url": "https://hooks.example.com/advice"}, format="json")

    assert saved.status_code == 200
    assert AdviceSettings.objects.get(organization=org_a).webhook_url == "https://hooks.example.com/advice"


def test_the_admin_form_refuses_an_internal_target_too(org_a):
    options = AdviceSettings(organization=org_a, webhook_url="http://169.254.169.254/latest/")
    with pytest.raises(ValidationError, match="refused: "):
        options.full_clean()


class StandIn:
    """An HTTP server on 127.0.0.1: answers each POST by ``respond(handler)``, counts the requests."""

    def __init__(self, respond: Any) -> None:
        self.hits = 0
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                stand_in.hits += 1
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with contextlib.suppress(OSError):
                    respond(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_ins() -> Iterator[list[StandIn]]:
    made: list[StandIn] = []
    yield made
    for server in made:
        server.close()


def _answer(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Any:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return respond


def test_loopback_is_reached_only_through_the_allow_list(settings, stand_ins):
    hook = StandIn(_answer(204))
    stand_ins.append(hook)
    with pytest.raises(OutboundRefused):
        post_json(hook.url, b"{}", deadline_s=2)
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{hook.port + 1}"]  # another port: still refused
    with pytest.raises(OutboundRefused):
        post_json(hook.url, b"{}", deadline_s=2)
    assert hook.hits == 0

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.0/8"]
    assert post_json(hook.url, b"{}", deadline_s=2) == 204
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{hook.port}"]
    assert post_json(hook.url, b"{}", deadline_s=2) == 204
    assert hook.hits == 2


def test_a_redirect_is_not_followed(settings, stand_ins):
    elsewhere = StandIn(_answer(200))
    hook = StandIn(_answer(302, headers={"Location": elsewhere.url}))
    stand_ins.extend([elsewhere, hook])
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{hook.port}"]

    with pytest.raises(OutboundFailed, match=r"^failed: the target answered HTTP 302$"):
        post_json(hook.url, b"{}", deadline_s=2)
    assert (hook.hits, elsewhere.hits) == (1, 0)


def test_a_target_that_drips_its_answer_is_cut_off_at_the_deadline(settings, stand_ins):
    def drip(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
        for _ in range(40):  # one byte every 0.25 s: 10 s in all, each read well inside a per-read timeout
            handler.wfile.write(b"X")
            handler.wfile.flush()
            time.sleep(0.25)

    hook = StandIn(drip)
    stand_ins.append(hook)
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    started = time.monotonic()

    with pytest.raises(OutboundFailed, match=r"^failed: no complete answer within 1 s$"):
        post_json(hook.url, b"{}", deadline_s=1)
    assert time.monotonic() - started < 3  # the deadline held, not the drip's 10 s


def test_a_closed_port_and_a_silent_one_read_the_same(settings, stand_ins):
    silent = StandIn(lambda handler: time.sleep(3))
    stand_ins.append(silent)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    errors = []
    for url in (f"http://127.0.0.1:{closed_port}/hook", silent.url):
        with pytest.raises(OutboundFailed) as failed:
            post_json(url, b"{}", deadline_s=0.5)
        errors.append(str(failed.value))

    assert errors == ["failed: no complete answer within 0.5 s"] * 2


def test_a_large_answer_is_read_only_up_to_the_cap(settings, stand_ins):
    hook = StandIn(_answer(200, body=b"x" * 5_000_000))
    stand_ins.append(hook)
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.OUTBOUND_MAX_RESPONSE_BYTES = 1024

    assert post_json(hook.url, b"{}", deadline_s=2) == 200


def test_a_name_that_turns_internal_after_it_was_saved_is_refused_when_sent(org_a, _stand_in_resolver, stand_ins):
    options = AdviceSettings.objects.create(organization=org_a, webhook_url="https://hooks.example.com/advice")
    options.full_clean()  # public when saved
    _stand_in_resolver["hooks.example.com"] = "127.0.0.1"  # DNS now answers with loopback (rebinding)
    notification = AdviceNotification.objects.create(
        organization=org_a, channel=AdviceNotification.Channel.WEBHOOK, target=options.webhook_url,
        payload={"workload_class": "chat"}, created_at=timezone.now(),
    )  # fmt: skip

    assert notification_send(notification=notification, now=timezone.now()) is False
    notification.refresh_from_db()
    assert notification.sent_at is None
    assert notification.error.startswith("refused: hooks.example.com is (or resolves to) an internal address")


def test_with_delivery_off_nothing_is_resolved_or_sent(org_a, settings, monkeypatch):
    from common import outbound

    def resolve(*args: Any) -> Any:
        raise AssertionError("a name was resolved with delivery off")

    monkeypatch.setattr(outbound, "resolve", resolve)
    settings.OUTBOUND_DELIVERY = False
    target_check("https://anything.example.org/hook")  # saved without asking DNS
    notification = AdviceNotification.objects.create(
        organization=org_a, channel=AdviceNotification.Channel.WEBHOOK, target="https://anything.example.org/hook",
        payload={"workload_class": "chat"}, created_at=timezone.now(),
    )  # fmt: skip

    assert notification_send(notification=notification, now=timezone.now()) is False
    notification.refresh_from_db()
    assert notification.error == "refused: outbound delivery is off on this server (OUTBOUND_DELIVERY)"


def test_a_pinned_opener_opens_the_checked_target_alone():
    # given: an opener for the target a Prometheus source's URL was checked as
    opener = pinned_opener(send_check("https://hooks.example.com/prometheus"))

    # then: another host, scheme or port, or a scheme urllib reads files by, is refused before any connection
    for url in ("https://files.example.com/x", "http://hooks.example.com/x", "https://hooks.example.com:8443/x"):
        with pytest.raises(OutboundRefused, match="refused: not the URL that was checked"):
            opener.open(url, timeout=1)
    with pytest.raises(urllib.error.URLError, match="unknown url type: file"):
        opener.open("file:///etc/passwd", timeout=1)


def test_with_delivery_off_no_request_is_checked_for_sending(settings):
    settings.OUTBOUND_DELIVERY = False
    with pytest.raises(OutboundRefused, match=r"^refused: outbound delivery is off"):
        send_check("https://hooks.example.com/prometheus")
