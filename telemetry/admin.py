"""Read-only admin views of collector health and serving endpoints, scoped like the inventory."""

from __future__ import annotations

from fleets.admin import FixedOrganizationAdmin, ReadOnlyScopedAdmin, scoped_register
from governance.admin_audit import AuditedAdmin
from telemetry.models import CollectorStatus, PrometheusSource, ServingEndpoint


@scoped_register(CollectorStatus, "node__fleet__organization")
class CollectorStatusAdmin(ReadOnlyScopedAdmin):
    list_display = ["node", "last_report_at", "newest_sample_at", "lag_s", "dropped_batches", "collector_version"]


@scoped_register(ServingEndpoint, "node__fleet__organization")
class ServingEndpointAdmin(ReadOnlyScopedAdmin):
    list_display = ["node", "kind", "url", "model_name", "first_seen_at"]


@scoped_register(PrometheusSource)
class PrometheusSourceAdmin(AuditedAdmin, FixedOrganizationAdmin):
    """A Prometheus to import from (every minute while enabled, and ``manage.py prometheus_import``); its token
    and password are secrets, so the audit trail records every other field of a save, never them. Its URL
    follows the rule for addresses users name (``common.outbound``): the form refuses an internal one that
    ``OUTBOUND_ALLOWED_HOSTS`` does not name."""

    list_display = ["name", "organization", "url", "enabled", "imported_until", "failures", "next_attempt_at"]
    # Progress and health: written by the import (telemetry.prometheus_sync), shown, never edited here. The
    # last error's detail (what Prometheus answered) is shown here alone, to the organization's admins.
    readonly_fields = [
        "imported_until", "last_attempt_at", "last_success_at", "failures", "next_attempt_at", "last_error",
        "last_error_detail", "last_summary",
    ]  # fmt: skip
    audit_subject = "prometheus_source"
    audit_fields = (
        "organization", "name", "url", "basic_username", "host_label", "selector", "serving_selector",
        "scrape_interval_s", "enabled",
    )  # fmt: skip
