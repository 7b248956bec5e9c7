"""Report exports carry the audit trail of the inputs that bear on the reported period.

Reported period: January 2026. Fiona (finance) rents h100-a from Jan 2 (bears on January) and h100-b from
March 1 (does not); Erin (engineer) issues h100-a a new token (changes no figure).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from fleets.models import Node, Role
from governance.period_relevance import bears_on
from tests.helpers.inputs import rent_body

JANUARY = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC))
PERIOD = "start=2026-01-01T00:00:00Z&end=2026-02-01T00:00:00Z"


@pytest.mark.parametrize(
    ("subject", "row", "expected"),
    [
        ("node_price", {"valid_from": "2026-01-31T23:00:00Z", "valid_to": None}, True),
        ("node_price", {"valid_from": "2025-06-01T00:00:00Z", "valid_to": "2026-01-01T00:00:00Z"}, False),
        ("instrument", {"delivery_start": "2025-01-01T00:00:00Z", "delivery_end": "2026-01-01T00:00:00Z"}, False),
        ("residual_mix", {"zone": "DE", "year": 2026}, True),
        ("residual_mix", {"zone": "DE", "year": 2025}, False),
        (
            "grid_intensity_upload",
            {"first_hour": "2025-12-31T23:00:00+00:00", "last_hour": "2025-12-31T23:00:00+00:00"},
            False,
        ),
        (
            "grid_intensity_upload",
            {"first_hour": "2026-01-31T23:00:00+00:00", "last_hour": "2026-01-31T23:00:00+00:00"},
            True,
        ),
        ("site_pue", {"pue": "1.40"}, True),  # no period: it weighs on every hour
        ("node_token", {"prefix": "wln_abc"}, False),  # changes no figure
    ],
)
def test_which_changes_bear_on_january(subject: str, row: dict[str, Any], expected: bool) -> None:
    assert bears_on(subject=subject, before=None, after=row, period=JANUARY) is expected


def test_a_change_that_moves_a_period_out_of_january_still_bears_on_it() -> None:
    before = {"valid_from": "2026-01-15T00:00:00Z", "valid_to": None}
    after = {"valid_from": "2026-03-01T00:00:00Z", "valid_to": None}
    assert bears_on(subject="node_price", before=before, after=after, period=JANUARY)


@pytest.fixture
def changes(finance: APIClient, client_as: Callable[..., APIClient], node_a: Node, node_b: Node) -> int:
    price = finance.post("/api/v1/node-prices/", rent_body(node_a), format="json")
    assert price.status_code == 201, price.content
    later = finance.post("/api/v1/node-prices/", rent_body(node_b, valid_from="2026-03-01T00:00:00Z"), format="json")
    assert later.status_code == 201, later.content
    engineer = client_as(Role.ENGINEER, username="erin")
    assert engineer.post("/api/v1/node-tokens/", {"node": node_a.pk}, format="json").status_code == 201
    return int(price.json()["id"])


def digest(entries: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(entries, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@pytest.mark.django_db
def test_the_sustainability_report_lists_who_changed_which_input_bearing_on_its_period(
    admin_a: APIClient, changes: int
) -> None:
    audit = admin_a.get(f"/api/v1/reports/sustainability/?{PERIOD}").json()["audit"]

    assert audit["entries_count"] == 1
    [entry] = audit["entries"]
    assert (entry["username"], entry["action"], entry["subject"], entry["object_id"]) == (
        "fiona", "create", "node_price", changes,
    )  # fmt: skip
    assert (entry["before"], entry["after"]["rate_per_h"], entry["ledger_hours_reopened"]) == (None, "2.500000", 24)
    assert audit["sha256"] == digest(audit["entries"])
    # the link answers the same entries
    assert admin_a.get(audit["href"]).json() == audit["entries"]


@pytest.mark.django_db
def test_a_viewer_gets_the_count_and_digest_but_not_the_changes(
    admin_a: APIClient, client_as: Callable[..., APIClient], changes: int
) -> None:
    by_admin = admin_a.get(f"/api/v1/reports/sustainability/?{PERIOD}").json()["audit"]
    by_viewer = client_as(Role.VIEWER).get(f"/api/v1/reports/sustainability/?{PERIOD}").json()["audit"]
    assert (by_viewer["entries_count"], by_viewer["sha256"], by_viewer["entries"]) == (1, by_admin["sha256"], None)


@pytest.mark.django_db
def test_the_csv_export_ends_with_the_audit_lines(admin_a: APIClient, changes: int) -> None:
    response = admin_a.get(f"/api/v1/reports/sustainability/?{PERIOD}&format=csv")
    lines = {
        row["metric"]: row["value"]
        for row in csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    }
    assert lines["audit:entries_count"] == "1"
    assert (lines[f"audit:{_entry_id(admin_a)}:username"], lines[f"audit:{_entry_id(admin_a)}:subject"]) == (
        "fiona", "node_price",
    )  # fmt: skip
    assert json.loads(lines[f"audit:{_entry_id(admin_a)}:after"])["rate_per_h"] == "2.500000"


def _entry_id(client: APIClient) -> int:
    answer = client.get("/api/v1/audit/", {"period_start": JANUARY[0], "period_end": JANUARY[1]})
    return int(answer.json()[0]["id"])


@pytest.mark.django_db
def test_scope2_ghg_and_esrs_exports_carry_the_same_audit_section(admin_a: APIClient, changes: int) -> None:
    expected = admin_a.get(f"/api/v1/reports/sustainability/?{PERIOD}").json()["audit"]
    for path in ("scope2/", "scope2/ghg-table/", "scope2/esrs/"):
        assert admin_a.get(f"/api/v1/reports/{path}?{PERIOD}").json()["audit"] == expected, path
    scope2_csv = b"".join(admin_a.get(f"/api/v1/reports/scope2/?{PERIOD}&format=csv").streaming_content).decode()
    audit_lines = [row for row in csv.DictReader(io.StringIO(scope2_csv)) if row["level"] == "audit"]
    assert audit_lines[0] == {"level": "audit", "site": "", "instrument": "", "metric": "audit:entries_count",
                              "value": "1"}  # fmt: skip


@pytest.mark.django_db
def test_the_audit_endpoint_wants_both_ends_of_the_period(admin_a: APIClient, changes: int) -> None:
    assert admin_a.get("/api/v1/audit/?period_start=2026-01-01T00:00:00Z").status_code == 400


@pytest.mark.django_db
def test_openapi_documents_the_audit_section_and_the_period_filter(client_as: Callable[..., APIClient]) -> None:
    schema = client_as(Role.VIEWER).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    section = schema["components"]["schemas"]["SustainabilityReport"]["properties"]["audit"]
    assert "allOf" in section or "$ref" in section
    audit_schema = schema["components"]["schemas"]["ReportAudit"]["properties"]
    assert {"entries_count", "sha256", "href", "entries"} <= set(audit_schema)
    parameters = {p["name"] for p in schema["paths"]["/api/v1/audit/"]["get"]["parameters"]}
    assert {"period_start", "period_end"} <= parameters
    for path in ("/api/v1/reports/scope2/", "/api/v1/reports/scope2/ghg-table/", "/api/v1/reports/scope2/esrs/"):
        assert "`audit` section" in schema["paths"][path]["get"]["description"], path


@pytest.mark.django_db
def test_an_audit_cell_a_spreadsheet_would_run_is_escaped(
    admin_a: APIClient, client_as: Callable[..., APIClient], node_a: Node
) -> None:
    finance = client_as(Role.FINANCE, username="=HYPERLINK(1)")
    assert finance.post("/api/v1/node-prices/", rent_body(node_a), format="json").status_code == 201
    response = admin_a.get(f"/api/v1/reports/sustainability/?{PERIOD}&format=csv")
    lines = {
        row["metric"]: row["value"]
        for row in csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    }
    assert lines[f"audit:{_entry_id(admin_a)}:username"] == "'=HYPERLINK(1)"
