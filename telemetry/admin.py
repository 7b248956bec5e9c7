"""Read-only admin views of collector health and serving endpoints, scoped like the inventory."""

from __future__ import annotations

from django.contrib import admin

from fleets.admin import ReadOnlyScopedAdmin, organization_path_register
from telemetry.models import CollectorStatus, ServingEndpoint

organization_path_register(CollectorStatus, "node__fleet__organization")
organization_path_register(ServingEndpoint, "node__fleet__organization")


@admin.register(CollectorStatus)
class CollectorStatusAdmin(ReadOnlyScopedAdmin):
    list_display = ["node", "last_report_at", "newest_sample_at", "lag_s", "dropped_batches", "collector_version"]


@admin.register(ServingEndpoint)
class ServingEndpointAdmin(ReadOnlyScopedAdmin):
    list_display = ["node", "kind", "url", "model_name", "first_seen_at"]
