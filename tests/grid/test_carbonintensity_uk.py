from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from grid import (
    BadResponse,
    CarbonIntensityUKProvider,
    ProviderUnavailable,
    RateLimited,
    RequestRejected,
    UnsupportedZone,
)
from grid.carbonintensity_uk import region_id
from tests.helpers.grid_provider import FakeProvider, Reply

T0 = datetime(2018, 1, 20, 12, tzinfo=UTC)
NATIONAL = "/intensity/2018-01-20T11:30Z/2018-01-20T16:00Z"


def period(start: str, end: str, forecast: int | None, actual: int | None = None, *, regional: bool = False) -> dict:
    intensity: dict[str, object] = {"forecast": forecast, "index": "moderate"}
    if not regional:
        intensity["actual"] = actual
    entry: dict[str, object] = {"from": start, "to": end, "intensity": intensity}
    if regional:
        entry["generationmix"] = [{"fuel": "gas", "perc": 43.6}, {"fuel": "wind", "perc": 30.1}]
    return entry


def provider(fake: FakeProvider, **extra: object) -> CarbonIntensityUKProvider:
    return CarbonIntensityUKProvider(base_url=fake.base_url, **extra)  # type: ignore[arg-type]


def fetch_national(fake: FakeProvider) -> list:
    return provider(fake).fetch("GB", T0, T0 + timedelta(hours=4))


def test_national_half_hours_become_hourly_means_preferring_actual(fake: FakeProvider) -> None:
    # given: 11:30 (before the window), 12:00 and 12:30 actual, 13:00 forecast only,
    # 13:30 actual, 14:00 alone (14:30 missing), nothing for 15:00
    fake.on(
        NATIONAL,
        Reply(
            body={
                "data": [
                    period("2018-01-20T11:30Z", "2018-01-20T12:00Z", 250, 251),
                    period("2018-01-20T12:00Z", "2018-01-20T12:30Z", 266, 263),
                    period("2018-01-20T12:30Z", "2018-01-20T13:00Z", 266, 265),
                    period("2018-01-20T13:00Z", "2018-01-20T13:30Z", 270, None),
                    period("2018-01-20T13:30Z", "2018-01-20T14:00Z", 271, 268),
                    period("2018-01-20T14:00Z", "2018-01-20T14:30Z", 280, 281),
                ]
            }
        ),
    )
    # when
    hours = fetch_national(fake)
    # then
    assert [(h.hour_start, h.gco2e_per_kwh, h.is_estimated) for h in hours] == [
        (T0, Decimal("264.000"), False),
        (T0 + timedelta(hours=1), Decimal("269.000"), True),
        (T0 + timedelta(hours=2), Decimal("281.000"), True),
    ]
    assert {(h.zone, h.kind, h.source) for h in hours} == {("GB", "average", "carbonintensity.org.uk")}
    # operational (combustion) factors per fuel: direct basis, no lifecycle figure
    assert {(h.basis, h.direct_gco2e_per_kwh == h.gco2e_per_kwh) for h in hours} == {("direct", True)}
    assert [r.path for r in fake.requests] == [NATIONAL]


def test_regional_forecasts_are_flagged_estimated(fake: FakeProvider) -> None:
    path = "/regional/intensity/2018-01-20T11:30Z/2018-01-20T13:00Z/regionid/3"
    fake.on(
        path,
        Reply(
            body={
                "data": {
                    "regionid": 3,
                    "dnoregion": "Electricity North West",
                    "shortname": "North West England",
                    "data": [
                        period("2018-01-20T12:00Z", "2018-01-20T12:30Z", 120, regional=True),
                        period("2018-01-20T12:30Z", "2018-01-20T13:00Z", 125, regional=True),
                    ],
                }
            }
        ),
    )
    (hour,) = provider(fake).fetch("GB-REGION-3", T0, T0 + timedelta(hours=1))
    assert (hour.zone, hour.gco2e_per_kwh, hour.is_estimated) == ("GB-REGION-3", Decimal("122.500"), True)


def test_regional_answer_wrapped_in_a_list_is_accepted(fake: FakeProvider) -> None:
    path = "/regional/intensity/2018-01-20T11:30Z/2018-01-20T13:00Z/regionid/13"
    region = {"regionid": 13, "shortname": "London", "data": [period("2018-01-20T12:00Z", "x", 90, regional=True)]}
    fake.on(path, Reply(body={"data": [region]}))
    hours = provider(fake, zone_map={"LONDON-DC": "GB-REGION-13"}).fetch("LONDON-DC", T0, T0 + timedelta(hours=1))
    assert [(h.zone, h.gco2e_per_kwh) for h in hours] == [("LONDON-DC", Decimal("90.000"))]


