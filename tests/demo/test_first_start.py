"""A first start that serves early: the last days first, the rest while the demo runs, a banner meanwhile,
and progress bars that end at 100 % or say why they stopped."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from accounting.models import NodeHourLedger
from demo.progress import Progress
from demo.status import STALE_AFTER, state_read, state_write
from fleets.models import Role
from telemetry.models import EndpointHourUsage
from tests.helpers.demo import HOUR, FakeStream, expected_generation_tokens, peak_window_end
from tests.helpers.factories import MembershipFactory, OrganizationFactory, UserFactory


def test_a_queue_whose_estimate_was_twice_its_work_still_ends_at_100_percent():
    stream = FakeStream(tty=False)
    progress = Progress(stream, "ledger", 5392, "node-hours")  # pending marks counted twice
    progress.update(2696)
    progress.finish(actual=2696)

    assert "100.0%  2,696/2,696 node-hours" in stream.text.splitlines()[-1]


def test_a_resume_of_a_few_minutes_shows_its_amount_not_zero():
    stream = FakeStream(tty=True)
    progress = Progress(stream, "backfill", 0.00347, "node-days acknowledged")  # 5 minutes of one node
    progress.update(0.0017)
    progress.finish()

    last = stream.text.rsplit("\r", 1)[-1]
    assert "100.0%  0.00347/0.00347 node-days" in last
    assert "0.00/0.00" not in stream.text


def test_a_stopped_bar_says_why():
    stream = FakeStream(tty=False)
    progress = Progress(stream, "backfill", 14.0, "node-days acknowledged")
    progress.update(7.0)
    progress.finish(stopped="interrupted")

    last = stream.text.splitlines()[-1]
    assert " 50.0%  7.0/14.0 node-days acknowledged" in last
    assert last.endswith("stopped: interrupted")


@pytest.fixture
def signed_in(client, db):
    organization = OrganizationFactory(name="Demo AI")
    user = UserFactory(username="admin")
    MembershipFactory(user=user, organization=organization, role=Role.ADMIN)
    client.force_login(user)
    return client


def _banner(client, path="/finance/") -> str | None:
    html = client.get(path).content.decode()
    if 'id="demo-backfill"' not in html:
        return None
    return html.split('id="demo-backfill" role="status">', 1)[1].split("</p>", 1)[0]


def test_every_page_says_backfilling_n_of_14_days_until_the_history_is_in(signed_in, time_machine):
    now = timezone.now()
    state_write(start=now - timedelta(days=14), end=now, days_total=14.0, days_done=2.0, phase="waiting", reason="")
    for path in ("/finance/", "/sustainability/", "/compare/", "/nodes/"):
        assert _banner(signed_in, path).startswith("backfilling: 2 of 14 days"), path

    state_write(days_done=9.4, phase="sending")
    assert _banner(signed_in).startswith("backfilling: 9 of 14 days")

    # A run that stopped updating (killed) is said to have stopped, with what to do.
    time_machine.move_to(now + STALE_AFTER + timedelta(seconds=5))
    assert _banner(signed_in).startswith("History incomplete: 9 of 14 days in (the backfill is not running)")
    assert "make demo" in _banner(signed_in)

    state_write(days_done=14.0, phase="done")
    assert _banner(signed_in) is None


def test_no_banner_without_a_demo(signed_in):
    assert state_read() is None
    assert _banner(signed_in) is None


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_first_start_sends_the_last_hours_first_and_the_rest_later_without_counting_a_token_twice():
    end = peak_window_end()
    start = end - 3 * HOUR

    first = io.StringIO()
    call_command("seed_demo", "--hours", "3", "--first-days", str(1 / 24), "--end", end.isoformat(), stdout=first)

    # The last hour only: rolled up and priced, nothing for the two hours before it (not even held cost).
    assert set(NodeHourLedger.objects.values_list("hour_start", flat=True)) == {end - HOUR}
    state = state_read()
    assert (state.start, state.end, state.phase, state.days_total) == (start, end, "waiting", 0.125)
    assert state.days_done == pytest.approx(1 / 24, abs=0.001)
    assert "The last 0.042 of 0.125 days are in" in first.getvalue()
    assert "sends the other 0.083 meanwhile" in first.getvalue()
    assert "100.0%" in first.getvalue()
    last_hour = {u.pk: u.generation_tokens for u in EndpointHourUsage.objects.filter(hour_start=end - HOUR)}

    call_command("seed_demo", "--rest", stdout=io.StringIO())

    assert sorted(set(NodeHourLedger.objects.values_list("hour_start", flat=True))) == [start, start + HOUR, end - HOUR]
    assert NodeHourLedger.objects.count() == 3 * 8
    assert state_read().phase == "done" and state_read().days_done == 0.125
    # The last hour is untouched; the first hours hold what the simulated servers made, once.
    assert {u.pk: u.generation_tokens for u in EndpointHourUsage.objects.filter(hour_start=end - HOUR)} == last_hour
    for usage in EndpointHourUsage.objects.filter(hour_start=start).select_related("endpoint__node"):
        expected = expected_generation_tokens(usage.endpoint.node, start, start + HOUR)
        assert 0.93 * expected < usage.generation_tokens <= expected, usage.endpoint.node.hostname

    # A second first start (a second `make demo`) finds the window whole: it says so, and leaves nothing to send.
    second = io.StringIO()
    call_command("seed_demo", "--hours", "3", "--first-days", str(1 / 24), "--end", end.isoformat(), stdout=second)
    assert "All 0.125 days of history are in" in second.getvalue() and "meanwhile" not in second.getvalue()
    assert state_read().phase == "done"
