from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from grid import AuthError, BadResponse, ElectricityMapsProvider, ProviderUnavailable, RateLimited
from grid.errors import RequestRejected
from tests.helpers.grid_provider import FakeProvider, Reply

NOW = datetime(2024, 5, 2, 0, 30, tzinfo=UTC)
HISTORY = "/v3/carbon-intensity/history"
PAST_RANGE = "/v3/carbon-intensity/past-range"


def item(zone: str, at: str, value: int | None, *, estimated: bool = False) -> dict[str, object]:
    """One hour as Electricity Maps v3 answers it."""
    return {
        "zone": zone,
        "carbonIntensity": value,
        "datetime": at,
        "updatedAt": "2024-05-01T12:01:02.345Z",
        "createdAt": "2024-04-28T12:00:00.000Z",
        "emissionFactorType": "lifecycle",
        "isEstimated": estimated,
        "estimationMethod": "TIME_SLICER_AVERAGE" if estimated else None,
    }


def provider(fake: FakeProvider, **extra: object) -> ElectricityMapsProvider:
    """One basis per request unless a test asks for both (the default: see the tests at the end)."""
    extra.setdefault("emission_factor_type", "lifecycle")
    return ElectricityMapsProvider(api_token="em-token", base_url=fake.base_url, now=lambda: NOW, **extra)  # type: ignore[arg-type]


def test_past_range_hours_with_values_flags_and_a_missing_hour(fake: FakeProvider) -> None:
    # given: 10:00 measured, 11:00 estimated, 12:00 without a value, 13:00 absent
    fake.on(
        PAST_RANGE,
        Reply(
            body={
                "zone": "DE",
                "data": [
                    item("DE", "2024-04-01T10:00:00.000Z", 302),
                    item("DE", "2024-04-01T11:00:00.000Z", 298, estimated=True),
                    item("DE", "2024-04-01T12:00:00.000Z", None),
                ],
            }
        ),
    )
    # when
    hours = provider(fake).fetch("DE", datetime(2024, 4, 1, 10, 15, tzinfo=UTC), datetime(2024, 4, 1, 14, tzinfo=UTC))
    # then
    assert [(h.hour_start, h.gco2e_per_kwh, h.is_estimated) for h in hours] == [
        (datetime(2024, 4, 1, 10, tzinfo=UTC), Decimal("302.000"), False),
        (datetime(2024, 4, 1, 11, tzinfo=UTC), Decimal("298.000"), True),
    ]
    assert {(h.zone, h.kind, h.source, h.is_forecast) for h in hours} == {("DE", "average", "electricitymaps", False)}
    (request,) = fake.requests
    assert request.headers["auth-token"] == "em-token"
    assert request.query == {
        "zone": "DE",
        "emissionFactorType": "lifecycle",
        "start": "2024-04-01T10:00:00Z",
        "end": "2024-04-01T14:00:00Z",
    }


def test_long_range_is_chunked_in_ten_day_requests(fake: FakeProvider) -> None:
    fake.on(PAST_RANGE, Reply(body={"zone": "DE", "data": []}))
    provider(fake).fetch("DE", datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 26, tzinfo=UTC))
    assert [(r.query["start"], r.query["end"]) for r in fake.requests] == [
        ("2024-01-01T00:00:00Z", "2024-01-11T00:00:00Z"),
        ("2024-01-11T00:00:00Z", "2024-01-21T00:00:00Z"),
        ("2024-01-21T00:00:00Z", "2024-01-26T00:00:00Z"),
    ]


def test_recent_hours_use_history_and_are_filtered_to_the_window(fake: FakeProvider) -> None:
    fake.on(
        HISTORY,
        Reply(
            body={
                "zone": "US-CAL-CISO",
                "history": [
                    item("US-CAL-CISO", "2024-05-01T20:00:00.000Z", 210),
                    item("US-CAL-CISO", "2024-05-01T21:00:00.000Z", 220),
                    item("US-CAL-CISO", "2024-05-01T22:00:00.000Z", 230),
                ],
            }
        ),
    )
    start = NOW - timedelta(hours=3, minutes=30)  # 21:00
    hours = provider(fake).fetch("US-CAL-CISO", start, datetime(2024, 5, 1, 22, tzinfo=UTC))
    assert [(h.hour_start.hour, h.gco2e_per_kwh) for h in hours] == [(21, Decimal("220.000"))]
    assert [r.path for r in fake.requests] == [HISTORY]


