from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from grid import (
    AuthError,
    BadResponse,
    ProviderUnavailable,
    RateLimited,
    WattTimeProvider,
    gco2_per_kwh_from_lbs_per_mwh,
)
from tests.helpers.grid_provider import FakeProvider, Reply

HISTORICAL = "/v3/historical"
T0 = datetime(2022, 7, 15, tzinfo=UTC)


def moer(points: list[tuple[datetime, float]], *, units: str = "lbs_co2_per_mwh", signal: str = "co2_moer") -> dict:
    """A /v3/historical or /v3/forecast answer as WattTime v3 shapes it."""
    return {
        "data": [{"point_time": at.isoformat(), "value": value} for at, value in points],
        "meta": {
            "data_point_period_seconds": 300,
            "region": "CAISO_NORTH",
            "signal_type": signal,
            "units": units,
            "warnings": [],
            "model": {"date": "2023-03-01", "type": "binned_regression"},
        },
    }


def five_minutes(hour: datetime, values: list[float]) -> list[tuple[datetime, float]]:
    return [(hour + timedelta(minutes=5 * i), value) for i, value in enumerate(values)]


def provider(fake: FakeProvider, **extra: object) -> WattTimeProvider:
    return WattTimeProvider(username="alice", password="s3cret", base_url=fake.base_url, **extra)  # type: ignore[arg-type]


def logged_in(fake: FakeProvider, *tokens: str) -> None:
    fake.on("/login", *(Reply(body={"token": token}) for token in tokens or ("token-1",)))


def fetch_two_hours(wt: WattTimeProvider) -> list:
    return wt.fetch("CAISO_NORTH", T0, T0 + timedelta(hours=2))


def test_lbs_per_mwh_converts_exactly() -> None:
    assert gco2_per_kwh_from_lbs_per_mwh(Decimal("870.0")) == Decimal("394.62536190")
    assert gco2_per_kwh_from_lbs_per_mwh(Decimal(1000)) == Decimal("453.59237")


def test_five_minute_moer_becomes_hourly_marginal_grams(fake: FakeProvider) -> None:
    # given: hour 0 complete at 870 lbs/MWh, hour 1 half 1000 half 1100, hour 2 half-covered, hour 3 absent
    logged_in(fake)
    points = five_minutes(T0, [870.0] * 12)
    points += five_minutes(T0 + timedelta(hours=1), [1000.0] * 6 + [1100.0] * 6)
    points += five_minutes(T0 + timedelta(hours=2), [900.0] * 6)
    fake.on(HISTORICAL, Reply(body=moer(points)))
    # when
    hours = provider(fake).fetch("CAISO_NORTH", T0, T0 + timedelta(hours=4))
    # then: 870 x 0.45359237 = 394.6253619; 1050 x 0.45359237 = 476.2719885; 900 x 0.45359237 = 408.233133
    assert [(h.hour_start, h.gco2e_per_kwh, h.is_estimated) for h in hours] == [
        (T0, Decimal("394.625"), False),
        (T0 + timedelta(hours=1), Decimal("476.272"), False),
        (T0 + timedelta(hours=2), Decimal("408.233"), True),
    ]
    assert {(h.kind, h.source, h.zone) for h in hours} == {("marginal", "watttime", "CAISO_NORTH")}
    assert {h.basis for h in hours} == {"direct"}  # CO2 at the generators; marginal: advice only, never Scope 2


def test_login_uses_basic_auth_then_bearer_token(fake: FakeProvider) -> None:
    logged_in(fake, "tok-abc")
    fake.on(HISTORICAL, Reply(body=moer([])))
    fetch_two_hours(provider(fake))
    (login,) = fake.seen("/login")
    assert login.headers["authorization"] == "Basic " + base64.b64encode(b"alice:s3cret").decode()
    (data,) = fake.seen(HISTORICAL)
    assert data.headers["authorization"] == "Bearer tok-abc"
    assert data.query == {
        "region": "CAISO_NORTH",
        "signal_type": "co2_moer",
        "start": "2022-07-15T00:00:00Z",
        "end": "2022-07-15T02:00:00Z",
    }


