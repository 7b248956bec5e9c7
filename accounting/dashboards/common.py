"""Pieces the finance, sustainability and comparison pages share."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from accounting.reports.selectors import NO_FILTERS, ReportFilters, ledger_lines
from fleets.models import Organization
from fleets.web import Period


def organization_ids(organization: Organization | None) -> list[int]:
    return [organization.pk] if organization else []


def currency_choice(
    request: HttpRequest, organization: Organization | None, period: Period
) -> tuple[str | None, list[str], ReportFilters]:
    """The currency shown (money of two currencies is never added) and the others available."""
    lines = ledger_lines(organization_ids=organization_ids(organization), start=period.start, end=period.end)
    currencies = sorted(lines.order_by().values_list("currency", flat=True).distinct())
    if not currencies:
        return None, [], NO_FILTERS
    asked = request.GET.get("currency")
    chosen = asked if asked in currencies else currencies[0]
    return chosen, currencies, ReportFilters(currencies=frozenset({chosen}))


def api_query(period: Period, organization: Organization | None, **extra: Any) -> str:
    """The query string of the REST export matching what a page shows."""
    parts = [f"start={period.start:%Y-%m-%dT%H:%M:%SZ}", f"end={period.end:%Y-%m-%dT%H:%M:%SZ}"]
    if organization is not None:
        parts.append(f"organization={organization.slug}")
    parts += [f"{key}={value}" for key, value in extra.items() if value is not None]
    return "&".join(parts)
