"""Inputs changed in the Django admin: audited like the API, re-opening the same hours, refused when locked.

h100-a and h100-b have 48 stored lines each (Jan 1-2, 2026) at site fra-1 (PUE 1.20).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from accounting.models import GpuAsset, LedgerPending, LedgerSettings, NodePrice, SitePue, SiteTariff
from fleets.models import Node, Organization, Site
from governance.models import AuditEntry, LockedPeriod
from scope2.models import ResidualMixFactor
from tests.helpers.inputs import JAN_1, JAN_2, JAN_3

pytestmark = pytest.mark.django_db


@pytest.fixture
def january_1_locked(org_a: Organization) -> LockedPeriod:
    return LockedPeriod.objects.create(
        organization=org_a, start=JAN_1, end=JAN_2, reason="Jan 1 closed", locked_at=JAN_3
    )


def split(name: str, instant: datetime | None) -> dict[str, str]:
    """The admin's split date/time widget."""
    if instant is None:
        return {f"{name}_0": "", f"{name}_1": ""}
    return {f"{name}_0": instant.strftime("%Y-%m-%d"), f"{name}_1": instant.strftime("%H:%M:%S")}


def price_form(node: Node, rate: str, valid_from: datetime) -> dict[str, str]:
    return {
        "fleet": str(node.fleet_id), "node": str(node.pk), "kind": "rented", "rate_per_h": rate, "rate_per": "gpu",
        "capex": "", "lifetime_years": "", "opex_per_h": "0", **split("valid_from", valid_from),
        **split("valid_to", None), **split("in_service_at", None), "salvage_value": "0", "depreciation_method": "month",
        "life_changes": "[]",
    }  # fmt: skip


def shown(response: Any) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_a_price_added_and_changed_in_the_admin_is_audited_and_reopens_its_hours(staff: Client, node_a: Node) -> None:
    added = staff.post(reverse("admin:accounting_nodeprice_add"), price_form(node_a, "2.50", JAN_2))
    assert added.status_code == 302, added.content
    price = NodePrice.objects.get()
    assert "24 ledger hours re-opened for recomputation" in shown(added)
    changed = staff.post(
        reverse("admin:accounting_nodeprice_change", args=[price.pk]), price_form(node_a, "3.00", JAN_2)
    )
    assert changed.status_code == 302
    entries = list(
        AuditEntry.objects.order_by("id").values_list("username", "action", "subject", "ledger_hours_reopened")
    )
    assert entries == [("ada", "create", "node_price", 24), ("ada", "update", "node_price", 24)]
    update = AuditEntry.objects.order_by("id").last()
    assert (update.before["rate_per_h"], update.after["rate_per_h"]) == ("2.500000", "3.000000")
    assert LedgerPending.objects.filter(node=node_a).count() == 24


def test_a_price_change_in_a_locked_period_is_refused_in_the_admin_and_changes_nothing(
    staff: Client, node_a: Node, january_1_locked: LockedPeriod
) -> None:
    url = reverse("admin:accounting_nodeprice_add")
    response = staff.post(url, price_form(node_a, "2.50", JAN_1))
    assert (response.status_code, response["Location"]) == (302, url)
    assert any("is locked (Jan 1 closed)" in message for message in shown(response))
    assert not NodePrice.objects.exists()
    assert not AuditEntry.objects.exists()
    assert not LedgerPending.objects.exists()


def test_a_tariff_deleted_in_the_admin_is_audited_and_a_locked_one_stays(
    staff: Client, site_a: Site, node_a: Node, january_1_locked: LockedPeriod
) -> None:
    later = SiteTariff.objects.create(site=site_a, flat_price_per_kwh="0.2", valid_from=JAN_2)
    locked = SiteTariff.objects.create(site=site_a, flat_price_per_kwh="0.1", valid_from=JAN_1, valid_to=JAN_2)
    assert (
        staff.post(reverse("admin:accounting_sitetariff_delete", args=[later.pk]), {"post": "yes"}).status_code == 302
    )
    refused = staff.post(reverse("admin:accounting_sitetariff_delete", args=[locked.pk]), {"post": "yes"})
    assert any("is locked" in message for message in shown(refused))
    assert list(SiteTariff.objects.values_list("pk", flat=True)) == [locked.pk]
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.subject, entry.after, entry.ledger_hours_reopened) == (
        "delete",
        "site_tariff",
        None,
        24,
    )