def test_token_is_reused_across_fetches(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on(HISTORICAL, Reply(body=moer([])))
    wt = provider(fake)
    fetch_two_hours(wt)
    fetch_two_hours(wt)
    assert len(fake.seen("/login")) == 1


def test_expired_token_logs_in_again_once(fake: FakeProvider) -> None:
    # given: the first token has expired by the time data is asked for
    logged_in(fake, "old", "new")
    fake.on_call(
        HISTORICAL,
        lambda seen: (
            Reply(body=moer(five_minutes(T0, [870.0] * 12)))
            if seen.headers["authorization"] == "Bearer new"
            else Reply(401, {"error": "Token expired"})
        ),
    )
    # when
    hours = fetch_two_hours(provider(fake))
    # then
    assert [h.gco2e_per_kwh for h in hours] == [Decimal("394.625")]
    assert len(fake.seen("/login")) == 2
    assert [r.headers["authorization"] for r in fake.seen(HISTORICAL)] == ["Bearer old", "Bearer new"]


def test_still_unauthorized_after_relogin_is_an_auth_error(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on(HISTORICAL, Reply(401, {"error": "Invalid token"}))
    with pytest.raises(AuthError, match="Invalid token"):
        fetch_two_hours(provider(fake))
    assert len(fake.seen("/login")) == 2


def test_forbidden_region_does_not_log_in_again(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on(HISTORICAL, Reply(403, {"error": "User does not have access to region MISO_INDIANAPOLIS"}))
    with pytest.raises(AuthError, match="access to region"):
        fetch_two_hours(provider(fake))
    assert len(fake.seen("/login")) == 1


def test_bad_credentials_fail_at_login(fake: FakeProvider) -> None:
    fake.on("/login", Reply(401, {"error": "Unauthorized"}))
    with pytest.raises(AuthError):
        fetch_two_hours(provider(fake))
    assert fake.seen(HISTORICAL) == []


def test_rate_limit_carries_retry_after(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on(HISTORICAL, Reply(429, {"error": "Rate limit exceeded"}, {"Retry-After": "60"}))
    with pytest.raises(RateLimited) as caught:
        fetch_two_hours(provider(fake))
    assert caught.value.retry_after_s == 60.0


def test_server_error_is_provider_unavailable(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on(HISTORICAL, Reply(502, "Bad Gateway"))
    with pytest.raises(ProviderUnavailable):
        fetch_two_hours(provider(fake))


@pytest.mark.parametrize(
    "body",
    [
        '{"data": [{"point_time": ',
        moer(five_minutes(T0, [1.0]), units="g_co2_per_kwh"),
        {"data": [{"point_time": "2022-07-15T00:00:00", "value": 1.0}], "meta": {"units": "lbs_co2_per_mwh"}},
        {"meta": {"units": "lbs_co2_per_mwh"}},
    ],
    ids=["truncated-json", "unexpected-units", "naive-time", "no-data"],
)
def test_unparseable_answers_are_bad_responses(fake: FakeProvider, body: object) -> None:
    logged_in(fake)
    fake.on(HISTORICAL, Reply(body=body))
    with pytest.raises(BadResponse):
        fetch_two_hours(provider(fake))


def test_average_signal_is_tagged_average(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on(HISTORICAL, Reply(body=moer(five_minutes(T0, [1000.0] * 12), signal="co2_aoer")))
    (hour,) = provider(fake, signal_type="co2_aoer").fetch("CAISO_NORTH", T0, T0 + timedelta(hours=1))
    assert (hour.kind, hour.gco2e_per_kwh) == ("average", Decimal("453.592"))
    assert fake.requests[-1].query["signal_type"] == "co2_aoer"


def test_long_range_is_chunked_in_thirty_day_requests(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on(HISTORICAL, Reply(body=moer([])))
    provider(fake).fetch("CAISO_NORTH", T0, T0 + timedelta(days=45))
    assert [r.query["end"] for r in fake.seen(HISTORICAL)] == ["2022-08-14T00:00:00Z", "2022-08-29T00:00:00Z"]


def test_inclusive_end_point_is_not_counted(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on(HISTORICAL, Reply(body=moer([*five_minutes(T0, [870.0] * 12), (T0 + timedelta(hours=1), 5000.0)])))
    hours = provider(fake).fetch("CAISO_NORTH", T0, T0 + timedelta(hours=1))
    assert [h.gco2e_per_kwh for h in hours] == [Decimal("394.625")]


def test_forecast_hours_are_flagged_forecast(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on(
        "/v3/forecast",
        Reply(body=moer(five_minutes(T0, [870.0] * 12) + five_minutes(T0 + timedelta(hours=1), [1000.0] * 12))),
    )
    hours = provider(fake).forecast("CAISO_NORTH")
    assert [(h.gco2e_per_kwh, h.is_forecast, h.is_estimated) for h in hours] == [
        (Decimal("394.625"), True, True),
        (Decimal("453.592"), True, True),
    ]


def test_signal_index_is_a_percentile(fake: FakeProvider) -> None:
    logged_in(fake)
    fake.on("/v3/signal-index", Reply(body=moer([(T0, 45.0)], units="percentile")))
    index = provider(fake).signal_index("CAISO_NORTH")
    assert (index.point_time, index.percentile) == (T0, Decimal("45.0"))


def test_rejects_missing_credentials_and_unknown_signal() -> None:
    with pytest.raises(ValueError, match="username"):
        WattTimeProvider(username="", password="x")
    with pytest.raises(ValueError, match="signal_type"):
        WattTimeProvider(username="u", password="p", signal_type="health_damage")
