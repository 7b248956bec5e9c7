"""The functional unit SCI per request divides by: the requests an organization's serving endpoints answered."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Sum

from reports.selectors.allocation import LINE, joined_line
from telemetry.models import EndpointHourUsage


def requests_answered(*, organization_id: int, start: datetime, end: datetime) -> int:
    """Requests answered over ``[start, end)`` by the serving endpoints of the organization's nodes (one query).

    The endpoints' hourly request counters of the node-hours that have a ledger line: the lines whose energy,
    embodied carbon and tokens SCI's other terms sum, so that R counts no hour (one still open, one whose line
    is not computed yet) that E and M leave out.
    """
    usage = EndpointHourUsage.objects.filter(
        node__fleet__organization_id=organization_id, hour_start__gte=start, hour_start__lt=end
    )
    # The line's hour is the endpoint-hour's, so within the period: said on the lines' side too, PostgreSQL reads
    # only their (node, hour) key (an index-only scan of ``ledger_unique_node_hour``), not every line's row.
    counted = joined_line(usage).filter(**{f"{LINE}hour_start__gte": start, f"{LINE}hour_start__lt": end})
    return int(counted.aggregate(requests=Sum("requests"))["requests"] or 0)
