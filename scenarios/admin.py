"""Scenarios in the admin: read-only, scoped by organization (they are made and run on /scenarios/ or the API)."""

from __future__ import annotations

from fleets.admin import ReadOnlyScopedAdmin, scoped_register
from scenarios.models import Scenario


@scoped_register(Scenario)
class ScenarioAdmin(ReadOnlyScopedAdmin):
    list_display = ["name", "organization", "period_start", "period_end", "status", "progress_pct", "created_at"]
    list_filter = ["status"]
