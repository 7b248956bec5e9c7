"""The hourly refresh: advice stored per class, and the organization told (webhook, e-mail) when it changes."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from advice import refreshes
from advice.models import Advice, AdviceNotification, AdviceRefresh, AdviceSettings, WorkloadClass
from advice.services import advice_refresh
from advice.tasks import advice_refresh_task
from fleets.models import Role
from tests.helpers.dashboard_data import two_fleets
from tests.helpers.factories import MembershipFactory

HOUR = timedelta(hours=1)


class Receiver:
    """A webhook endpoint on 127.0.0.1 that records the JSON bodies POSTed to it and answers ``status``."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.status = 204
        self.delay_s = 0.0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                time.sleep(receiver.delay_s)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                    self.send_response(receiver.status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    # Loopback is refused unless the operator allows it: the stand-in is reached through the allow-list.
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    hook = Receiver()
    thread = threading.Thread(target=hook.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield hook
    hook.server.shutdown()
    hook.server.server_close()


@pytest.fixture
def chat(org_a):
    """Two fleets with 3 measured hours; P99 75 ms on the H100s, 500 ms on the RTX 4090s; 1e9 tokens/day."""
    two_fleets(org_a)
    AdviceSettings.objects.create(organization=org_a, min_hours_of_data=3)
    return WorkloadClass.objects.create(organization=org_a, name="chat", ttft_target_ms=200, ttft_percentile=99,
                                        expected_output_tokens_per_day=10**9)  # fmt: skip


def test_the_first_refresh_stores_the_advice_and_an_unchanged_one_only_renews_it(org_a, chat):
    advice_refresh(organization_id=org_a.pk, now=timezone.now())
    (advice,) = Advice.objects.filter(workload_class=chat)
    assert advice.status == "ok"
    assert advice.fingerprint.startswith("ok:") and "h100-sxm=100%" in advice.fingerprint
    assert advice.explanation.startswith("100% on enterprise (h100-sxm; 0.0112 req/s per GPU, P99 75 ms).")
    assert (
        "consumer misses P99 TTFT <= 200 ms at its lowest trusted load: at 0-0.25 req/s per GPU its P99 is 500 ms"
        in advice.explanation
    )
    assert "Data: consumer 3 h, enterprise 3 h" in advice.explanation
    assert advice.result["all_consumer"]["target_holds"] is False
    later = timezone.now()
    advice_refresh(organization_id=org_a.pk, now=later)
    (renewed,) = Advice.objects.filter(workload_class=chat)
    assert renewed.computed_at == later and renewed.created_at == advice.created_at


def test_a_changed_advice_is_posted_to_the_webhook_and_mailed(org_a, chat, receiver):
    AdviceSettings.objects.filter(organization=org_a).update(webhook_url=receiver.url, notify_emails="ops@example.com")
    advice_refresh(organization_id=org_a.pk, now=timezone.now())
    assert receiver.bodies == [] and mail.outbox == []  # the first advice is no change
    # when: the target loosens to 1 s, which the cheaper consumer fleet holds (P99 500 ms)
    WorkloadClass.objects.filter(pk=chat.pk).update(ttft_target_ms=1000)
    counts = advice_refresh(organization_id=org_a.pk, now=timezone.now())
    # then
    assert counts == {"classes": 1, "changed": 1, "notified": 2}
    (body,) = receiver.bodies
    assert (body["workload_class"], body["status"], body["previous_status"]) == ("chat", "ok", "ok")
    assert "rtx-4090" in body["fingerprint"] and body["previous_fingerprint"].endswith("h100-sxm=100%")
    (message,) = mail.outbox
    assert message.to == ["ops@example.com"]
    assert message.subject == "Wattledger: placement advice for chat changed"
    assert Advice.objects.filter(workload_class=chat).count() == 2


def test_a_failing_webhook_is_parked_not_raised_and_retried_next_time(org_a, chat, receiver):
    AdviceSettings.objects.filter(organization=org_a).update(webhook_url=receiver.url)
    advice_refresh(organization_id=org_a.pk, now=timezone.now())
    receiver.status = 500
    WorkloadClass.objects.filter(pk=chat.pk).update(ttft_target_ms=1000)
    advice_refresh(organization_id=org_a.pk, now=timezone.now())
    (parked,) = AdviceNotification.objects.all()
    assert (parked.sent_at, parked.attempts, parked.error) == (None, 1, "failed: the target answered HTTP 500")
    receiver.status = 200
    assert advice_refresh_task(organization_id=org_a.pk)["notified"] == 1
    parked.refresh_from_db()
    assert parked.sent_at is not None and parked.attempts == 2 and len(receiver.bodies) == 2


def test_with_no_data_the_advice_says_so(org_a):
    lonely = WorkloadClass.objects.create(organization=org_a, name="batch", llm_model="qwen-14b", ttft_target_ms=5000,
                                          expected_output_tokens_per_day=10**6, deadline_h=24)  # fmt: skip
    advice_refresh_task()
    (advice,) = Advice.objects.filter(workload_class=lonely)
    assert advice.status == "insufficient_data"
    assert advice.explanation == "No measured hours of qwen-14b on any fleet: no advice until a fleet has served it."
    assert advice.result["window"] is None


def test_a_webhook_slower_than_the_timeout_is_parked(org_a, chat, receiver, settings):
    settings.ADVICE_WEBHOOK_TIMEOUT_S = 0.2
    AdviceSettings.objects.filter(organization=org_a).update(webhook_url=receiver.url)
    advice_refresh(organization_id=org_a.pk, now=timezone.now())
    receiver.delay_s = 1.0
    WorkloadClass.objects.filter(pk=chat.pk).update(ttft_target_ms=1000)
    counts = advice_refresh(organization_id=org_a.pk, now=timezone.now())
    (parked,) = AdviceNotification.objects.all()
    assert counts["notified"] == 0 and parked.sent_at is None
    assert parked.error == "failed: no complete answer within 0.2 s"


def test_one_organizations_failing_refresh_is_kept_for_it_and_every_other_organization_is_refreshed(
    org_a, org_b, chat, monkeypatch, caplog
):
    other = WorkloadClass.objects.create(organization=org_b, name="batch", llm_model="qwen-14b", ttft_target_ms=5000,
                                         expected_output_tokens_per_day=10**6)  # fmt: skip
    real = refreshes.advice_refresh

    def failing_for_a(*, organization_id, **kwargs):
        if organization_id == org_a.pk:
            raise ZeroDivisionError("a broken curve")
        return real(organization_id=organization_id, **kwargs)

    monkeypatch.setattr(refreshes, "advice_refresh", failing_for_a)
    totals = advice_refresh_task()

    assert (totals["organizations"], totals["not_refreshed"], totals["classes"]) == (2, 1, 1)
    assert Advice.objects.filter(workload_class=other).count() == 1  # Org B refreshed, after A's failure
    failed = AdviceRefresh.objects.get(organization=org_a)
    assert failed.status == "failed" and "failed (ZeroDivisionError)" in failed.error
    assert AdviceRefresh.objects.get(organization=org_b).status == "done"
    assert "the advice refresh of organization" in caplog.text
    page = Client()
    page.force_login(MembershipFactory(organization=org_a, role=Role.VIEWER).user)
    assert "The latest advice refresh failed: the refresh of" in page.get("/advice/").content.decode()
    monkeypatch.setattr(refreshes, "advice_refresh", real)
    advice_refresh_task(organization_id=org_a.pk)  # the next hour's
    assert AdviceRefresh.objects.get(organization=org_a).status == "done"


def test_a_refresh_whose_worker_died_is_failed_when_its_lease_lapsed_and_one_running_is_not_doubled(org_a, chat):
    now = timezone.now()
    AdviceRefresh.objects.create(organization=org_a, status="running", started_at=now, lease_until=now + HOUR)
    assert advice_refresh_task(organization_id=org_a.pk)["not_refreshed"] == 1  # a live one: left alone
    assert not Advice.objects.exists()
    AdviceRefresh.objects.filter(organization=org_a).update(lease_until=now - HOUR)  # its worker died
    assert advice_refresh_task(organization_id=org_a.pk)["not_refreshed"] == 0
    assert Advice.objects.filter(workload_class=chat).count() == 1
    assert AdviceRefresh.objects.get(organization=org_a).status == "done"
