"""Password logins are protected against guessing; token issuing and reports are rate-limited.

django-axes locks a user name out from one address, and an address out for every user
name, after ``LOGIN_FAILURE_LIMIT`` wrong passwords (5 by default) for
``LOGIN_COOLOFF_MINUTES`` (15); the same user name from another address is not locked.
DRF throttles count requests per user.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.test import Client
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from fleets.personal_tokens import personal_token_create
from tests.helpers.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"  # tests.helpers.factories.UserFactory's
LOGIN_PAGES = ["/accounts/login/", "/admin/login/"]
START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def sign_in(url: str, username: str, password: str, *, address: str = "192.0.2.10") -> Any:
    return Client().post(url, {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in(response: Any) -> bool:
    return response.status_code == 302 and "login" not in response["Location"]


def carol_locked_out_at_start() -> None:
    """Carol exists, and five wrong passwords for her are tried at START."""
    UserFactory(username="carol")
    with time_machine.travel(START, tick=False):
        for n in range(5):
            sign_in("/accounts/login/", "carol", f"guess-{n}")


def carol_at(minutes: float) -> Any:
    """Carol's right password, tried ``minutes`` after START."""
    with time_machine.travel(START + timedelta(minutes=minutes), tick=False):
        return sign_in("/accounts/login/", "carol", PASSWORD)


@pytest.mark.parametrize("url", LOGIN_PAGES)
def test_five_wrong_passwords_lock_the_user_out_from_that_address_even_with_the_right_one(url: str) -> None:
    UserFactory(username="carol", is_staff=True)
    with time_machine.travel(START, tick=False):
        answers = [sign_in(url, "carol", f"guess-{n}").status_code for n in range(5)]
        locked = sign_in(url, "carol", PASSWORD)

    assert answers == [200, 200, 200, 200, 429]
    assert locked.status_code == 429
    assert b"too many login attempts" in locked.content.lower()


@pytest.mark.parametrize("url", LOGIN_PAGES)
def test_failures_from_one_address_do_not_lock_the_user_out_from_another(url: str) -> None:
    # given: someone at 203.0.113.66 fails carol's password until that address is locked out for her
    UserFactory(username="carol", is_staff=True)
    with time_machine.travel(START, tick=False):
        for n in range(5):
            sign_in(url, "carol", f"guess-{n}", address="203.0.113.66")

        # when: carol signs in from her own address
        from_there = sign_in(url, "carol", PASSWORD, address="203.0.113.66")
        from_carols = sign_in(url, "carol", PASSWORD, address="192.0.2.10")

    # then: the guesser's address stays locked; carol is in
    assert from_there.status_code == 429
    assert signed_in(from_carols)


def test_the_lockout_ends_after_the_cool_off() -> None:
    carol_locked_out_at_start()

    assert signed_in(carol_at(15 + 1 / 60))


def test_an_attempt_during_the_lockout_starts_the_wait_again() -> None:
    carol_locked_out_at_start()

    assert carol_at(14).status_code == 429
    assert carol_at(15 + 1 / 60).status_code == 429  # 14 + 15 minutes are not over
    assert signed_in(carol_at(30 + 2 / 60))  # 15 minutes after the last attempt


def test_one_address_guessing_many_user_names_is_locked_out() -> None:
    UserFactory(username="carol")
    with time_machine.travel(START, tick=False):
        for n in range(5):
            sign_in("/accounts/login/", f"someone-{n}", "guess", address="203.0.113.66")

        from_there = sign_in("/accounts/login/", "carol", PASSWORD, address="203.0.113.66")
        from_elsewhere = sign_in("/accounts/login/", "carol", PASSWORD, address="192.0.2.10")

    assert from_there.status_code == 429
    assert signed_in(from_elsewhere)


def test_a_success_before_the_limit_clears_the_count() -> None:
    UserFactory(username="carol")
    with time_machine.travel(START, tick=False):
        for n in range(4):
            sign_in("/accounts/login/", "carol", f"guess-{n}")
        assert signed_in(sign_in("/accounts/login/", "carol", PASSWORD))
        for n in range(4):
            sign_in("/accounts/login/", "carol", f"again-{n}")

        assert signed_in(sign_in("/accounts/login/", "carol", PASSWORD))


def test_failures_and_the_lockout_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    UserFactory(username="carol")
    with caplog.at_level(logging.INFO, logger="axes"), time_machine.travel(START, tick=False):
        for n in range(5):
            sign_in("/accounts/login/", "carol", f"guess-{n}")

    warnings = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    failures = [message for message in warnings if "login failure by" in message]
    lockouts = [message for message in warnings if "Locking out" in message]
    assert len(failures) == 5
    assert len(lockouts) == 1
    assert 'username: "carol"' in lockouts[0]
    assert 'ip_address: "192.0.2.10"' in lockouts[0]
    assert PASSWORD not in " ".join(warnings)


# --- DRF throttles ---------------------------------------------------------------------


@pytest.fixture
def rates(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Low rates for the test (DRF reads the rates once, when the throttle class is defined)."""
    for scope, rate in {"personal_token_create": "3/hour", "reports": "4/minute"}.items():
        monkeypatch.setitem(ScopedRateThrottle.THROTTLE_RATES, scope, rate)
    return ScopedRateThrottle.THROTTLE_RATES


def test_issuing_personal_tokens_is_rate_limited_per_user(rates: Any) -> None:
    client = APIClient()
    client.force_login(UserFactory(username="carol"))
    other = APIClient()
    other.force_login(UserFactory(username="dave"))

    issued = [client.post("/api/v1/tokens/", {"name": f"tool {n}"}, format="json").status_code for n in range(4)]

    assert issued == [201, 201, 201, 429]
    assert client.get("/api/v1/tokens/").status_code == 200  # listing is not limited
    assert len(client.get("/api/v1/tokens/").json()) == 3  # the refused request minted nothing
    assert other.post("/api/v1/tokens/", {"name": "tool"}, format="json").status_code == 201


def test_reports_are_rate_limited_per_user_with_retry_after(rates: Any) -> None:
    user = UserFactory(username="carol")
    _, token = personal_token_create(user=user, name="tool")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    url = "/api/v1/reports/usage/?period=2026-11"

    answers = [client.get(url) for _ in range(5)]

    assert [answer.status_code for answer in answers] == [200, 200, 200, 200, 429]
    assert 0 < int(answers[-1]["Retry-After"]) <= 60
    assert "throttled" in answers[-1].json()["detail"].lower()


def test_a_bad_rate_in_the_environment_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from config.env import env_rate

    monkeypatch.setenv("THROTTLE_REPORTS_RATE", "120 per minute")
    with pytest.raises(ImproperlyConfigured, match="THROTTLE_REPORTS_RATE"):
        env_rate("THROTTLE_REPORTS_RATE", "120/minute")
    monkeypatch.setenv("THROTTLE_REPORTS_RATE", "30/hour")
    assert env_rate("THROTTLE_REPORTS_RATE", "120/minute") == "30/hour"