def test_zone_names() -> None:
    assert region_id("GB") is None
    assert region_id("gb-region-17") == 17
    for zone in ("GB-REGION-0", "GB-REGION-18", "GB-NIR", "DE"):
        with pytest.raises(UnsupportedZone):
            region_id(zone)


def test_unsupported_zone_makes_no_request(fake: FakeProvider) -> None:
    with pytest.raises(UnsupportedZone):
        provider(fake).fetch("FR", T0, T0 + timedelta(hours=1))
    assert fake.requests == []


def test_long_range_is_chunked_below_the_fourteen_day_limit(fake: FakeProvider) -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for path in ("/intensity/2023-12-31T23:30Z/2024-01-13T23:30Z", "/intensity/2024-01-13T23:30Z/2024-01-20T00:00Z"):
        fake.on(path, Reply(body={"data": []}))
    provider(fake).fetch("GB", start, start + timedelta(days=19))
    assert [r.path for r in fake.requests] == [
        "/intensity/2023-12-31T23:30Z/2024-01-13T23:30Z",
        "/intensity/2024-01-13T23:30Z/2024-01-20T00:00Z",
    ]


def test_bad_request_is_rejected_with_the_api_message(fake: FakeProvider) -> None:
    error = {"error": {"code": "400 Bad Request", "message": "Please enter a valid ISO 8601 date in YYYY-MM-DD format"}}
    fake.on(NATIONAL, Reply(400, error))
    with pytest.raises(RequestRejected, match="valid ISO 8601 date"):
        fetch_national(fake)


def test_rate_limit_and_outage(fake: FakeProvider) -> None:
    fake.on(NATIONAL, Reply(429, {"error": {"code": "429", "message": "slow down"}}, {"Retry-After": "5"}))
    with pytest.raises(RateLimited) as caught:
        fetch_national(fake)
    assert caught.value.retry_after_s == 5.0
    fake.on(NATIONAL, Reply(500, {"error": {"code": "500 Internal Server Error", "message": "oops"}}))
    with pytest.raises(ProviderUnavailable, match="oops"):
        fetch_national(fake)


@pytest.mark.parametrize(
    "body",
    ["not json at all", {"data": {"regionid": 1}}, {"data": [{"from": "2018-01-20T12:00Z"}]}],
    ids=["not-json", "object-instead-of-list", "no-intensity"],
)
def test_unparseable_answers_are_bad_responses(fake: FakeProvider, body: object) -> None:
    fake.on(NATIONAL, Reply(body=body))
    with pytest.raises(BadResponse):
        fetch_national(fake)


def test_national_forecast_48h_ahead_hourly_and_flagged_forecast(fake: FakeProvider) -> None:
    # given: the fw48h answer from 12:00 (actual is null ahead)
    fake.on("/intensity/2018-01-20T12:00Z/fw48h", Reply(body={"data": [
        period("2018-01-20T12:00Z", "2018-01-20T12:30Z", 200),
        period("2018-01-20T12:30Z", "2018-01-20T13:00Z", 210),
        period("2018-01-20T13:00Z", "2018-01-20T13:30Z", 100),
    ]}))  # fmt: skip
    # when
    hours = provider(fake).forecast("GB", now=T0 + timedelta(minutes=20))
    # then
    assert [(h.hour_start, h.gco2e_per_kwh, h.is_forecast, h.is_estimated) for h in hours] == [
        (T0, Decimal("205.000"), True, True),
        (T0 + timedelta(hours=1), Decimal("100.000"), True, True),
    ]
    assert {h.kind for h in hours} == {"average"}


def test_regional_forecast_reads_the_region_object(fake: FakeProvider) -> None:
    fake.on("/regional/intensity/2018-01-20T12:00Z/fw48h/regionid/13", Reply(body={"data": [{
        "regionid": 13, "shortname": "London",
        "data": [period("2018-01-20T12:00Z", "2018-01-20T12:30Z", 150, regional=True),
                 period("2018-01-20T12:30Z", "2018-01-20T13:00Z", 170, regional=True)],
    }]}))  # fmt: skip
    hours = provider(fake).forecast("GB-REGION-13", now=T0)
    assert [(h.zone, h.gco2e_per_kwh, h.is_forecast) for h in hours] == [("GB-REGION-13", Decimal("160.000"), True)]