def test_zone_map_sends_the_provider_zone_and_returns_ours(fake: FakeProvider) -> None:
    fake.on(PAST_RANGE, Reply(body={"zone": "SE-SE3", "data": [item("SE-SE3", "2024-04-01T00:00:00.000Z", 25)]}))
    hours = provider(fake, zone_map={"stockholm-dc": "SE-SE3"}).fetch(
        "stockholm-dc", datetime(2024, 4, 1, tzinfo=UTC), datetime(2024, 4, 1, 1, tzinfo=UTC)
    )
    assert fake.requests[0].query["zone"] == "SE-SE3"
    assert [h.zone for h in hours] == ["stockholm-dc"]


def fetch_a_day(fake: FakeProvider) -> None:
    provider(fake).fetch("DE", datetime(2024, 4, 1, tzinfo=UTC), datetime(2024, 4, 2, tzinfo=UTC))


def test_invalid_token_is_an_auth_error(fake: FakeProvider) -> None:
    fake.on(PAST_RANGE, Reply(401, {"status": "error", "message": "Invalid auth-token"}))
    with pytest.raises(AuthError, match="Invalid auth-token") as caught:
        fetch_a_day(fake)
    assert caught.value.status == 401


def test_zone_outside_the_plan_is_an_auth_error(fake: FakeProvider) -> None:
    fake.on(PAST_RANGE, Reply(403, {"status": "error", "message": "Unauthorized zone DE"}))
    with pytest.raises(AuthError):
        fetch_a_day(fake)


def test_rate_limit_carries_retry_after(fake: FakeProvider) -> None:
    fake.on(PAST_RANGE, Reply(429, {"status": "error", "message": "Too many requests"}, {"Retry-After": "17"}))
    with pytest.raises(RateLimited) as caught:
        fetch_a_day(fake)
    assert caught.value.retry_after_s == 17.0


def test_server_error_is_provider_unavailable(fake: FakeProvider) -> None:
    fake.on(PAST_RANGE, Reply(503, "<html>upstream down</html>"))
    with pytest.raises(ProviderUnavailable, match="upstream down"):
        fetch_a_day(fake)


def test_unknown_zone_is_a_rejected_request(fake: FakeProvider) -> None:
    fake.on(PAST_RANGE, Reply(400, {"status": "error", "message": "Zone 'XX' does not exist."}))
    with pytest.raises(RequestRejected, match="does not exist"):
        fetch_a_day(fake)


@pytest.mark.parametrize(
    "body",
    [
        '{"zone": "DE", "data": [',
        {"zone": "DE"},
        {"zone": "DE", "data": [{"datetime": "yesterday", "carbonIntensity": 5}]},
        {"zone": "DE", "data": [{"datetime": "2024-04-01T00:00:00Z", "carbonIntensity": "high"}]},
        {"status": "error", "message": "internal"},
    ],
    ids=["truncated-json", "no-data-key", "bad-datetime", "non-numeric-value", "error-in-200"],
)
def test_unparseable_answers_are_bad_responses(fake: FakeProvider, body: object) -> None:
    fake.on(PAST_RANGE, Reply(body=body))
    with pytest.raises(BadResponse):
        fetch_a_day(fake)


def test_rejects_missing_token_and_bad_base_url() -> None:
    with pytest.raises(ValueError, match="api_token"):
        ElectricityMapsProvider(api_token="")
    with pytest.raises(ValueError, match="base URL"):
        ElectricityMapsProvider(api_token="t", base_url="file:///etc/passwd")


def test_forecast_asks_48_hours_and_flags_every_hour_forecast(fake: FakeProvider) -> None:
    # given: the v3 forecast answer
    fake.on("/v3/carbon-intensity/forecast", Reply(body={"zone": "DE", "forecast": [
        {"carbonIntensity": 311, "datetime": "2024-05-02T01:00:00.000Z"},
        {"carbonIntensity": 287, "datetime": "2024-05-02T02:00:00.000Z"},
    ], "updatedAt": "2024-05-02T00:12:00.000Z"}))  # fmt: skip
    # when
    hours = provider(fake).forecast("DE")
    # then
    assert [(h.hour_start, h.gco2e_per_kwh, h.is_forecast, h.is_estimated, h.kind) for h in hours] == [
        (datetime(2024, 5, 2, 1, tzinfo=UTC), Decimal("311.000"), True, True, "average"),
        (datetime(2024, 5, 2, 2, tzinfo=UTC), Decimal("287.000"), True, True, "average"),
    ]
    (request,) = fake.requests
    assert request.query == {"zone": "DE", "emissionFactorType": "lifecycle", "horizonHours": "48"}
    assert request.headers["auth-token"] == "em-token"