def test_the_sites_pue_changed_in_the_admin_is_audited_and_refused_when_lines_are_locked(
    staff: Client, site_a: Site, node_a: Node, org_a: Organization
) -> None:
    form = {
        "organization": str(org_a.pk), "name": "fra-1", "grid_zone": "", "country": "DE", "pue": "1.40",
        "currency": "EUR", "time_zone": "UTC",
    }  # fmt: skip
    url = reverse("admin:fleets_site_change", args=[site_a.pk])
    assert staff.post(url, form).status_code == 302
    entry = AuditEntry.objects.get()
    assert (entry.subject, entry.before, entry.after["pue"], entry.ledger_hours_reopened) == (
        "site_pue", {"pue": "1.20", "id": site_a.pk}, "1.40", 48,
    )  # fmt: skip
    LockedPeriod.objects.create(organization=org_a, start=JAN_1, end=JAN_2, locked_at=JAN_3)
    refused = staff.post(url, form | {"pue": "1.10", "name": "fra-renamed"})
    assert any("is locked" in message for message in shown(refused))
    site_a.refresh_from_db()
    assert (site_a.pue, site_a.name) == (Decimal("1.40"), "fra-1")  # the whole form rolled back
    assert AuditEntry.objects.count() == 1


def test_a_pue_period_and_a_gpu_asset_in_the_admin_are_audited(staff: Client, site_a: Site, node_a: Node) -> None:
    form = {"site": str(site_a.pk), "pue": "1.35", **split("valid_from", JAN_2), **split("valid_to", None)}
    assert staff.post(reverse("admin:accounting_sitepue_add"), form).status_code == 302
    assert SitePue.objects.get().pue == Decimal("1.35")
    gpu = node_a.gpus.first()
    asset_form = {
        "gpu": str(gpu.pk), "acquired_on": "2025-06-01", "condition": "new", "prior_use_years": "0",
        "expected_own_years": "", "profile_key": "",
    }  # fmt: skip
    assert staff.post(reverse("admin:accounting_gpuasset_add"), asset_form).status_code == 302
    assert GpuAsset.objects.get().gpu == gpu
    assert list(AuditEntry.objects.order_by("id").values_list("subject", "ledger_hours_reopened")) == [
        ("site_pue_period", 24), ("gpu_asset", 48),
    ]  # fmt: skip


def test_a_residual_mix_of_a_locked_year_is_refused_in_the_admin(staff: Client, org_a: Organization) -> None:
    LockedPeriod.objects.create(
        organization=org_a, start=datetime(2025, 1, 1, tzinfo=UTC), end=datetime(2026, 1, 1, tzinfo=UTC),
        locked_at=JAN_3,
    )  # fmt: skip
    form = {"organization": str(org_a.pk), "zone": "DE", "gco2e_per_kwh": "400", "source": "AIB ERM v1.0"}
    url = reverse("admin:scope2_residualmixfactor_add")
    assert any("is locked" in message for message in shown(staff.post(url, form | {"year": "2025"})))
    assert staff.post(url, form | {"year": "2026"}).status_code == 302
    assert list(ResidualMixFactor.objects.values_list("year", flat=True)) == [2026]
    assert list(AuditEntry.objects.values_list("subject", "username")) == [("residual_mix", "ada")]


