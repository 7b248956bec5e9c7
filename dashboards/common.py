"""Pieces the finance, sustainability and comparison pages share."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.http import HttpRequest
from django.utils import timezone

from common.charts import Buckets
from common.pages import page_context
from common.periods import Period
from dashboards.forms import ColumnsForm, CurrencyForm, page_options
from fleets.models import Organization
from reports.selectors import NO_FILTERS, ReportFilters
from reports.selectors.complete import complete_through


def dashboard_context(request: HttpRequest, *, now: datetime) -> dict[str, Any]:
    """``page_context`` with the organization's ``complete_through``: presets end at its last complete hour."""
    return page_context(request, now=now, through=organization_complete_through)


def organization_complete_through(organization: Organization | None, now: datetime) -> datetime:
    """The end of the organization's last complete hour at ``now`` (``reports.selectors.complete``)."""
    return complete_through(organization_ids=organization_ids(organization), now=now)


def organization_ids(organization: Organization | None) -> list[int]:
    return [organization.pk] if organization else []


def currency_choice(
    request: HttpRequest, in_period: Iterable[str | None]
) -> tuple[str | None, list[str], ReportFilters]:
    """The currency shown (money of two currencies is never added) and the others of the period's lines."""
    currencies = sorted(currency for currency in set(in_period) if currency is not None)
    if not currencies:
        return None, [], NO_FILTERS
    asked = page_options(CurrencyForm, request)["currency"]
    chosen = asked if asked in currencies else currencies[0]
    return chosen, currencies, ReportFilters(currencies=frozenset({chosen}))


def api_query(period: Period, organization: Organization | None, **extra: Any) -> str:
    """The query string of the REST export matching what a page shows."""
    parts = [f"start={period.start:%Y-%m-%dT%H:%M:%SZ}", f"end={period.end:%Y-%m-%dT%H:%M:%SZ}"]
    if organization is not None:
        parts.append(f"organization={organization.slug}")
    parts += [f"{key}={value}" for key, value in extra.items() if value is not None]
    return "&".join(parts)


def period_buckets(period: Period, *, now: datetime | None = None) -> Buckets:
    """The period's buckets for the charts; the bucket still in progress counts as partial."""
    return Buckets(period.granularity, period.start, period.end, now=now or timezone.now())


def column_set(request: HttpRequest) -> dict[str, Any]:
    """Whether the page's tables show every column (``columns=all``) or their decisive few, and the query
    string of the same page with the other choice (the "more columns" / "fewer columns" link)."""
    every = page_options(ColumnsForm, request)["columns"] == "all"
    query = request.GET.copy()
    if every:
        query.pop("columns", None)
    else:
        query["columns"] = "all"
    return {"all_columns": every, "columns_query": query.urlencode()}
