from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from grid import (
    AuthError,
    BadResponse,
    HourRange,
    ProviderUnavailable,
    RateLimited,
    RequestRejected,
    backoff_delay_s,
    missing_hours,
    retry_delay_s,
)

H0 = datetime(2024, 5, 1, tzinfo=UTC)


def hours(*offsets: int) -> list[datetime]:
    return [H0 + timedelta(hours=n) for n in offsets]


def test_missing_hours_are_contiguous_ranges_of_what_is_not_stored() -> None:
    wanted = hours(*range(10))
    stored = hours(0, 1, 4, 5, 6, 9, 12)
    assert missing_hours(wanted, stored) == [
        HourRange(H0 + timedelta(hours=2), H0 + timedelta(hours=4)),
        HourRange(H0 + timedelta(hours=7), H0 + timedelta(hours=9)),
    ]


def test_nothing_missing_and_nothing_stored() -> None:
    assert missing_hours(hours(1, 2), hours(1, 2, 3)) == []
    assert missing_hours(hours(3, 1, 2, 1), []) == [HourRange(H0 + timedelta(hours=1), H0 + timedelta(hours=4))]


def test_same_instant_in_another_offset_counts_as_stored() -> None:
    cest = timezone(timedelta(hours=2))
    stored = [datetime(2024, 5, 1, 2, tzinfo=cest)]  # = 00:00 UTC
    assert missing_hours(hours(0, 1), stored) == [HourRange(H0 + timedelta(hours=1), H0 + timedelta(hours=2))]


@pytest.mark.parametrize(
    "bad",
    [datetime(2024, 5, 1, tzinfo=UTC).replace(tzinfo=None), datetime(2024, 5, 1, 0, 30, tzinfo=UTC)],
    ids=["naive", "not-on-hour"],
)
def test_missing_hours_refuses_non_hours(bad: datetime) -> None:
    with pytest.raises(ValueError, match="hour"):
        missing_hours([bad], [])


def test_backoff_grows_exponentially_up_to_the_cap() -> None:
    top = [backoff_delay_s(n, base_s=2, cap_s=60, rand=lambda: 1.0) for n in range(7)]
    assert top == [2, 4, 8, 16, 32, 60, 60]
    assert backoff_delay_s(3, base_s=2, rand=lambda: 0.25) == 4.0
    assert backoff_delay_s(10_000, cap_s=60, rand=lambda: 0.5) == 30.0


def test_backoff_never_retries_before_retry_after() -> None:
    assert backoff_delay_s(0, retry_after_s=120, base_s=2, cap_s=60, rand=lambda: 1.0) == 120
    assert backoff_delay_s(5, retry_after_s=1, base_s=2, cap_s=60, rand=lambda: 0.5) == 30


def test_backoff_jitter_stays_in_bounds() -> None:
    delays = {backoff_delay_s(4, base_s=1, cap_s=100) for _ in range(200)}
    assert all(0 <= delay <= 16 for delay in delays) and len(delays) > 1


def test_retry_only_what_retrying_can_fix() -> None:
    limited = RateLimited("watttime", "slow down", retry_after_s=90)
    assert retry_delay_s(limited, 0, rand=lambda: 0.0) == 90
    assert retry_delay_s(ProviderUnavailable("x", "down", status=503), 2, base_s=10, rand=lambda: 1.0) == 40
    for error in (AuthError("x", "no", status=401), BadResponse("x", "junk"), RequestRejected("x", "bad", status=400)):
        assert retry_delay_s(error, 0) is None
