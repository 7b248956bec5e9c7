"""Every stored intensity names its basis: direct (combustion) for Scope 2, lifecycle for SCI and per-token."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from grid import CsvError, ElectricityMapsProvider, annual_intensity, parse_intensity_csv
from grid.annual import LIFECYCLE_ONLY_NOTE, AnnualProvider
from grid.models import GridIntensity
from grid.stored_intensity import intensity_for_hours, intensity_store
from tests.helpers.grid_provider import FakeProvider, Reply, Seen

NOW = datetime(2024, 5, 2, 0, 30, tzinfo=UTC)
PAST_RANGE = "/v3/carbon-intensity/past-range"
HISTORY = "/v3/carbon-intensity/history"
H10 = datetime(2024, 4, 1, 10, tzinfo=UTC)
H11 = datetime(2024, 4, 1, 11, tzinfo=UTC)
H12 = datetime(2024, 4, 1, 12, tzinfo=UTC)


def em_item(at: str, value: int | None, basis: str, *, estimated: bool = False) -> dict[str, object]:
    return {"zone": "DE", "carbonIntensity": value, "datetime": at, "emissionFactorType": basis,
            "isEstimated": estimated}  # fmt: skip


def by_basis(lifecycle: list[dict[str, object]], direct: list[dict[str, object]], key: str = "data") -> Any:
    def respond(seen: Seen) -> Reply:
        return Reply(body={"zone": "DE", key: lifecycle if seen.query["emissionFactorType"] == "lifecycle" else direct})

    return respond


def test_electricity_maps_asks_both_bases_and_keeps_direct_beside_lifecycle(fake: FakeProvider) -> None:
    # given: 10:00 both bases, 11:00 direct estimated, 12:00 only in the direct answer
    fake.on_call(PAST_RANGE, by_basis(
        [em_item("2024-04-01T10:00:00Z", 35, "lifecycle"), em_item("2024-04-01T11:00:00Z", 300, "lifecycle")],
        [em_item("2024-04-01T10:00:00Z", 10, "direct"), em_item("2024-04-01T11:00:00Z", 250, "direct", estimated=True),
         em_item("2024-04-01T12:00:00Z", 200, "direct")],
    ))  # fmt: skip
    provider = ElectricityMapsProvider(api_token="t", base_url=fake.base_url, now=lambda: NOW)
    # when
    hours = provider.fetch("DE", H10, datetime(2024, 4, 1, 13, tzinfo=UTC))
    # then: one request per basis, the same range
    assert sorted(seen.query["emissionFactorType"] for seen in fake.requests) == ["direct", "lifecycle"]
    assert {(seen.query["start"], seen.query["end"]) for seen in fake.requests} == {
        ("2024-04-01T10:00:00Z", "2024-04-01T13:00:00Z")
    }
    assert [(h.hour_start, h.gco2e_per_kwh, h.basis, h.direct_gco2e_per_kwh, h.is_estimated) for h in hours] == [
        (H10, Decimal("35.000"), "lifecycle", Decimal("10.000"), False),
        (H11, Decimal("300.000"), "lifecycle", Decimal("250.000"), True),
        (H12, Decimal("200.000"), "direct", Decimal("200.000"), False),
    ]


def test_electricity_maps_history_asks_both_bases_too(fake: FakeProvider) -> None:
    fake.on_call(HISTORY, by_basis([em_item("2024-05-01T23:00:00Z", 35, "lifecycle")],
                                   [em_item("2024-05-01T23:00:00Z", 10, "direct")], key="history"))  # fmt: skip
    provider = ElectricityMapsProvider(api_token="t", base_url=fake.base_url, now=lambda: NOW)
    (hour,) = provider.fetch("DE", datetime(2024, 5, 1, 23, tzinfo=UTC), datetime(2024, 5, 2, tzinfo=UTC))
    assert sorted(seen.query["emissionFactorType"] for seen in fake.requests) == ["direct", "lifecycle"]
    assert (hour.gco2e_per_kwh, hour.basis, hour.direct_gco2e_per_kwh) == (Decimal(35), "lifecycle", Decimal(10))


def test_electricity_maps_configured_for_one_basis_asks_once_and_stores_that_basis(fake: FakeProvider) -> None:
    fake.on(PAST_RANGE, Reply(body={"zone": "DE", "data": [em_item("2024-04-01T10:00:00Z", 10, "direct")]}))
    provider = ElectricityMapsProvider(api_token="t", base_url=fake.base_url, now=lambda: NOW,
                                       emission_factor_type="direct")  # fmt: skip
    (hour,) = provider.fetch("DE", H10, H11)
    assert [seen.query["emissionFactorType"] for seen in fake.requests] == ["direct"]
    assert (hour.basis, hour.direct_gco2e_per_kwh) == ("direct", Decimal(10))


@pytest.mark.django_db
def test_both_bases_are_stored_on_one_row_and_resolved_together() -> None:
    from grid import HourlyIntensity

    intensity_store(values=[HourlyIntensity("DE", H10, Decimal(35), "average", "electricitymaps",
                                            direct_gco2e_per_kwh=Decimal(10))])  # fmt: skip
    row = GridIntensity.objects.get()
    assert (row.gco2e_per_kwh, row.basis, row.direct_gco2e_per_kwh) == (Decimal(35), "lifecycle", Decimal(10))
    resolved = intensity_for_hours(zone="DE", hours=[H10])[H10]
    assert (resolved.gco2e_per_kwh, resolved.basis, resolved.direct_gco2e_per_kwh) == (35, "lifecycle", 10)


def test_csv_without_the_basis_columns_is_lifecycle_without_a_direct_figure() -> None:
    (hour,) = parse_intensity_csv("zone,hour_start,gco2e_per_kwh\nDE,2024-04-01T10:00:00Z,35\n", source_name="s")
    assert (hour.basis, hour.direct_gco2e_per_kwh) == ("lifecycle", None)


def test_csv_with_a_direct_column_and_a_direct_basis_row() -> None:
    text = (
        "zone,hour_start,gco2e_per_kwh,basis,direct_gco2e_per_kwh\n"
        "DE,2024-04-01T10:00:00Z,35,lifecycle,10\n"
        "DE,2024-04-01T11:00:00Z,12,direct,\n"
        "DE,2024-04-01T12:00:00Z,40,,\n"
    )
    hours = parse_intensity_csv(text, source_name="s")
    assert [(h.gco2e_per_kwh, h.basis, h.direct_gco2e_per_kwh) for h in hours] == [
        (Decimal(35), "lifecycle", Decimal(10)),
        (Decimal(12), "direct", Decimal(12)),
        (Decimal(40), "lifecycle", None),
    ]


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("35,combustion,10", "line 2: basis 'combustion' must be 'lifecycle' or 'direct'"),
        ("35,lifecycle,40", "line 2: direct_gco2e_per_kwh '40' is outside 0..gco2e_per_kwh"),
        ("35,lifecycle,-1", "line 2: direct_gco2e_per_kwh '-1' is outside"),
        ("35,lifecycle,ten", "line 2: direct_gco2e_per_kwh 'ten' is not a number"),
        ("12,direct,10", "line 2: direct_gco2e_per_kwh '10' differs from gco2e_per_kwh on a 'direct' row"),
    ],
)
def test_csv_bad_basis_values_are_refused_with_their_line(row: str, expected: str) -> None:
    with pytest.raises(CsvError, match=expected):
        parse_intensity_csv(f"zone,hour_start,gco2e_per_kwh,basis,direct_gco2e_per_kwh\nDE,2024-04-01T10:00:00Z,{row}\n",
                            source_name="s")  # fmt: skip


@pytest.mark.django_db
def test_an_upload_with_a_bad_basis_answers_400_and_stores_nothing(user_a: Any, org_a: Any) -> None:
    client = APIClient()
    client.force_login(user_a)
    url = reverse("grid-intensity-csv") + "?organization=org-a&source_name=acme"
    body = (
        "zone,hour_start,gco2e_per_kwh,basis\nDE,2024-04-01T10:00:00Z,35,lifecycle\nDE,2024-04-01T11:00:00Z,35,scope2\n"
    )
    response = client.generic("POST", url, body.encode(), content_type="text/csv")
    assert response.status_code == 400, response.content
    assert "line 3: basis 'scope2' must be 'lifecycle' or 'direct'" in response.content.decode()
    assert not GridIntensity.objects.exists()


@pytest.mark.django_db
def test_an_upload_with_both_bases_stores_them_on_one_row(user_a: Any, org_a: Any) -> None:
    client = APIClient()
    client.force_login(user_a)
    url = reverse("grid-intensity-csv") + "?organization=org-a&source_name=acme"
    body = "zone,hour_start,gco2e_per_kwh,direct_gco2e_per_kwh\nDE,2024-04-01T10:00:00Z,35,10\n"
    response = client.generic("POST", url, body.encode(), content_type="text/csv")
    assert response.status_code == 201, response.content
    row = GridIntensity.objects.get()
    assert (row.gco2e_per_kwh, row.basis, row.direct_gco2e_per_kwh) == (Decimal(35), "lifecycle", Decimal(10))


def test_annual_fallbacks_are_lifecycle_with_the_direct_figure_of_the_country_mix_beside() -> None:
    de = annual_intensity("DE", 2024)
    assert de is not None and de.basis == "lifecycle" and de.direct_gco2e_per_kwh == Decimal("272.338")
    ember = annual_intensity("BR", 2024)  # no Electricity Maps yearly zone BR: Ember's country figure
    assert ember is not None and ember.source.startswith(("ember-", "electricitymaps-")) and ember.basis == "lifecycle"
    (hour,) = AnnualProvider().fetch("DE", H10, H11)
    assert (hour.basis, hour.gco2e_per_kwh, hour.direct_gco2e_per_kwh) == ("lifecycle", 341, Decimal("272.338"))
    # Réunion (RE) has no generation mix in the shipped file: its yearly figure stays lifecycle alone
    (reunion,) = AnnualProvider().fetch("RE", H10, H11)
    assert (reunion.basis, reunion.direct_gco2e_per_kwh) == ("lifecycle", None)
    assert (
        LIFECYCLE_ONLY_NOTE == "lifecycle basis: includes upstream (Scope 3 Cat 3) emissions; direct factor unavailable"
    )


@pytest.mark.django_db
def test_an_hour_resolved_from_the_annual_fallback_carries_the_direct_figure_where_the_country_has_a_mix() -> None:
    resolved = intensity_for_hours(zone="DE", hours=[H10])[H10]
    assert (
        resolved.is_fallback and resolved.basis == "lifecycle" and resolved.direct_gco2e_per_kwh == Decimal("272.338")
    )
    reunion = intensity_for_hours(zone="RE", hours=[H10])[H10]
    assert reunion.is_fallback and reunion.basis == "lifecycle" and reunion.direct_gco2e_per_kwh is None


@pytest.mark.django_db
def test_a_fetch_stores_both_bases_of_each_hour_on_one_row(fake: FakeProvider) -> None:
    from grid import ConfiguredProvider
    from grid.stored_intensity import intensity_fetch

    fake.on_call(PAST_RANGE, by_basis([em_item("2024-04-01T10:00:00Z", 35, "lifecycle")],
                                      [em_item("2024-04-01T10:00:00Z", 10, "direct")]))  # fmt: skip
    provider = ElectricityMapsProvider(api_token="t", base_url=fake.base_url, now=lambda: NOW)
    stored = intensity_fetch(configured=ConfiguredProvider("electricitymaps", provider, {"DE": "DE"}), zone="DE",
                             start=H10, end=H11, now=NOW)  # fmt: skip
    assert stored == 1
    row = GridIntensity.objects.get()
    assert (row.source, row.gco2e_per_kwh, row.basis, row.direct_gco2e_per_kwh) == (
        "electricitymaps", Decimal(35), "lifecycle", Decimal(10),
    )  # fmt: skip
