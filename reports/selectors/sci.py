"""The functional unit SCI per request divides by: the requests an organization's serving endpoints answered."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Sum

from reports.selectors.lines import ledger_rows, site_hours_serve


def requests_answered(*, organization_id: int, start: datetime, end: datetime) -> int:
    """Requests answered over ``[start, end)`` by the serving endpoints of the organization's nodes (one query).

    The node-hours' ledger lines hold them (``NodeHourLedger.requests``: their endpoints' hourly request
    counters, summed when the line is computed, and again whenever that usage changes), so R counts the hours
    whose energy, embodied carbon and tokens SCI's other terms sum, and no other (one still open, one whose line
    is not computed yet). Read from the lines' site-hours where they are kept (``accounting.site_hours``).
    """
    site_hours = site_hours_serve(organization_ids=[organization_id], start=start, end=end)
    rows = ledger_rows(organization_ids=[organization_id], start=start, end=end, site_hours=site_hours)
    return int(rows.aggregate(requests=Sum("requests"))["requests"] or 0)