def test_ledger_settings_in_the_admin_reopen_every_line_and_are_refused_when_lines_are_locked(
    staff: Client, org_a: Organization, node_a: Node, node_b: Node
) -> None:
    form = {"organization": str(org_a.pk), "amortization": "utilization", "idle_util_threshold_pct": "5"}
    added = staff.post(reverse("admin:accounting_ledgersettings_add"), form)
    assert "96 ledger hours re-opened for recomputation" in shown(added)
    entry = AuditEntry.objects.get()
    assert (entry.subject, entry.after["amortization"], entry.ledger_hours_reopened) == (
        "ledger_settings", "utilization", 96,
    )  # fmt: skip
    LockedPeriod.objects.create(organization=org_a, start=JAN_1, end=JAN_2, locked_at=JAN_3)
    settings = LedgerSettings.objects.get()
    refused = staff.post(
        reverse("admin:accounting_ledgersettings_change", args=[settings.pk]), form | {"amortization": "time"}
    )
    assert any("is locked" in message for message in shown(refused))
    settings.refresh_from_db()
    assert (settings.amortization, AuditEntry.objects.count()) == ("utilization", 1)


def site_form(org_a: Organization, **changed: str) -> dict[str, str]:
    form = {"organization": str(org_a.pk), "name": "fra-1", "grid_zone": "", "country": "DE", "pue": "1.20",
            "currency": "EUR", "time_zone": "UTC"}  # fmt: skip
    return form | changed


@pytest.mark.parametrize("changed", [{"grid_zone": "PL"}, {"time_zone": "Europe/Warsaw"}, {"currency": "PLN"}])
def test_a_sites_grid_zone_time_zone_or_currency_changed_in_the_admin_is_audited_and_reopens_its_lines(
    staff: Client, site_a: Site, node_a: Node, org_a: Organization, changed: dict[str, str]
) -> None:
    response = staff.post(reverse("admin:fleets_site_change", args=[site_a.pk]), site_form(org_a, **changed))
    assert "48 ledger hours re-opened for recomputation" in shown(response)
    entry = AuditEntry.objects.get()
    ((name, value),) = changed.items()
    assert (entry.username, entry.subject, entry.after[name], entry.ledger_hours_reopened) == (
        "ada", "site", value, 48,
    )  # fmt: skip
    assert entry.before[name] == getattr(site_a, name)


@pytest.mark.parametrize("changed", [{"grid_zone": "PL"}, {"time_zone": "Europe/Warsaw"}])
def test_a_sites_grid_zone_or_time_zone_change_in_the_admin_is_refused_when_lines_are_locked(
    staff: Client, site_a: Site, node_a: Node, org_a: Organization, january_1_locked: LockedPeriod,
    changed: dict[str, str],
) -> None:  # fmt: skip
    url = reverse("admin:fleets_site_change", args=[site_a.pk])
    refused = staff.post(url, site_form(org_a, name="fra-renamed", **changed))
    assert any("is locked (Jan 1 closed)" in message for message in shown(refused))
    site_a.refresh_from_db()
    assert (site_a.grid_zone, site_a.time_zone, site_a.name) == ("", "UTC", "fra-1")
    assert not AuditEntry.objects.exists()
    assert not LedgerPending.objects.exists()
    renamed = staff.post(url, site_form(org_a, name="fra-renamed"))  # a name is no line's input
    assert renamed.status_code == 302
    assert AuditEntry.objects.get().after["name"] == "fra-renamed"


def test_a_site_currency_not_in_iso_4217_is_refused_in_the_admin(
    staff: Client, site_a: Site, node_a: Node, org_a: Organization
) -> None:
    response = staff.post(reverse("admin:fleets_site_change", args=[site_a.pk]), site_form(org_a, currency="XYZ"))

    assert response.status_code == 200  # the form again, with the error
    assert "not an active ISO 4217 currency code" in response.content.decode()
    site_a.refresh_from_db()
    assert (site_a.currency, AuditEntry.objects.count()) == ("EUR", 0)
