"""The sustainability dashboard shows Scope 2 both ways, the instruments' criteria and the CFE score."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import F
from django.test import Client

from accounting.models import NodeHourLedger
from accounting.site_hours import site_hours_rebuild
from tests.helpers.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def test_sustainability_page_shows_dual_reporting_and_the_cfe_score(
    client: Client, sustainability_a: Any, org_a: Any, year_consumed: Any, residual_de: None, ppa: dict[str, Any]
) -> None:
    client.force_login(MembershipFactory(organization=org_a, role="viewer").user)
    html = client.get("/sustainability/", {"start": "2025-01-01", "end": "2025-12-31"}).content.decode()
    row = re.search(r'<table id="scope2-dual">.*?</table>', html, re.S)
    assert row is not None
    cells = [re.sub(r"<.*?>", "", cell).strip() for cell in re.findall(r"<td.*?>(.*?)</td>", row.group(0), re.S)]
    # disclosed: annual matching (the default, as the 2015 Guidance); hourly beside it
    assert cells[:4] == ["fra-1 DE", "87,600", "26,280.0", "7,008.0"]
    assert cells[4:9] == ["7,008.0", "15,768.0", "80.0 %", "20.0 % test figure (2025)", "0.0 %"]
    assert cells[9:] == ["83.8 %", "92.8 %"]
    assert "market_boundary: met" in html
    assert "/api/v1/reports/scope2/ghg-table/?start=2025-01-01T00:00:00Z&amp;end=2026-01-01T00:00:00Z" in html


def _note(html: str, note_id: str) -> str:
    found = re.search(rf'<p class="note[^"]*" id="{note_id}">(.*?)</p>', html, re.S)
    assert found is not None, note_id
    return re.sub(r"\s+", " ", re.sub(r"<.*?>", "", found.group(1)))


def test_the_page_labels_each_market_based_figure_and_the_residual_mix_fallback(
    client: Client, org_a: Any, year_consumed: Any, ppa: dict[str, Any], tmp_path: Path
) -> None:
    client.force_login(MembershipFactory(organization=org_a, role="viewer").user)
    year = {"start": "2025-01-01", "end": "2025-12-31"}
    html = client.get("/sustainability/", year).content.decode()
    # no residual mix held: the 39,420 kWh no instrument covers take the location factor, 300 g, labelled
    fallback = _note(html, "residual-mix-fallback")
    assert fallback.startswith("No residual mix is held for fra-1 (DE 2025)")
    assert "labelled location_fallback (17,520 kWh)" in fallback
    assert "POST /api/v1/residual-mixes/upload/ or manage.py load_residual_mixes" in fallback
    assert "Market-based (site factors, internal)" in html
    note = _note(html, "market-reconciliation")
    assert "GHG Protocol Scope 2 Guidance asks: 5,256.0 kgCO2e" in note and "(none entered)" in note
    assert "differ" not in note
    # when the organization loads the residual mix it holds (400 g, a test figure), the fallback note goes
    figures = tmp_path / "residual.csv"
    figures.write_text("zone,year,gco2e_per_kwh,source\nde,2025,400,test figure\n")
    call_command("load_residual_mixes", "--organization", "org-a", str(figures), stdout=io.StringIO())
    html = client.get("/sustainability/", year).content.decode()
    assert 'id="residual-mix-fallback"' not in html
    assert "GHG Protocol Scope 2 Guidance asks: 7,008.0 kgCO2e" in _note(html, "market-reconciliation")
    # and site factors of 100 g/kWh on the ledger lines (87,600 kWh: 8,760 kg) are told apart from it
    NodeHourLedger.objects.update(market_co2e_g=F("facility_kwh") * 100, market_source="supplier:test")
    site_hours_rebuild()  # lines written by hand: their site-hours summed again
    note = _note(client.get("/sustainability/", year).content.decode(), "market-reconciliation")
    assert "(8,760.0 kgCO2e)" in note
    assert "The two differ by 1,752.0 kgCO2e because the site factors do not reflect the instruments" in note
