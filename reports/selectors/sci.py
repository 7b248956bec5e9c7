"""The functional unit SCI per request divides by: the requests an organization's serving endpoints answered."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Sum

from telemetry.models import EndpointHourUsage


def requests_answered(*, organization_id: int, start: datetime, end: datetime) -> int:
    """Requests answered over ``[start, end)`` by the serving endpoints of the organization's nodes (one query).

    The endpoints' hourly request counters, the same endpoint-hours whose tokens the ledger lines carry.
    """
    usage = EndpointHourUsage.objects.filter(
        endpoint__node__fleet__organization_id=organization_id, hour_start__gte=start, hour_start__lt=end
    )
    return int(usage.aggregate(requests=Sum("requests"))["requests"] or 0)
