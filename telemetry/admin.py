"""Read-only admin views of collector health and serving endpoints, scoped like the inventory."""

from __future__ import annotations

from fleets.admin import ReadOnlyScopedAdmin, scoped_register
from telemetry.models import CollectorStatus, ServingEndpoint


@scoped_register(CollectorStatus, "node__fleet__organization")
class CollectorStatusAdmin(ReadOnlyScopedAdmin):
    list_display = ["node", "last_report_at", "newest_sample_at", "lag_s", "dropped_batches", "collector_version"]


@scoped_register(ServingEndpoint, "node__fleet__organization")
class ServingEndpointAdmin(ReadOnlyScopedAdmin):
    list_display = ["node", "kind", "url", "model_name", "first_seen_at"]
