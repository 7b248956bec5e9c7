"""The leases' lengths are settings read when a lease is granted or judged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.test import override_settings

from common.leases import lapse_reason, lease_from, queue_wait

NOW = datetime(2026, 1, 5, 10, 30, tzinfo=UTC)


def test_the_defaults_are_two_minutes_running_and_fifteen_queued() -> None:
    assert lease_from(NOW) == NOW + timedelta(minutes=2)
    assert queue_wait() == timedelta(minutes=15)


@override_settings(TASK_LEASE_S=4, TASK_QUEUE_WAIT_S=30)
def test_shorter_leases_are_read_at_call_time_and_the_reason_names_the_last_progress() -> None:
    assert lease_from(NOW) == NOW + timedelta(seconds=4)
    assert queue_wait() == timedelta(seconds=30)
    reason = lapse_reason(running=True, lease_until=lease_from(NOW))
    assert reason == "the worker stopped: no progress since 2026-01-05 10:30:00 UTC"
    assert lapse_reason(running=False, lease_until=NOW + queue_wait()).endswith("queued since 2026-01-05 10:30:00 UTC")
