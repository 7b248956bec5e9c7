"""The sustainability dashboard shows Scope 2 both ways, the instruments' criteria and the CFE score."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def test_sustainability_page_shows_dual_reporting_and_the_cfe_score(
    client: Client, sustainability_a: Any, org_a: Any, year_consumed: Any, residual_de: None, ppa: dict[str, Any]
) -> None:
    client.force_login(MembershipFactory(organization=org_a, role="viewer").user)
    html = client.get("/sustainability/", {"start": "2025-01-01", "end": "2025-12-31"}).content.decode()
    row = re.search(r'<table id="scope2-dual">.*?</table>', html, re.S)
    assert row is not None
    cells = [re.sub(r"<.*?>", "", cell).strip() for cell in re.findall(r"<td.*?>(.*?)</td>", row.group(0), re.S)]
    assert cells[:4] == ["fra-1 DE", "87,600", "26,280.0", "15,768.0"]
    assert cells[4:8] == ["7,008.0", "55.0 %", "45.0 % test figure", "0.0 %"]
    assert cells[8:] == ["83.8 %", "92.8 %"]
    assert "market_boundary: met" in html
    assert "/api/v1/reports/scope2/ghg-table/?start=2025-01-01T00:00:00Z&amp;end=2026-01-01T00:00:00Z" in html
