"""Residual mixes an organization holds, loaded from CSV (API and command): row by row, audited, lock-checked.

The figures are test inputs, not published residual mixes (none ships: see scope2/data).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from fleets.models import Organization, Role
from governance.models import AuditEntry, LockedPeriod
from scope2.models import ResidualMixFactor
from scope2.selectors import residual_mix_for
from tests.helpers.inputs import ROLES
from tests.helpers.uploads import upload_answer

pytestmark = pytest.mark.django_db

GOOD = "zone,year,gco2e_per_kwh,source\nde,2025,400,test figure A\nSE-SE3,2025,35.5,test figure B\n"
URL = "/api/v1/residual-mixes/upload/"


def upload(client: APIClient, text: str, **extra: str) -> Any:
    return upload_answer(client, URL, {"file": SimpleUploadedFile("mixes.csv", text.encode()), **extra})


@pytest.mark.parametrize("role", ROLES)
def test_admin_and_sustainability_load_residual_mixes_and_the_report_takes_them(
    client_as: Callable[..., APIClient], org_a: Organization, role: str
) -> None:
    response = upload(client_as(role), GOOD)
    if role in {Role.ADMIN, Role.SUSTAINABILITY}:
        assert (response.status_code, response.json()) == (201, {"saved": 2, "ledger_hours_reopened": 0})
        mix = residual_mix_for(organization_id=org_a.pk, zone="DE", year=2025)
        assert (str(mix.gco2e_per_kwh), mix.source) == ("400.000", "test figure A")
        assert AuditEntry.objects.filter(subject="residual_mix").count() == 2
    else:
        assert response.status_code == 403
        assert not ResidualMixFactor.objects.exists() and not AuditEntry.objects.exists()


def test_another_organizations_user_gets_404_and_reads_none(
    client_as: Callable[..., APIClient], org_a: Organization, org_b: Organization
) -> None:
    ResidualMixFactor.objects.create(organization=org_a, zone="DE", year=2025, gco2e_per_kwh=400, source="a")
    outsider = client_as(Role.ADMIN, org_b)
    assert upload(outsider, GOOD, organization="org-a").status_code == 404
    assert outsider.get("/api/v1/residual-mixes/").json() == []
    assert ResidualMixFactor.objects.count() == 1


def test_a_held_zone_and_year_is_replaced_and_bad_rows_refuse_the_whole_file(
    client_as: Callable[..., APIClient], org_a: Organization
) -> None:
    client = client_as(Role.SUSTAINABILITY)
    upload(client, GOOD)
    assert upload(client, "zone,year,gco2e_per_kwh,source\nDE,2025,410,test figure A v2\n").status_code == 201
    assert list(ResidualMixFactor.objects.filter(zone="DE").values_list("gco2e_per_kwh", "source")) == [
        (410, "test figure A v2")
    ]
    bad = "zone,year,gco2e_per_kwh,source\nFR,2025,-3,x\n5X,2025,50,y\nNL,2025,300,z\n"
    refused = upload(client, bad)
    assert refused.status_code == 400
    assert [row["line"] for row in refused.json()["refused"]] == [2, 3]
    assert not ResidualMixFactor.objects.filter(zone="NL").exists()
    listed = client.get("/api/v1/residual-mixes/").json()
    assert [(row["zone"], row["year"], row["gco2e_per_kwh"]) for row in listed] == [
        ("DE", 2025, "410.000"), ("SE-SE3", 2025, "35.500"),
    ]  # fmt: skip


def test_a_year_overlapping_a_locked_period_is_refused(
    client_as: Callable[..., APIClient], org_a: Organization
) -> None:
    LockedPeriod.objects.create(
        organization=org_a, start=datetime(2025, 12, 1, tzinfo=UTC), end=datetime(2026, 1, 1, tzinfo=UTC),
        reason="FY2025 filed", locked_at=datetime(2026, 1, 5, tzinfo=UTC),
    )  # fmt: skip
    response = upload(client_as(Role.SUSTAINABILITY), GOOD)
    assert response.status_code == 400
    assert "is locked (FY2025 filed)" in response.json()["refused"][0]["reason"]
    assert not ResidualMixFactor.objects.exists()


def test_the_command_loads_a_file_and_lists_refused_lines(org_a: Organization, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text(GOOD)
    bad.write_text("zone,year,gco2e_per_kwh,source\nDE,1800,400,x\n")
    out = io.StringIO()
    call_command("load_residual_mixes", "--organization", "org-a", str(good), stdout=out)
    assert out.getvalue().strip() == "saved 2 residual-mix factor(s) for org-a"
    with pytest.raises(CommandError, match="line 2: year: Ensure this value is greater than or equal to 1990"):
        call_command("load_residual_mixes", "--organization", "org-a", str(bad))
    assert AuditEntry.objects.filter(subject="residual_mix", username="").count() == 2
