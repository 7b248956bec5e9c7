"""A site's PUE over time and its market factor through the API: the hours each re-opens, locks, the trail.

fra-1 has PUE 1.20 of its own; h100-a and h100-b each have 24 stored lines on
Jan 1 and 24 on Jan 2 (96 in all).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounting.models import LedgerPending, NodeHourLedger, SiteMarketFactor, SitePue
from fleets.models import Node, Role, Site
from governance.models import AuditEntry
from tests.helpers.inputs import JAN_1, JAN_2, ledger_recompute

pytestmark = pytest.mark.django_db

JANUARY_1 = {"start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z", "reason": "Jan 1 closed"}


def pue_by_day(site: Site) -> dict[int, set[Decimal]]:
    by_day: dict[int, set[Decimal]] = {}
    for hour, pue in NodeHourLedger.objects.filter(site=site).values_list("hour_start", "pue"):
        by_day.setdefault(hour.day, set()).add(pue)
    return by_day


def test_a_dated_pue_applies_to_its_hours_only_and_the_sites_own_pue_to_the_rest(
    finance: APIClient, site_a: Site, node_a: Node, node_b: Node
) -> None:
    # given a measured PUE of 1.50 from Jan 2 (still in force)
    created = finance.post("/api/v1/site-pue-periods/", {"site": site_a.pk, "pue": "1.50", "valid_from": JAN_2})
    assert (created.status_code, created.json()["ledger_hours_reopened"]) == (201, 2 * 24)
    ledger_recompute()
    assert pue_by_day(site_a) == {1: {Decimal("1.20")}, 2: {Decimal("1.50")}}
    # when the site's own PUE changes, only the hours no dated row covers (Jan 1) re-open
    own = finance.put(f"/api/v1/sites/{site_a.pk}/pue/", {"pue": "1.30"}, format="json")
    assert own.json()["ledger_hours_reopened"] == 2 * 24
    assert set(LedgerPending.objects.values_list("hour_start__day", flat=True)) == {1}
    ledger_recompute()
    assert pue_by_day(site_a) == {1: {Decimal("1.30")}, 2: {Decimal("1.50")}}
    # and deleting the dated row gives Jan 2 back to the site's PUE
    deleted = finance.delete(f"/api/v1/site-pue-periods/{created.json()['id']}/")
    assert (deleted.status_code, deleted.json()["ledger_hours_reopened"]) == (200, 48)
    ledger_recompute()
    assert pue_by_day(site_a) == {1: {Decimal("1.30")}, 2: {Decimal("1.30")}}


def test_a_pue_period_change_reopens_only_the_hours_that_moved(finance: APIClient, site_a: Site, node_a: Node) -> None:
    body = {"site": site_a.pk, "pue": "1.40", "valid_from": JAN_1, "valid_to": JAN_2}
    row = finance.post("/api/v1/site-pue-periods/", body).json()
    assert row["ledger_hours_reopened"] == 24
    # shortened by six hours, values unchanged: the six hours that left it
    shorter = finance.patch(f"/api/v1/site-pue-periods/{row['id']}/", {"valid_to": "2026-01-01T18:00:00Z"})
    assert (shorter.status_code, shorter.json()["ledger_hours_reopened"]) == (200, 6)
    overlapping = {"site": site_a.pk, "pue": "1.1", "valid_from": "2026-01-01T12:00:00Z"}
    refused = finance.post("/api/v1/site-pue-periods/", overlapping)
    assert refused.status_code == 400
    assert "overlaps" in refused.json()["detail"]
    assert finance.post("/api/v1/site-pue-periods/", body | {"pue": "0.95"}).status_code == 400


def test_a_pue_period_within_a_locked_day_is_refused_and_one_after_it_passes(
    finance: APIClient, admin_a: APIClient, site_a: Site, node_a: Node
) -> None:
    admin_a.post("/api/v1/locked-periods/", JANUARY_1, format="json")
    audited = AuditEntry.objects.count()
    inside = {"site": site_a.pk, "pue": "1.40", "valid_from": "2026-01-01T12:00:00Z", "valid_to": JAN_2}
    refused = finance.post("/api/v1/site-pue-periods/", inside)
    assert refused.status_code == 409
    assert "Jan 1 closed" in refused.json()["detail"]
    assert (SitePue.objects.count(), AuditEntry.objects.count()) == (0, audited)
    after = finance.post("/api/v1/site-pue-periods/", inside | {"valid_from": JAN_2, "valid_to": None}, format="json")
    assert (after.status_code, after.json()["ledger_hours_reopened"]) == (201, 24)
    # the site's own PUE still weighs on the locked day's lines: refused
    assert finance.put(f"/api/v1/sites/{site_a.pk}/pue/", {"pue": "1.3"}, format="json").status_code == 409


def test_pue_periods_are_audited_with_before_and_after(
    finance: APIClient, admin_a: APIClient, site_a: Site, node_a: Node
) -> None:
    row = finance.post("/api/v1/site-pue-periods/", {"site": site_a.pk, "pue": "1.40", "valid_from": JAN_2}).json()
    finance.patch(f"/api/v1/site-pue-periods/{row['id']}/", {"pue": "1.45"})
    finance.delete(f"/api/v1/site-pue-periods/{row['id']}/")
    entries = admin_a.get("/api/v1/audit/").json()
    assert [(e["action"], e["subject"], e["username"], e["ledger_hours_reopened"]) for e in entries] == [
        ("delete", "site_pue_period", "fiona", 24),
        ("update", "site_pue_period", "fiona", 24),
        ("create", "site_pue_period", "fiona", 24),
    ]
    assert (entries[1]["before"]["pue"], entries[1]["after"]["pue"]) == ("1.40", "1.45")
    assert entries[0]["after"] is None


def test_a_market_factor_through_the_api_labels_the_ledgers_market_figure(
    client_as: Callable[..., APIClient], finance: APIClient, site_a: Site, node_a: Node, node_b: Node
) -> None:
    sustainability = client_as(Role.SUSTAINABILITY, username="sam")
    body = {"site": site_a.pk, "gco2e_per_kwh": "320.5", "source": "supplier:Stadtwerke-2026", "valid_from": JAN_2}
    # finance may not: factors are the sustainability role's
    assert finance.post("/api/v1/site-market-factors/", body).status_code == 403
    created = sustainability.post("/api/v1/site-market-factors/", body)
    assert (created.status_code, created.json()["ledger_hours_reopened"]) == (201, 48)
    ledger_recompute()
    sources = dict(NodeHourLedger.objects.filter(node=node_a).values_list("hour_start__day", "market_source"))
    assert sources == {1: "", 2: "supplier:Stadtwerke-2026"}
    changed = sustainability.patch(f"/api/v1/site-market-factors/{created.json()['id']}/", {"gco2e_per_kwh": "0"})
    assert (changed.status_code, changed.json()["gco2e_per_kwh"]) == (200, "0.000")
    assert SiteMarketFactor.objects.get().gco2e_per_kwh == 0
    assert AuditEntry.objects.filter(subject="site_market_factor").count() == 2


def test_a_market_factor_change_in_a_locked_period_is_refused(
    client_as: Callable[..., APIClient], admin_a: APIClient, site_a: Site
) -> None:
    factor = SiteMarketFactor.objects.create(site=site_a, gco2e_per_kwh=300, source="residual-mix:x", valid_from=JAN_1)
    admin_a.post("/api/v1/locked-periods/", JANUARY_1, format="json")
    sustainability = client_as(Role.SUSTAINABILITY)
    assert sustainability.patch(f"/api/v1/site-market-factors/{factor.pk}/", {"gco2e_per_kwh": "1"}).status_code == 409
    assert sustainability.delete(f"/api/v1/site-market-factors/{factor.pk}/").status_code == 409
    assert SiteMarketFactor.objects.get().gco2e_per_kwh == 300
